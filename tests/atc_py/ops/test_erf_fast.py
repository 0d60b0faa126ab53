"""erf_fast: Erf/Gelu kernels evaluate erf with a table and keep exactly the bits of the per-element
math.erf path they replaced; math.erf is left only for the few elements whose rounding the
approximation cannot settle."""
import math

import numpy as np
import pytest

from atc_py.ir.graph import TensorDesc
from atc_py.ops import get_op
from atc_py.ops.core import erf_fast
from atc_py.ops.core.execute import run_op
from atc_py.platform import load_soc

RNG = np.random.default_rng(18)
SOC = load_soc("Ascend910B1")
OLD = np.vectorize(math.erf, otypes=[np.float64])


def old_erf(x, dtype=None):
    with np.errstate(all="ignore"):
        return OLD(x).astype(dtype or x.dtype)


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))


def test_every_float16_value_is_bit_equal():
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    same_bits(erf_fast.erf_rounded(x), old_erf(x))


def test_float32_bit_patterns_and_edges_are_bit_equal():
    """Random bit patterns (every exponent, NaNs, subnormals), values around every interval edge and where
    math.erf reaches 1.0, and the specials."""
    bits = RNG.integers(0, 1 << 32, 400_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.arange(0, erf_fast.TOP + 1, erf_fast.WIDTH)
    near = (edges[:, None] + np.linspace(-1e-6, 1e-6, 101)[None, :]).ravel()
    dense = np.linspace(-6.5, 6.5, 400_001)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.17e-38, 5.92, 5.93, 5.94, 3.4e38])
    with np.errstate(all="ignore"):
        x = np.concatenate([bits, near, -near, dense, special]).astype(np.float32)
    same_bits(erf_fast.erf_rounded(x), old_erf(x))
    y = x[:800_000].reshape(-1, 40, 2)   # shape kept
    same_bits(erf_fast.erf_rounded(y), old_erf(y))


def test_math_erf_is_left_for_few_elements(monkeypatch):
    x = (RNG.standard_normal(200_000) * 2).astype(np.float32)
    counted = []

    def counting(v):
        counted.append(np.size(v))
        return OLD(v)
    monkeypatch.setattr(erf_fast, "_vec_erf", counting)
    erf_fast.erf_rounded(x)
    assert sum(counted) < x.size // 500


@pytest.mark.parametrize("op", ["Erf", "Gelu"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_erf_and_gelu_kernels_keep_their_numbers(op, dtype):
    x = (RNG.standard_normal((2, 96, 28, 28)) * 3).astype(dtype)
    out = run_op(get_op(op), [TensorDesc(x.shape, dtype)], [TensorDesc(x.shape, dtype)], {}, SOC, [x])[0]
    ref = old_erf(x) if op == "Erf" else 0.5 * x * (1 + old_erf(x / math.sqrt(2)))
    same_bits(out, ref)


def test_other_dtypes_take_math_erf():
    x = RNG.standard_normal(100)
    same_bits(erf_fast.erf_rounded(x), old_erf(x))
    same_bits(erf_fast.erf_rounded(x, np.float32), old_erf(x, np.float32))
