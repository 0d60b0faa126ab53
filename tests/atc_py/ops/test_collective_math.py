"""The collectives' numbers: each against its definition written out by hand, per dtype and reduction."""
import numpy as np
import pytest

from atc_py.ops import collective_math as cm


def _ranks(n, dtype, shape=(4, 3), seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return [rng.standard_normal(shape).astype(dtype) for _ in range(n)]
    return [rng.integers(-50, 50, shape).astype(dtype) for _ in range(n)]


@pytest.mark.parametrize("dtype", ["float16", "float32", "int32", "int8"])
@pytest.mark.parametrize("reduction", cm.REDUCTIONS)
def test_all_reduce_is_the_rank_ordered_reduction(dtype, reduction):
    xs = _ranks(4, dtype)
    want = xs[0].copy()
    for x in xs[1:]:
        with np.errstate(over="ignore"):
            want = {"sum": want + x, "prod": want * x, "max": np.maximum(want, x),
                    "min": np.minimum(want, x)}[reduction].astype(dtype)
    outs = cm.all_reduce(xs, reduction)
    assert len(outs) == 4 and all(o.dtype == np.dtype(dtype) for o in outs)
    for o in outs:
        np.testing.assert_array_equal(o, want)


def test_fp16_sum_rounds_after_every_addition():
    xs = [np.array([2048.0], np.float16), np.array([1.0], np.float16), np.array([1.0], np.float16)]
    assert cm.all_reduce(xs)[0][0] == 2048.0          # 2048+1 rounds to 2048 in fp16, twice
    assert cm.all_reduce([xs[1], xs[2], xs[0]])[0][0] == 2050.0


def test_all_gather_and_reduce_scatter_and_all_to_all():
    xs = _ranks(2, "float32")
    g = cm.all_gather(xs)
    np.testing.assert_array_equal(g[1], np.vstack(xs))
    rs = cm.reduce_scatter(_ranks(2, "int32", (4, 2)), "max")
    full = np.maximum(*_ranks(2, "int32", (4, 2)))
    np.testing.assert_array_equal(rs[0], full[:2])
    np.testing.assert_array_equal(rs[1], full[2:])
    a2a = cm.all_to_all([np.arange(4), np.arange(4) + 10])
    np.testing.assert_array_equal(a2a[0], [0, 1, 10, 11])
    np.testing.assert_array_equal(a2a[1], [2, 3, 12, 13])


def test_broadcast_takes_the_roots_tensor():
    xs = _ranks(3, "float16")
    assert all(np.array_equal(o, xs[2]) for o in cm.broadcast(xs, 2))


@pytest.mark.parametrize("xs, call, message", [
    ([np.zeros(3), np.zeros(4)], lambda xs: cm.all_reduce(xs), "rank 1 of the group gives"),
    ([np.zeros(3, np.float16), np.zeros(3)], lambda xs: cm.all_gather(xs), "rank 1"),
    ([np.zeros(3), np.zeros(3)], lambda xs: cm.reduce_scatter(xs), "does not split into 2"),
    ([np.zeros(3), np.zeros(3)], lambda xs: cm.all_reduce(xs, "mean"), "reduction 'mean'"),
    ([np.zeros(3)], lambda xs: cm.broadcast(xs, 1), "root rank 1"),
])
def test_what_does_not_make_a_collective_is_named(xs, call, message):
    with pytest.raises(cm.CollectiveError, match=message):
        call(xs)
