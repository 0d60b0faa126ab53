"""Device formats as CANN lays them out (passes/formats.py, ir/formats.py): convolutions and pooling on
NC1HWC0 activations and FRACTAL_Z filters, TransData where the framework's layout meets them, sizes with the C0
padding, and not one number changed."""
import csv

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import atc_py
from atc_py.ir.formats import (
    FRACTAL_NZ,
    FRACTAL_Z,
    NC1HWC0,
    device_shape,
    from_device,
    to_device,
)
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import ROOT
from tests.helpers.om_files import om_ops
from tools.resnet50_onnx import resnet50

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("fmt,shape,origin,dtype,device", [
    (NC1HWC0, (2, 3, 5, 7), "NCHW", "float32", (2, 1, 5, 7, 16)),
    (NC1HWC0, (2, 5, 7, 35), "NHWC", "float16", (2, 3, 5, 7, 16)),
    (NC1HWC0, (1, 40, 2, 2), "NCHW", "int8", (1, 2, 2, 2, 32)),
    (FRACTAL_Z, (33, 17, 3, 3), "NCHW", "float32", (18, 3, 16, 16)),
    (FRACTAL_NZ, (2, 19, 35), "ND", "float16", (2, 3, 2, 16, 16)),
])
def test_device_layouts_round_trip_with_zero_padding(fmt, shape, origin, dtype, device):
    a = (RNG.standard_normal(shape) * 10).astype(dtype)
    d = to_device(a, fmt, origin)
    assert d.shape == device == device_shape(shape, fmt, origin, dtype)
    assert np.count_nonzero(d) == np.count_nonzero(a)          # the padding is zeros
    np.testing.assert_array_equal(from_device(d, fmt, shape, origin), a)



def test_resnet50_reads_5hd_and_fractal_z_and_equals_onnxruntime(tmp_path):
    model = resnet50(size=64, seed=3)
    src = tmp_path / "r50.onnx"
    onnx.save(model, src)
    res = atc_py.build(str(src), {"ge.socVersion": "Ascend910B3", "ge.exec.precision_mode": "force_fp32"})
    ops = om_ops(res.om)
    convs = [op for op in ops if op.type == "Conv2D"]
    assert len(convs) == 53
    assert all(op.input_desc[0].layout == "NC1HWC0" and op.input_desc[1].layout == "FRACTAL_Z" and
               op.output_desc[0].layout == "NC1HWC0" for op in convs)
    trans = [op for op in ops if op.type == "TransData"]
    assert [(t.attr["src_format"].s, t.attr["dst_format"].s) for t in trans] == \
        [(b"NCHW", b"NC1HWC0"), (b"NC1HWC0", b"NCHW")]           # at the input, and after the last pooling
    data = next(op for op in ops if op.type == "Data")
    assert data.output_desc[0].layout == "NCHW"
    first = convs[0].input_desc[0]                                  # the 3-channel image, padded to 16 channels
    assert list(first.shape.dim) == [1, 1, 64, 64, 16] and list(first.attr["origin_shape"].list.i) == [1, 3, 64, 64]
    assert res.summary["trans_data_inserted"] == 2
    p = tmp_path / "r50.om"
    p.write_bytes(res.om)
    x = RNG.standard_normal((1, 3, 64, 64)).astype(np.float32)
    got, _ = Simulation(load_model(str(p))).run([x])
    want = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_transdata_rows_in_the_profile_and_the_mode6_count(om_run, tmp_path, atc):
    src = ROOT / "models" / "small_cnn.onnx"
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'cnn'}", "--soc_version=Ascend910B1")[0] == 0
    code, out, err = om_run(str(tmp_path / "cnn.om"), "--profile", str(tmp_path / "prof"))
    assert code == 0, out + err
    with open(tmp_path / "prof" / "op_summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    n = sum(r["OP Type"] == "TransData" for r in rows)
    assert n >= 2 and all(float(r["Task Duration(us)"]) > 0 for r in rows if r["OP Type"] == "TransData")
    code, out, _ = atc("--mode=6", f"--om={tmp_path / 'cnn.om'}")
    assert f"formats  : TransData[{n}]" in out


def test_a_channels_last_model_enters_5hd_from_nhwc_with_the_same_numbers(tmp_path):
    tf = ROOT / "tests" / "data" / "tf"
    opts = {"ge.socVersion": "Ascend910B1", "ge.frameworkType": "3", "ge.exec.precision_mode": "must_keep_origin_dtype"}
    on = atc_py.build(str(tf / "tf_lenet.pb"), opts)
    off = atc_py.build(str(tf / "tf_lenet.pb"), {**opts, "optimization_switch": "formats:off"})
    first = next(op for op in om_ops(on.om) if op.type == "TransData")
    assert first.attr["src_format"].s == b"NHWC" and first.input_desc[0].layout in ("NHWC", "ND")
    inputs = np.load(tf / "tf_lenet.inputs.npz")
    outs = []
    for k, r in enumerate((on, off)):
        p = tmp_path / f"m{k}.om"
        p.write_bytes(r.om)
        m = load_model(str(p))
        outs.append(Simulation(m).run([inputs[io.name] for io in m.inputs])[0])
    assert all(np.array_equal(a, b) for a, b in zip(*outs))


@pytest.mark.parametrize("channels", [3, 16])
def test_a_3_channel_input_occupies_16_channels(tmp_path, channels):
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(RNG.standard_normal((8, channels, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "c",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 56, 56])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 56, 56])], [w])
    res = atc_py.build(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                       {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "force_fp32"})
    conv = next(op for op in om_ops(res.om) if op.type == "Conv2D")
    assert conv.input_desc[0].size == 1 * 16 * 56 * 56 * 4          # either way: one C1 block of 16 channels


def test_a_device_desc_whose_origin_does_not_give_its_shape_is_refused(om_run, tmp_path):
    """A 5HD descriptor says which framework shape it holds; one whose origin shape would need another shape (40
    channels need C1 = 3) is an E30001 before anything is sized or converted by it."""
    from tests.helpers.om_files import edit, run_om_bytes
    res = atc_py.build(str(ROOT / "models" / "small_cnn.onnx"), {"ge.socVersion": "Ascend910B1"})

    def mutate(md):
        conv = next(op for g in md.graph for op in g.op if op.type == "Conv2D")
        conv.input_desc[0].attr["origin_shape"].list.i[1] = 40
    code, out, err = run_om_bytes(om_run, tmp_path, edit(res.om, model_def=mutate))
    assert code == 1 and "E30001" in err and "origin" in err and "Traceback" not in out + err

    def three_d(md):   # a 3-D origin format on a 4-D 5HD descriptor
        conv = next(op for g in md.graph for op in g.op if op.type == "Conv2D")
        conv.input_desc[0].attr["origin_format"].s = b"NCDHW"
    code, out, err = run_om_bytes(om_run, tmp_path, edit(res.om, model_def=three_d))
    assert code == 1 and "E30001" in err and "origin" in err and "Traceback" not in out + err


def test_a_keras_mobilenet_stays_in_5hd_from_input_to_output(tmp_path):
    """Its NHWC residual Adds and the pads before its strided depthwise convolutions: transposes sink below them
    (passes/transpose_sink.py), so only the input's and the output's TransData remain; numbers as TensorFlow's."""
    data = ROOT / "tests" / "data" / "real_models"
    res = atc_py.build(str(data / "keras3_mobilenet_v2.pb"), {"ge.socVersion": "Ascend910B1", "ge.frameworkType": "3",
                                                              "ge.exec.precision_mode": "force_fp32"})
    ops = om_ops(res.om)
    assert sum(op.type == "TransData" for op in ops) == 2 and not any(op.type == "TransposeD" for op in ops)
    assert all(op.output_desc[0].layout == "NC1HWC0" for op in ops if op.type == "PadV3D")
    ref = np.load(data / "keras3_mobilenet_v2.npz")
    p = tmp_path / "m.om"
    p.write_bytes(res.om)
    m = load_model(str(p))
    got, _ = Simulation(m).run([ref["in_0"]])       # the fixture's arrays (tools/real_models): in_k, out_k
    want = ref["out_0"]
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
