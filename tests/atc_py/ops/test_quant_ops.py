"""Quantized models as Ascend runs them: QLinearConv / QDQ Conv / MatMulInteger / ConvInteger through atc-py and
om-run against onnxruntime, and the quantize kernels' int4 / float8 targets against onnx's reference."""
from functools import partial

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from atc_conformance.backend import AtcBackend
from atc_py.ir.graph import TensorDesc
from atc_py.ops import get_op
from atc_py.ops.core.execute import run_op
from atc_py.platform import load_soc
from tests.helpers.onnx_builders import onnx_model

RNG = np.random.default_rng(3)
U8, I8, F = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT


model = partial(onnx_model, opset=21, ir_version=10)


def ort_run(m, xs):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip([i.name for i in sess.get_inputs()], xs)))


@pytest.mark.parametrize("seed", [0, 2])
def test_int8_qlinearconv_model_matches_onnxruntime(seed):
    """A QOperator int8 conv layer (uint8 activations, int8 per-channel weights, int32 bias, padding, stride)
    then a QLinearMatMul head: Conv2D/MatMul on int8 operands with offsets, AscendRequant to uint8 — onnxruntime's
    bits: the requantize multiplies in fp32 as MLAS does (these seeds put a value on a rounding tie that a float64
    product rounds the other way)."""
    RNG = np.random.default_rng(seed)
    x = RNG.integers(0, 256, (2, 3, 9, 9), dtype=np.uint8)
    w = RNG.integers(-60, 60, (8, 3, 3, 3), dtype=np.int8)
    b = RNG.integers(-500, 500, (8,), dtype=np.int32)
    inits = [("xs", np.float32(0.02)), ("xz", np.uint8(128)), ("w", w), ("ws", (RNG.random(8) * 0.01 + 0.002).astype(np.float32)),
             ("wz", np.zeros(8, np.int8)), ("ys", np.float32(0.05)), ("yz", np.uint8(10)), ("b", b),
             ("m", RNG.integers(0, 256, (5, 4), dtype=np.uint8)), ("ms", np.array([0.03], np.float32)),
             ("mz", np.array([120], np.uint8)), ("zs", np.array([0.2], np.float32)), ("zz", np.array([100], np.uint8))]
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["c"],
                              pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Reshape", ["c", "shape"], ["c2"]),
             helper.make_node("QLinearMatMul", ["c2", "ys", "yz", "m", "ms", "mz", "zs", "zz"], ["y"])]
    inits.append(("shape", np.array([2 * 8 * 5, 5], np.int64)))
    m = model(nodes, [("x", U8, [2, 3, 9, 9])], [("y", U8)], inits)
    want = ort_run(m, [x])[0]
    got = AtcBackend.run_model(m, [x])[0]
    assert got.dtype == np.uint8 and got.shape == want.shape
    assert np.array_equal(got, want)


def test_qdq_conv_model_matches_onnxruntime():
    """The QDQ format onnxruntime's quantizer writes: Q/DQ around a float Conv with int8 weights."""
    wq = RNG.integers(-100, 100, (4, 2, 3, 3), dtype=np.int8)
    inits = [("s", np.float32(0.05)), ("z", np.int8(0)), ("wq", wq), ("ws", np.float32(0.01)), ("wz", np.int8(0)),
             ("os", np.float32(0.1)), ("oz", np.int8(-3))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
             helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "os", "oz"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "os", "oz"], ["y"])]
    m = model(nodes, [("x", F, [1, 2, 6, 6])], [("y", F)], inits)
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32) * 3
    # onnx's reference computes the int8 convolution exactly. onnxruntime's CPU kernel does not on every x86
    # machine: without AVX-VNNI its u8s8 path (vpmaddubsw) saturates pairs of products at int16, so its output
    # depends on the CPU it runs on (seen: AVX2-only cores differ by up to 18 output steps)
    want, got = ReferenceEvaluator(m).run(None, {"x": x})[0], AtcBackend.run_model(m, [x])[0]
    assert np.abs(got - want).max() <= 0.1 + 1e-6          # at most one output quantization step
    assert np.mean(np.isclose(got, want)) > 0.95


def test_matmulinteger_with_runtime_zero_point_and_per_column_weight_offsets():
    a = RNG.integers(-128, 128, (3, 5, 7), dtype=np.int8)
    b = RNG.integers(-128, 128, (7, 4), dtype=np.int8)
    m = model([helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
              [("a", I8, [3, 5, 7]), ("az", I8, [])], [("y", TensorProto.INT32)],
              [("b", b), ("bz", np.array([1, -2, 3, 0], np.int8))])
    az = np.int8(-5)
    want = (a.astype(np.int32) - az) @ (b.astype(np.int32) - np.array([1, -2, 3, 0]))
    got = AtcBackend.run_model(m, [a, np.asarray(az)])[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_convinteger_1d_with_per_channel_weight_zero_points():
    x = RNG.integers(0, 256, (2, 3, 11), dtype=np.uint8)
    w = RNG.integers(0, 256, (4, 3, 3), dtype=np.uint8)
    m = model([helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 2], strides=[2])],
              [("x", U8, [2, 3, 11])], [("y", TensorProto.INT32)],
              [("w", w), ("xz", np.uint8(7)), ("wz", np.array([0, 3, 250, 128], np.uint8))], opset=10)
    xc = np.pad(x.astype(np.int64) - 7, ((0, 0), (0, 0), (1, 2)))
    wc = w.astype(np.int64) - np.array([0, 3, 250, 128])[:, None, None]
    want = np.stack([np.einsum("nck,ock->no", xc[:, :, 2 * i:2 * i + 3], wc) for i in range(6)], axis=-1)
    got = AtcBackend.run_model(m, [x])[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def _quant_kernel(x, scale, zp, attrs, dst):
    spec = get_op("AscendQuantV2")
    ins = [x, scale, zp]
    descs = [None if a is None else TensorDesc(a.shape, a.dtype.name) for a in ins]
    return run_op(spec, descs, [TensorDesc(x.shape, dst)], {**attrs, "dst_type": dst}, load_soc("Ascend910B1"), ins)[0]


@pytest.mark.parametrize("dst,zp", [("int4", np.array([1, -2, 0], "int8")), ("uint4", np.array([3, 8, 0], "uint8")),
                                    ("float8_e4m3fn", None), ("float8_e5m2", None)])
def test_quantize_kernel_to_int4_and_float8_as_onnx_reference(dst, zp):
    """The sub-byte and float8 targets (their storage types arrive with the dtype work): per-axis int4/uint4 and
    saturating float8, against onnx's reference QuantizeLinear."""
    import ml_dtypes
    x = (RNG.standard_normal((3, 4)) * 40).astype(np.float32)
    x[0, 0] = np.inf
    scale = np.array([0.5, 2.0, 0.25], np.float32)
    zpt = None if zp is None else zp.astype(getattr(ml_dtypes, dst))
    code = {"int4": TensorProto.INT4, "uint4": TensorProto.UINT4, "float8_e4m3fn": TensorProto.FLOAT8E4M3FN,
            "float8_e5m2": TensorProto.FLOAT8E5M2}[dst]
    ins = ["x", "s"] + (["z"] if zp is not None else [])
    node = helper.make_node("QuantizeLinear", ins, ["y"], axis=0, **({} if zp is not None else {"output_dtype": code}))
    feeds = {"x": np.nan_to_num(x, posinf=1e9) if dst.startswith("int") or dst.startswith("uint") else x, "s": scale}
    if zp is not None:
        feeds["z"] = zpt
    m = model([node], [("x", F, [3, 4]), ("s", F, [3])] + ([("z", code, [3])] if zp is not None else []), [("y", code)])
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    scale_zp = [scale] + ([zpt] if zp is not None else [None])
    got = _quant_kernel(feeds["x"], scale_zp[0], scale_zp[1], {"axis": 0}, dst)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_quantize_of_a_scalar_constant_folds():
    """onnxruntime's quantizer quantizes scalar constants (a ViT's attention scale, GELU's 1/sqrt(2)): the
    quantize of a 0-d tensor folds at import (it ended in an internal error on its row count)."""
    inits = [("c", np.float32(0.7)), ("s", np.float32(0.01)), ("z", np.uint8(3))]
    nodes = [helper.make_node("QuantizeLinear", ["c", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("Mul", ["x", "d"], ["y"])]
    m = model(nodes, [("x", F, [3])], [("y", F)], inits, opset=13)
    x = np.array([1.0, -2.0, 0.5], np.float32)
    np.testing.assert_allclose(AtcBackend.run_model(m, [x])[0], x * np.float32(0.7), rtol=1e-6)
