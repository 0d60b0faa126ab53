"""Constant folding's float32 -> float16 cast (passes/fp16_fold.py) gives numpy's bits on every value: the
fp16 subnormal and overflow ranges it computes itself, exhaustively at the boundary exponents, and folded
weights equal to what the Cast kernel computes."""
import numpy as np

from atc_py.ir.graph import TensorDesc
from atc_py.ops import get_op
from atc_py.ops.execute import run_op
from atc_py.passes.fp16_fold import float32_to_float16
from atc_py.platform import load_soc


def _same_bits(x: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        ref = x.astype(np.float16).view(np.uint16)
    got = float32_to_float16(x).view(np.uint16)
    assert got.shape == ref.shape and np.array_equal(got, ref)


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
