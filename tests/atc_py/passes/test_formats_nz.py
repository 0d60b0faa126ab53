"""Device formats beyond 2-D convolutions (passes/formats.py): FRACTAL_NZ matmuls on the SoCs whose kernels take
them (and ND on the 910B's), ConfusionTransposeD head splits, NDC1HWC0 / FRACTAL_Z_3D 3-D convolutions and int8
5HD (C0 = 32). Every build still equals the framework."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.ir.formats import (
    FRACTAL_Z_3D,
    NDC1HWC0,
    device_shape,
    from_device,
    to_device,
)
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import ROOT
from tests.helpers.om_files import om_ops

RNG = np.random.default_rng(11)
BERT = ROOT / "tests" / "data" / "real_models" / "hf_bert.eager.opset17"
BERT_SHAPE = "input_ids:2,16;attention_mask:2,16"


def _run(res, tmp_path, inputs):
    p = tmp_path / "m.om"
    p.write_bytes(res.om)
    return Simulation(load_model(str(p))).run(inputs)[0]


@pytest.mark.parametrize("fmt,shape,origin,dtype,device", [
    (NDC1HWC0, (2, 19, 3, 5, 6), "NCDHW", "float16", (2, 3, 2, 5, 6, 16)),
    (NDC1HWC0, (1, 40, 2, 3, 3), "NCDHW", "int8", (1, 2, 2, 3, 3, 32)),
    (FRACTAL_Z_3D, (20, 19, 3, 3, 2), "NCDHW", "float32", (36, 2, 16, 16)),
])
def test_3d_layouts_round_trip_with_zero_padding(fmt, shape, origin, dtype, device):
    a = (RNG.standard_normal(shape) * 10).astype(dtype)
    d = to_device(a, fmt, origin)
    assert d.shape == device == device_shape(shape, fmt, origin, dtype)
    assert np.count_nonzero(d) == np.count_nonzero(a)
    np.testing.assert_array_equal(from_device(d, fmt, shape, origin), a)


def test_bert_matmuls_take_fractal_nz_on_310p_and_nd_on_910b(tmp_path):
    ref = np.load(f"{BERT}.npz")
    opts = {"input_shape": BERT_SHAPE, "ge.exec.precision_mode": "force_fp32"}
    res = atc_py.build(f"{BERT}.onnx", {**opts, "ge.socVersion": "Ascend310P3"})
    ops = om_ops(res.om)
    mms = [op for op in ops if op.type == "BatchMatMulV2"]
    assert mms and all(op.input_desc[0].layout == op.input_desc[1].layout == op.output_desc[0].layout ==
                       "FRACTAL_NZ" for op in mms)
    weights = [op for op in ops if op.type == "Const" and op.output_desc[0].layout == "FRACTAL_NZ"]
    assert len(weights) == 13                                   # 6 linear layers x 2 + the pooler, stored NZ
    heads = [op for op in ops if op.type == "ConfusionTransposeD"]
    assert len(heads) == 8                                      # q, k, v split + the merge, per layer
    assert not any(op.type == "TransposeD" for op in ops)
    trans = sum(op.type == "TransData" for op in ops)
    assert trans == res.summary["trans_data_inserted"] and trans < len(mms)
    got = _run(res, tmp_path, [ref["in_0"], ref["in_1"]])
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, ref[f"out_{k}"], rtol=1e-5, atol=1e-5 * np.abs(ref[f"out_{k}"]).max())
    b = atc_py.build(f"{BERT}.onnx", {**opts, "ge.socVersion": "Ascend910B1"})     # A2's matmuls read ND
    assert not any("FRACTAL_NZ" in (op.output_desc[0].layout if op.output_desc else "") for op in om_ops(b.om))
    assert b.summary["trans_data_inserted"] == 0


def test_a_3d_convolution_reads_ndc1hwc0_and_fractal_z_3d(tmp_path):
    w = RNG.standard_normal((20, 3, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 6), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2, 2], strides=[2, 2, 2])]
    g = helper.make_graph(nodes, "c3", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    res = atc_py.build(model, {"ge.socVersion": "Ascend310P3", "ge.exec.precision_mode": "force_fp32"})
    ops = om_ops(res.om)
    conv = next(op for op in ops if op.type == "Conv3D")
    assert (conv.input_desc[0].layout, conv.input_desc[1].layout, conv.output_desc[0].layout) == \
        (NDC1HWC0, FRACTAL_Z_3D, NDC1HWC0)
    assert list(conv.input_desc[0].shape.dim) == [2, 8, 1, 8, 8, 16]       # 3 channels padded to 16
    assert list(conv.input_desc[1].shape.dim) == [27, 2, 16, 16]
    pool = next(op for op in ops if op.type == "MaxPool3D")
    assert pool.input_desc[0].layout == NDC1HWC0
    assert res.summary["trans_data_inserted"] == 2                         # in and out: the Relu stays 6HD
    x = RNG.standard_normal((2, 3, 8, 8, 8)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(_run(res, tmp_path, [x])[0], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_an_int8_convolution_reads_5hd_with_c0_32(tmp_path):
    """ConvInteger: uint8 activations in NC1HWC0 with C0 = 32 (one 32-byte block), int8 FRACTAL_Z filter, the
    int32 sums 5HD with C0 = 16; exact."""
    w = RNG.integers(-8, 8, (24, 40, 3, 3)).astype(np.int8)
    g = helper.make_graph([helper.make_node("ConvInteger", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "ci",
                          [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 40, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
                          [numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    res = atc_py.build(model, {"ge.socVersion": "Ascend310P3"})
    conv = next(op for op in om_ops(res.om) if op.type == "Conv2D")
    assert conv.input_desc[0].layout == "NC1HWC0" and list(conv.input_desc[0].shape.dim) == [1, 2, 6, 6, 32]
    assert conv.input_desc[1].layout == "FRACTAL_Z" and list(conv.input_desc[1].shape.dim) == [18, 2, 16, 32]
    assert list(conv.output_desc[0].shape.dim) == [1, 2, 6, 6, 16]
    x = RNG.integers(0, 255, (1, 40, 6, 6)).astype(np.uint8)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(_run(res, tmp_path, [x])[0], want)
