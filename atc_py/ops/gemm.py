"""The cube kernels' GEMMs on the host: split into pieces fixed by the shapes, run on the host pool (host_pool.py).

`grouped_matmul` computes out[o, g] = w[g] @ x[o, g] — a convolution's groups over its images, a batched MatMul's
batch, or one 2-D GEMM (one group, one image). A small problem is one numpy call, as before; a large one is cut
into pieces of about PIECE_MACS multiply-adds: whole GEMMs of a group range when each GEMM is small, else panels
of one GEMM's rows (M) or columns (N). Each piece is one single-threaded BLAS call writing its own block of the
output, followed by the caller's epilogue on that block (bias, residual, ReLU, the cast to the output dtype) while
it is in cache. The pieces depend on the shapes only: the same calls compute every element with 1 thread or 8.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from .host_pool import hold_blas_single, run_pieces, split

PIECE_MACS = 1 << 22      # multiply-adds a piece aims at (~100-150 us on one core): below 2x this, one call
MAX_PANELS = 8            # panels one GEMM is cut into at most
ROW_ALIGN, COL_ALIGN = 16, 32   # panel edges on whole SIMD tiles / cache lines


@functools.lru_cache(maxsize=4096)
def gemm_pieces(outer: int, groups: int, m: int, k: int, n: int) -> tuple:
    """The pieces of `outer` x `groups` GEMMs (m x k) @ (k x n), decided from these numbers only: tuples
    (o, g0, g1, axis, lo, hi): o None — everything in one call; axis None — whole GEMMs g0..g1 of image o;
    "m" / "n" — rows / columns lo..hi of GEMM (o, g0)."""
    item = m * k * n
    if outer * groups * item < 2 * PIECE_MACS:
        return ((None, 0, groups, None, 0, 0),)
    if item >= 2 * PIECE_MACS:
        parts = min(MAX_PANELS, item // PIECE_MACS)
        axis, ranges = ("n", split(n, parts, COL_ALIGN)) if n >= m else ("m", split(m, parts, ROW_ALIGN))
        return tuple((o, g, g + 1, axis, lo, hi) for o in range(outer) for g in range(groups) for lo, hi in ranges)
    per = max(1, PIECE_MACS // max(1, item))     # whole GEMMs per piece
    chunks = split(groups, -(-groups // per))
    return tuple((o, g0, g1, None, 0, 0) for o in range(outer) for g0, g1 in chunks)


def grouped_matmul(w: np.ndarray, x: np.ndarray, out: np.ndarray,
                   epilogue: Callable[[tuple], None] | None = None) -> np.ndarray:
    """out[o, g] = w[g] @ x[o, g] for w (G, M, K), x (O, G, K, N), out (O, G, M, N), then epilogue(block) on each
    piece's block of out: an index tuple (images, channels, columns) into out viewed as (O, G * M, N). Returns out."""
    hold_blas_single()
    n_out, groups, _, n = x.shape
    m = w.shape[1]
    pieces = gemm_pieces(n_out, groups, m, w.shape[2], n)

    def piece(i: int) -> None:
        o, g0, g1, axis, lo, hi = pieces[i]
        if o is None:
            if n_out == 1 and groups == 1:   # a plain 2-D GEMM: numpy's stacked matmul costs ~15 % more here
                np.matmul(w[0], x[0, 0], out=out[0, 0])
            else:
                np.matmul(w, x, out=out)
            block = (slice(None), slice(None), slice(None))
        elif axis is None:
            if g1 - g0 == 1:
                np.matmul(w[g0], x[o, g0], out=out[o, g0])
            else:
                np.matmul(w[g0:g1], x[o, g0:g1], out=out[o, g0:g1])
            block = (slice(o, o + 1), slice(g0 * m, g1 * m), slice(None))
        elif axis == "m":
            np.matmul(w[g0, lo:hi], x[o, g0], out=out[o, g0, lo:hi])
            block = (slice(o, o + 1), slice(g0 * m + lo, g0 * m + hi), slice(None))
        else:
            np.matmul(w[g0], x[o, g0, :, lo:hi], out=out[o, g0, :, lo:hi])
            block = (slice(o, o + 1), slice(g0 * m, g1 * m), slice(lo, hi))
        if epilogue is not None:
            epilogue(block)
    run_pieces(len(pieces), piece)
    return out
