"""AIPP in front of the first convolution as CANN builds it (passes/aipp_fusion.py): Aipp writes fp16 NC1HWC0 itself,
fuses into the convolution (TbeAippConvFusion) and, on Ascend310P, a ResNet stem's max pool too
(TbeAippConvReluMaxpoolingFusion); the numbers stay those of the separate ops (within one fp16 rounding: the
GEMM's accumulation order may differ) and of an independent numpy reference."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import atc_py
from atc_py.ops.aipp import Aipp, aipp
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from om_run.sim.program import op_attrs

RNG = np.random.default_rng(5)
MEAN, STD = (123.675, 116.28, 103.53), (0.0171, 0.0175, 0.0174)
W7 = (RNG.standard_normal((64, 3, 7, 7)) * 0.1).astype(np.float32)
B7 = (RNG.standard_normal(64) * 0.1).astype(np.float32)


def stem(batch=1, size=224, k=7, stride=2, pad=3, cout=64):
    """conv k x k -> ReLU -> MaxPool 3 x 3 / 2 (a ResNet stem at k = 7), then a 1 x 1 convolution."""
    w = numpy_helper.from_array(W7[:cout, :, :k, :k].copy(), "w")
    b = numpy_helper.from_array(B7[:cout].copy(), "b")
    w2 = numpy_helper.from_array((RNG.standard_normal((16, cout, 1, 1)) * 0.1).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[stride, stride],
                              pads=[pad] * 4),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["p", "w2"], ["y"], kernel_shape=[1, 1])]
    g = helper.make_graph(nodes, "stem", [helper.make_tensor_value_info("x", TP.FLOAT, [batch, 3, size, size])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)], [w, b, w2])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def aipp_cfg(tmp_path, size=224) -> str:
    p = tmp_path / "aipp.cfg"
    fields = [f"src_image_size_w: {size}", f"src_image_size_h: {size}"] + \
        [f"min_chn_{i}: {m}" for i, m in enumerate(MEAN)] + [f"var_reci_chn_{i}: {s}" for i, s in enumerate(STD)]
    p.write_text("aipp_op {\n aipp_mode: static\n related_input_rank: 0\n input_format: RGB888_U8\n " +
                 "\n ".join(fields) + "\n}\n")
    return str(p)


def build(tmp_path, m, soc="Ascend310P3", **extra):
    res = atc_py.build(m, {"ge.socVersion": soc, "insert_op_conf": aipp_cfg(tmp_path, m.graph.input[0].type.
                                                                              tensor_type.shape.dim[2].dim_value),
                           "ge.enableSmallChannel": "1", **extra})
    p = tmp_path / f"m{len(list(tmp_path.glob('*.om')))}.om"
    p.write_bytes(res.om)
    return res, load_model(str(p))


def kernels(model) -> list:
    return [op for op in model.ops.values() if op.type not in ("Data", "NetOutput", "Const")]


def run(model, image):
    return Simulation(model).run([image])[0][0]


def reference(image: np.ndarray) -> np.ndarray:
    """AIPP (fp16), the 7 x 7 / 2 convolution in fp32 on fp16 operands, ReLU, fp16, max pool: written here."""
    a = dict(Aipp.attrs, input_format="RGB888_U8", src_image_size=list(image.shape[1:3]), min_chn=[*MEAN, 0.0],
             var_reci_chn=[*STD, 1.0])
    x = aipp(image, a, np.float16).astype(np.float32)
    w = W7.astype(np.float16).astype(np.float32)
    xp = np.pad(x, ((0, 0), (0, 0), (3, 3), (3, 3)))
    ho = (x.shape[2] + 6 - 7) // 2 + 1
    cols = np.stack([xp[:, :, i:i + 2 * ho - 1:2, j:j + 2 * ho - 1:2] for i in range(7) for j in range(7)], axis=2)
    conv = np.einsum("nckhw,ock->nohw", cols, w.reshape(64, 3, 49)) + B7.astype(np.float16)[None, :, None, None]
    conv = np.maximum(conv, 0).astype(np.float16).astype(np.float32)
    cp = np.pad(conv, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    hp = (ho + 2 - 3) // 2 + 1
    return np.max(np.stack([cp[:, :, i:i + 2 * hp - 1:2, j:j + 2 * hp - 1:2] for i in range(3) for j in range(3)]),
                  axis=0)


def stem_only(batch=1):
    """stem() without the 1 x 1 convolution: its output is the pooled map."""
    m = stem(batch)
    del m.graph.node[3]
    m.graph.output[0].name = "p"
    return m


def test_the_310p_resnet_stem_is_one_kernel_with_the_numbers_of_the_separate_ops(tmp_path):
    image = RNG.integers(0, 256, (2, 224, 224, 3), dtype=np.uint8)
    res, fused = build(tmp_path, stem_only(2))
    _, apart = build(tmp_path, stem_only(2), optimization_switch="aipp_conv_fusion:off")
    types = [op.type for op in kernels(fused)]
    assert "Aipp" not in types and "MaxPoolV3" not in types and types.count("Conv2D") == 1
    assert res.summary["aipp_conv_fused"] == 1 and res.summary["aipp_outputs_folded"] == 1
    conv = next(op for op in kernels(fused) if op.type == "Conv2D")
    attrs = op_attrs(conv)
    assert attrs["aipp_input_format"] == "RGB888_U8" and attrs["fused_pool_ksize"][-2:] == [3, 3]
    # apart: Aipp writes fp16 NC1HWC0_C04 itself, no Cast or TransData behind it; the pool is its own kernel
    apart_types = [op.type for op in kernels(apart)]
    assert apart_types[:3] == ["Aipp", "Conv2D", "MaxPoolV3"], apart_types
    y, y_apart = run(fused, image), run(apart, image)
    assert y.shape == (2, 64, 56, 56)
    ulp = np.spacing(np.abs(y_apart).astype(np.float16)).astype(np.float32)
    assert np.all(np.abs(y - y_apart) <= ulp)          # one fp16 rounding apart at most
    ref = reference(image)
    assert np.all(np.abs(y - ref) <= np.spacing(np.abs(ref).astype(np.float16)).astype(np.float32))


def test_the_pool_fusion_is_310p_s_and_the_stem_s_alone(tmp_path):
    # Ascend910: AIPP fuses into the convolution, the MaxPoolV3 stays (its pass takes MaxPool / Pooling there)
    _, m910 = build(tmp_path, stem(), soc="Ascend910A")
    assert [op.type for op in kernels(m910)][:2] == ["Conv2D", "MaxPoolV3"]
    # a 3 x 3 stem on 310P: not the [N, 3, 224, 224] x 7 x 7 the 310P conditions name
    _, m3 = build(tmp_path, stem(k=3, pad=1))
    assert [op.type for op in kernels(m3)][:2] == ["Conv2D", "MaxPoolV3"]
    # Ascend910B (A2) is not among the fusions' products: Aipp runs on its own
    _, mb = build(tmp_path, stem(), soc="Ascend910B1")
    assert [op.type for op in kernels(mb)][:2] == ["Aipp", "Conv2D"]


def test_fusion_switch_file_names_switch_each_fusion(tmp_path):
    f = tmp_path / "switch.cfg"
    f.write_text("TbeAippConvReluMaxpoolingFusion:off\n")
    _, m = build(tmp_path, stem(), fusion_switch_file=str(f))
    assert [op.type for op in kernels(m)][:2] == ["Conv2D", "MaxPoolV3"]
    f.write_text("TbeAippConvFusion:off\n")
    _, m = build(tmp_path, stem(), fusion_switch_file=str(f))
    assert [op.type for op in kernels(m)][:3] == ["Aipp", "Conv2D", "MaxPoolV3"]


@pytest.mark.parametrize("k,stride,pad", [(1, 1, 0), (1, 2, 0)])
def test_what_tbe_aipp_fusion_rule_refuses_keeps_the_aipp(tmp_path, k, stride, pad):
    """load2d (1 x 1 / 1, no pads) and the stride-h optimisation (1-row filter, row stride, no pads, not C04:
    three channels widen to 16 without small channel) keep Aipp a kernel of its own, writing fp16 NC1HWC0."""
    m = stem(size=32, k=k, stride=stride, pad=pad)
    res = atc_py.build(m, {"ge.socVersion": "Ascend310P3", "insert_op_conf": aipp_cfg(tmp_path, 32)})
    p = tmp_path / "k.om"
    p.write_bytes(res.om)
    model = load_model(str(p))
    ops = kernels(model)
    assert [op.type for op in ops][:2] == ["Aipp", "Conv2D"] and res.summary["aipp_conv_fused"] == 0
    aipp_op = ops[0]
    assert op_attrs(aipp_op)["dst_type"] == "float16"
    image = RNG.integers(0, 256, (1, 32, 32, 3), dtype=np.uint8)
    off = atc_py.build(m, {"ge.socVersion": "Ascend310P3", "insert_op_conf": aipp_cfg(tmp_path, 32),
                           "optimization_switch": "formats:off"})
    q = tmp_path / "off.om"
    q.write_bytes(off.om)
    np.testing.assert_allclose(run(model, image), run(load_model(str(q)), image), rtol=2e-3, atol=2e-3)


def _ints(name, vals):
    def mutate(md):
        attr = next(op for op in md.graph[0].op if op.type == "Conv2D").attr[name]
        del attr.list.i[:]
        attr.list.i.extend(vals)
    return mutate


@pytest.fixture(scope="module")
def stem_om(tmp_path_factory) -> bytes:
    d = tmp_path_factory.mktemp("stem")
    return atc_py.build(stem_only(), {"ge.socVersion": "Ascend310P3", "insert_op_conf": aipp_cfg(d),
                                      "ge.enableSmallChannel": "1"}).om


@pytest.mark.parametrize("mutate,expect", [
    (_ints("aipp_crop", [0, 0, 300, 300]), "does not fit"),
    (_ints("aipp_src_image_size", [1 << 30, 1 << 30]), "is not [1, 224, 224, 3]"),
    (_ints("aipp_padding", [1 << 20, 0, 0, 0]), "outside 0..32"),
    (lambda md: next(op for op in md.graph[0].op if op.type == "Conv2D").attr["aipp_input_format"].__setattr__(
        "s", b"YUV420SP_U8"), "YUV420SP_U8 image"),
    (_ints("fused_pool_strides", [1, 1, 0, 0]), "strides of at least 1"),
    (_ints("fused_pool_pads", [1]), "4 pads"),
    (_ints("fused_pool_ksize", [1, 1, 100, 100]), "is not what its inputs give"),
])
def test_a_fused_stem_s_attributes_are_checked_at_load(om_run, tmp_path, stem_om, mutate, expect):
    """A sealed .om whose fused AIPP / pool attributes do not fit the image: one E30001 at load, no traceback."""
    from tests.helpers.om_files import edit, run_om_bytes
    code, _, err = run_om_bytes(om_run, tmp_path, edit(stem_om, mutate))
    assert code == 1 and "E30001" in err and expect in err and "Traceback" not in err, err
