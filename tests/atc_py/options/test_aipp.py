"""Static AIPP (--insert_op_conf): each input format against a per-pixel numpy reference written
here independently of the kernel, through atc-py and om-run; bad configurations get ATC's codes."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import atc_py
from atc_py.common.errors import AtcError
from om_run.load.loader import load_model
from om_run.sim.host import Simulation

RNG = np.random.default_rng(23)
YUV2RGB = [[298, 0, 409], [298, -100, -208], [298, 516, 0]]      # BT.601 video range (R, G, B from Y, U, V)
RGB2YUV = [[66, 129, 25], [-38, -74, 112], [112, -94, -18]]


def model(c: int, h: int, w: int, batch=1):
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    g = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [batch, c, h, w])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)], [two])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def config(tmp_path, **fields) -> str:
    lines = ["aipp_op {", "  aipp_mode: static", "  related_input_rank: 0"]
    for k, v in fields.items():
        if isinstance(v, (list, tuple)):
            lines += [f"  {k}: {x}" for x in v]
        else:
            lines.append(f"  {k}: {str(v).lower() if isinstance(v, bool) else v}")
    p = tmp_path / "aipp.cfg"
    p.write_text("\n".join(lines + ["}"]) + "\n")
    return str(p)


def run(tmp_path, m, cfg: str, image: np.ndarray) -> np.ndarray:
    res = atc_py.build(m, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype",
                           "insert_op_conf": cfg})
    p = tmp_path / "m.om"
    p.write_bytes(res.om)
    model_ = load_model(str(p))
    assert model_.inputs[0].desc.dtype == "uint8" and model_.inputs[0].desc.shape == image.shape
    return Simulation(model_).run([image])[0][0] / 2.0


def reference(pixels: list[list[list[int]]], *, crop=None, csc=None, in_bias=(0, 0, 0), out_bias=(0, 0, 0),
              mean=(0, 0, 0, 0), mn=(0.0,) * 4, var=(1.0,) * 4, pad=(0, 0, 0, 0), pad_value=0.0, to_rgb=True):
    """Per pixel, in AIPP's order: crop, csc (>> 8, clamp), DTC, padding. pixels[h][w] = channel values."""
    rows = pixels if crop is None else [r[crop[1]:crop[1] + crop[3]] for r in pixels[crop[0]:crop[0] + crop[2]]]
    out = []
    for r in rows:
        line = []
        for px in r:
            if csc is not None:
                if to_rgb:
                    px = [min(max(sum(csc[i][k] * (px[k] - in_bias[k]) for k in range(3)) >> 8, 0), 255)
                          for i in range(3)]
                else:
                    px = [min(max((sum(csc[i][k] * px[k] for k in range(3)) >> 8) + out_bias[i], 0), 255)
                          for i in range(3)]
            line.append([(px[k] - mean[k] - mn[k]) * var[k] for k in range(len(px))])
        out.append(line)
    c = len(out[0][0])
    top, bottom, left, right = pad
    w = len(out[0]) + left + right
    out = [[[pad_value] * c] * w] * top + [[[pad_value] * c] * left + r + [[pad_value] * c] * right
                                           for r in out] + [[[pad_value] * c] * w] * bottom
    return np.asarray(out, np.float32).transpose(2, 0, 1)[None]


def test_rgb888_with_crop_swap_and_normalisation(tmp_path):
    img = RNG.integers(0, 256, (1, 10, 12, 3), dtype=np.uint8)
    cfg = config(tmp_path, input_format="RGB888_U8", src_image_size_w=12, src_image_size_h=10, crop=True,
                 load_start_pos_w=3, load_start_pos_h=1, crop_size_w=8, crop_size_h=8, rbuv_swap_switch=True,
                 mean_chn_0=123, mean_chn_1=117, mean_chn_2=104, min_chn_0=0.5, var_reci_chn_0=0.0171,
                 var_reci_chn_1=0.0175, var_reci_chn_2=0.0174)
    got = run(tmp_path, model(3, 8, 8), cfg, img)
    bgr = img[0][..., ::-1].tolist()
    want = reference(bgr, crop=(1, 3, 8, 8), mean=(123, 117, 104, 0), mn=(0.5, 0, 0, 0), var=(0.0171, 0.0175, 0.0174, 1))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_tensorflow_nhwc_input_gets_the_image_in_nhwc(tmp_path):
    """A TensorFlow image input is NHWC: Aipp computes NCHW, a transpose hands the model NHWC (the README lines
    of MobileNetV3, ResNet-50 and FaceNet for TensorFlow convert this way)."""
    from atc_py.proto import tf_graph_pb2 as tf
    dims = tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=d) for d in (1, 6, 8, 3)])
    two = tf.TensorProto(dtype=tf.DT_FLOAT, float_val=[2.0])
    g = tf.GraphDef(node=[
        tf.NodeDef(name="x", op="Placeholder", attr={"dtype": tf.AttrValue(type=tf.DT_FLOAT),
                                                       "shape": tf.AttrValue(shape=dims)}),
        tf.NodeDef(name="two", op="Const", attr={"value": tf.AttrValue(tensor=two),
                                                  "dtype": tf.AttrValue(type=tf.DT_FLOAT)}),
        tf.NodeDef(name="y", op="Mul", input=["x", "two"])])
    img = RNG.integers(0, 256, (1, 6, 8, 3), dtype=np.uint8)
    cfg = config(tmp_path, input_format="RGB888_U8", mean_chn_0=10, mean_chn_1=20, mean_chn_2=30, var_reci_chn_0=0.5)
    res = atc_py.build(g, {"ge.socVersion": "Ascend910B1", "ge.frameworkType": "3", "insert_op_conf": cfg,
                           "ge.exec.precision_mode": "must_keep_origin_dtype"})
    (tmp_path / "m.om").write_bytes(res.om)
    got = Simulation(load_model(str(tmp_path / "m.om"))).run([img])[0][0] / 2.0
    want = reference(img[0].tolist(), mean=(10, 20, 30, 0), var=(0.5, 1, 1, 1)).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_yuv420sp_nv12_to_rgb_with_padding(tmp_path):
    h, w = 6, 8
    y = RNG.integers(16, 236, (h, w), dtype=np.uint8)
    uv = RNG.integers(16, 241, (h // 2, w // 2, 2), dtype=np.uint8)
    img = np.concatenate([y, uv.reshape(h // 2, w)], axis=0)[None, :, :, None]
    flat = {f"matrix_r{r}c{c}": YUV2RGB[r][c] for r in range(3) for c in range(3)}
    cfg = config(tmp_path, input_format="YUV420SP_U8", src_image_size_w=w, src_image_size_h=h, csc_switch=True,
                 input_bias_0=16, input_bias_1=128, input_bias_2=128, padding=True, top_padding_size=1,
                 bottom_padding_size=1, left_padding_size=2, right_padding_size=0, cpadding_value=0.0, **flat)
    got = run(tmp_path, model(3, h + 2, w + 2), cfg, img)
    yuv = [[[int(y[r][c]), int(uv[r // 2][c // 2][0]), int(uv[r // 2][c // 2][1])] for c in range(w)] for r in range(h)]
    want = reference(yuv, csc=YUV2RGB, in_bias=(16, 128, 128), pad=(1, 1, 2, 0))
    np.testing.assert_array_equal(got, want)


def test_xrgb8888_to_yuv_and_ax_swap(tmp_path):
    img = RNG.integers(0, 256, (2, 4, 4, 4), dtype=np.uint8)
    flat = {f"matrix_r{r}c{c}": RGB2YUV[r][c] for r in range(3) for c in range(3)}
    cfg = config(tmp_path, input_format="XRGB8888_U8", src_image_size_w=4, src_image_size_h=4, csc_switch=True,
                 output_bias_0=16, output_bias_1=128, output_bias_2=128, **flat)
    got = run(tmp_path, model(3, 4, 4, batch=2), cfg, img)
    for n in range(2):
        want = reference(img[n][..., 1:4].tolist(), csc=RGB2YUV, out_bias=(16, 128, 128), to_rgb=False)
        np.testing.assert_array_equal(got[n:n + 1], want)
    cfg = config(tmp_path, input_format="XRGB8888_U8", src_image_size_w=4, src_image_size_h=4, ax_swap_switch=True)
    got = run(tmp_path, model(3, 4, 4, batch=2), cfg, img)
    np.testing.assert_array_equal(got[1:2], reference(img[1][..., 0:3].tolist()))


def test_yuv400_gray(tmp_path):
    img = RNG.integers(0, 256, (1, 5, 5, 1), dtype=np.uint8)
    cfg = config(tmp_path, input_format="YUV400_U8", src_image_size_w=5, src_image_size_h=5, mean_chn_0=128,
                 var_reci_chn_0=0.0078125)
    got = run(tmp_path, model(1, 5, 5), cfg, img)
    np.testing.assert_allclose(got, reference(img[0].tolist(), mean=(128, 0, 0, 0), var=(0.0078125, 1, 1, 1)))


@pytest.mark.parametrize("fields,code,words", [
    ({"input_format": "RGB888_U8", "src_image_size_w": 8, "src_image_size_h": 8, "crop": True, "load_start_pos_w": 4,
      "crop_size_w": 8, "crop_size_h": 8}, "E10052", "does not fit"),
    ({"input_format": "YUV420SP_U8", "src_image_size_w": 7, "src_image_size_h": 8}, "E10052", "even"),
    ({"input_format": "YUV400_U8", "csc_switch": True}, "E10052", "channel"),
    ({"input_format": "RGB888_U8", "padding": True, "top_padding_size": 40}, "E10052", "top_padding_size"),
    ({"input_format": "RGB888_U8", "csc_switch": True, "matrix_r0c0": [1, 2]}, "E10052", "one"),
    ({"input_format": "ARGB8888_U8"}, "E10052", "not supported"),
    ({"input_format": "RGB888_U8", "src_image_size_w": 9, "src_image_size_h": 8}, "E10052", "model input is 8x8"),
    ({"input_format": "RGB888_U8", "related_input_rank": 3}, "E10052", "related_input_rank"),
    ({"input_format": 99}, "E10052", "input_format 99 is not a value of AIPP's InputFormat"),
    ({"input_format": -1}, "E10052", "input_format -1 is not a value"),
    ({"input_format": "RGB888_U8", "padding": True, "top_padding_size": 1, "cpadding_value": "nan"}, "E10052",
     "cpadding_value = nan"),
    ({"input_format": "RGB888_U8", "cpadding_value": "-inf"}, "E10052", "cpadding_value = -inf"),
    ({"input_format": "RGB888_U8", "cpadding_value": 1e6}, "E10052", "cpadding_value"),
])
def test_bad_configurations(tmp_path, fields, code, words):
    rank = fields.pop("related_input_rank", None)
    cfg = config(tmp_path, **fields)
    if rank is not None:
        text = open(cfg).read().replace("related_input_rank: 0", f"related_input_rank: {rank}")
        open(cfg, "w").write(text)
    with pytest.raises(AtcError) as e:
        atc_py.build(model(3, 8, 8), {"ge.socVersion": "Ascend910B1", "insert_op_conf": cfg})
    assert e.value.code == code and words in str(e.value), str(e.value)


def test_a_config_that_does_not_parse_and_dynamic_aipp(tmp_path, atc):
    bad = tmp_path / "bad.cfg"
    bad.write_text("aipp_op { input_format: NOPE }\n")
    with pytest.raises(AtcError, match="E13018"):
        atc_py.build(model(3, 8, 8), {"ge.socVersion": "Ascend910B1", "insert_op_conf": str(bad)})
    dyn = tmp_path / "dyn.cfg"
    dyn.write_text("aipp_op { aipp_mode: dynamic related_input_rank: 0 }\n")
    with pytest.raises(AtcError, match="E10055.*dynamic AIPP"):
        atc_py.build(model(3, 8, 8), {"ge.socVersion": "Ascend910B1", "insert_op_conf": str(dyn)})


@pytest.mark.parametrize("shape", ["x:-1,3,6,5", "x:1~4,3,6,5"])
def test_a_dynamic_batch_with_aipp_records_the_image_range(tmp_path, shape):
    """--input_shape with a -1 / lo~hi batch and --insert_op_conf: the .om records the range of the uint8 NHWC
    image AIPP takes (not the NCHW float one, which om-run refused), and each batch runs."""
    cfg = config(tmp_path, input_format="RGB888_U8", src_image_size_w=5, src_image_size_h=6)
    res = atc_py.build(model(3, 6, 5, batch="N"), {"ge.socVersion": "Ascend910B1",
                                                  "ge.exec.precision_mode": "must_keep_origin_dtype",
                                                  "input_shape": shape, "insert_op_conf": cfg})
    p = tmp_path / "m.om"
    p.write_bytes(res.om)
    m = load_model(str(p))
    assert m.inputs[0].desc.dtype == "uint8" and m.inputs[0].desc.shape == (-1, 6, 5, 3)
    assert m.inputs[0].ranges[1:] == [(6, 6), (5, 5), (3, 3)]
    for n in (1, 3):
        image = RNG.integers(0, 256, (n, 6, 5, 3)).astype(np.uint8)
        got = Simulation(m).run([image])[0][0] / 2.0
        np.testing.assert_allclose(got, image.transpose(0, 3, 1, 2).astype(np.float32))
