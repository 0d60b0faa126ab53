"""Constant folding's float32 -> float16 cast (passes/fp16_fold.py) gives numpy's bits on every value: the
fp16 subnormal and overflow ranges it computes itself, exhaustively at the boundary exponents, and folded
weights equal to what the Cast kernel computes."""
import numpy as np
import pytest

from atc_py.ir.graph import TensorDesc
from atc_py.ops import get_op
from atc_py.ops.core.execute import run_op
from atc_py.passes.fp16_fold import float32_to_float16, saturate_to_float16
from atc_py.platform import load_soc


def _same_bits(x: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        ref = x.astype(np.float16).view(np.uint16)
    got = float32_to_float16(x).view(np.uint16)
    assert got.shape == ref.shape and np.array_equal(got, ref)


@pytest.mark.heavy
def test_every_float32_at_the_fp16_boundaries():
    """All mantissas (every 3rd) of the exponents around fp16's smallest subnormal/normal and its overflow,
    both signs, plus infinities and NaNs."""
    for exp in list(range(100, 115)) + [141, 142, 143, 255]:
        for sign in (0, 1):
            bits = np.uint32(sign << 31) | np.uint32(exp << 23) | np.arange(0, 2 ** 23, 3, dtype=np.uint32)
            _same_bits(bits.view(np.float32))


def test_random_bit_patterns_and_shapes():
    rng = np.random.default_rng(0)
    _same_bits(rng.integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32))
    _same_bits((rng.standard_normal((3, 5, 7)) * 1e-6).astype(np.float32))   # all subnormal, kept shape
    _same_bits(np.array([0.0, -0.0, 65504.0, 65519.99, 65520.0, -1e30, 2.0 ** -25, 2.0 ** -24 * 1.5], np.float32))


def test_big_trained_like_weights_with_a_few_abnormal_values():
    """The sampled fast path (numpy's cast whole): same bits with subnormals, overflows and NaNs mixed in."""
    x = (np.random.default_rng(2).standard_normal(1 << 18) * 0.02).astype(np.float32)
    x[[3, 77, 1000, 20000, 99999]] = [1e-7, -3e-6, 7e4, -np.inf, np.nan]
    _same_bits(x)


def test_folded_cast_matches_the_cast_kernel():
    x = (np.random.default_rng(1).standard_normal((64, 96)) * 3e-5).astype(np.float32)
    x[0, :4] = [1e6, -7e4, np.inf, 0.0]
    spec = get_op("Cast")
    attrs = {"dst_type": "float16"}
    with np.errstate(all="ignore"):
        kernel = run_op(spec, [TensorDesc(x.shape, "float32")], [TensorDesc(x.shape, "float16")], attrs,
                        load_soc("Ascend910B1"), [x])[0]
    assert np.array_equal(kernel.view(np.uint16), float32_to_float16(x).view(np.uint16))


def test_constants_cast_for_fp16_kernels_saturate_and_are_counted():
    x = np.array([-3.4e38, -65519.0, -65520.0, 1e5, 70000.0, -np.inf, np.inf, np.nan, 1.5], np.float32)
    got, n = saturate_to_float16(x)
    assert n == 4              # -3.4e38, -65520, 1e5, 70000; -65519 rounds to -65504 as numpy's cast does
    want = np.array([-65504, -65504, -65504, 65504, 65504, -np.inf, np.inf, np.nan, 1.5], np.float16)
    np.testing.assert_array_equal(got, want)


def test_an_exporters_float32_lowest_mask_gives_no_nan_in_the_default_build(tmp_path):
    """DeBERTa-style: (1 - mask) * float32's lowest added to the scores, then Softmax. In fp16 the constant would be
    -inf and a fully masked row NaN; saturated to -65504 it stays finite (and the build summary counts it)."""
    from onnx import TensorProto, helper, numpy_helper

    import atc_py
    from om_run.load.loader import load_model
    from om_run.sim.host import Simulation
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    nodes = [helper.make_node("Cast", ["mask"], ["mf"], to=TensorProto.FLOAT),
             helper.make_node("Sub", ["one", "mf"], ["inv"]),
             helper.make_node("Mul", ["inv", "lowest"], ["bias"]),
             helper.make_node("MatMul", ["x", "w"], ["s"]),
             helper.make_node("Add", ["s", "bias"], ["sb"]),
             helper.make_node("Softmax", ["sb"], ["y"], axis=-1)]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
                                       helper.make_tensor_value_info("mask", TensorProto.INT64, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                          [numpy_helper.from_array(np.array(1, np.float32), "one"),
                           numpy_helper.from_array(np.array(np.finfo(np.float32).min, np.float32), "lowest"),
                           numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    res = atc_py.build(m, {"ge.socVersion": "Ascend910B1"})     # the default precision: fp16 kernels
    assert res.summary["fp16_saturated"] == 1
    p = tmp_path / "m.om"
    p.write_bytes(res.om)
    x = rng.standard_normal((2, 8)).astype(np.float32)
    mask = np.array([[1] * 8, [0] * 8], np.int64)                 # the second row fully masked
    with np.errstate(all="ignore"):
        outs, _ = Simulation(load_model(str(p))).run([x, mask])
    y = outs[0]
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=1e-2)
    s = x[0] @ w
    np.testing.assert_allclose(y[0], np.exp(s - s.max()) / np.exp(s - s.max()).sum(), atol=2e-3)   # unmasked row
