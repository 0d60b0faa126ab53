"""The cube kernels' GEMMs on the host, cut into pieces run on the host pool (host_pool.py).

`grouped_matmul` computes out[o, g] = w[g] @ x[o, g] — a convolution's groups over its images, a batched MatMul's
batch, or one 2-D GEMM (one group, one image). Each piece is single-threaded BLAS calls writing their own block of
the output, followed by the caller's epilogue on that block (bias, residual, ReLU, the cast to the output dtype)
while it is in cache. Two kinds of cut:
  * a GEMM of at least 2 x PIECE_MACS multiply-adds is cut into panels of its rows (M) or columns (N): a panel
    rounds differently from the whole GEMM (OpenBLAS's edge tiles accumulate in another order), so the panels
    are decided by the shapes alone and one thread runs the same panels one after the other;
  * smaller GEMMs stay whole, and several of them (groups, images) are cut into ranges: numpy runs a stack of
    GEMMs as one BLAS call per GEMM, the same call whatever range it is in, so these ranges may follow the
    thread count (none on one thread: one numpy call, as before).
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from . import host_pool
from .host_pool import hold_blas_single, run_pieces, split

PIECE_MACS = 8 << 20     # a GEMM of at least 2x this many multiply-adds (~0.4 ms on one core) is cut into panels
MAX_PANELS = 2            # ...of at least PIECE_MACS each, at most this many: each panel packs the operand it shares
#                           again, and every piece costs a thread hand-off (~0.1 ms on a VM), so a 2-core machine
#                           gains most from 2 (ResNet-50: 2 threads 1.3-1.6x faster than 1, against 1.2-1.3x with 4 or 8)
ROW_ALIGN, COL_ALIGN = 16, 32   # panel edges on whole SIMD tiles / cache lines
RANGE_MIN_MACS = 16 << 20  # whole GEMMs are cut into ranges for the host pool when they add up to this many (below,
#                           the hand-offs cost more than they save: ShuffleNet's grouped 1x1 convs ran 2x slower cut)


@functools.lru_cache(maxsize=4096)
def panel_pieces(outer: int, groups: int, m: int, k: int, n: int) -> tuple | None:
    """Panels of `outer` x `groups` GEMMs (m x k) @ (k x n) too big to stay whole, decided from these numbers only:
    tuples (o, g, g + 1, axis, lo, hi), "m" / "n" — rows / columns lo..hi of GEMM (o, g); None when they stay whole."""
    item = m * k * n
    if item < 2 * PIECE_MACS:
        return None
    parts = min(MAX_PANELS, item // PIECE_MACS)
    axis, ranges = ("n", split(n, parts, COL_ALIGN)) if n >= m else ("m", split(m, parts, ROW_ALIGN))
    return tuple((o, g, g + 1, axis, lo, hi) for o in range(outer) for g in range(groups) for lo, hi in ranges)


def gemm_pieces(outer: int, groups: int, m: int, k: int, n: int, threads: int | None = None) -> tuple:
    """The pieces of `outer` x `groups` GEMMs: tuples (o, g0, g1, axis, lo, hi): o None — everything in one call;
    axis None — whole GEMMs g0..g1 of image o (o0..o1 as (o, None) ranges when there is one group); "m" / "n" —
    panels (panel_pieces). Whole GEMMs are cut for `threads` (HOST_THREADS) threads."""
    panels = panel_pieces(outer, groups, m, k, n)
    if panels is not None:
        return panels
    threads = host_pool.HOST_THREADS if threads is None else threads
    items = outer * groups
    if threads <= 1 or items <= 1 or items * m * k * n < RANGE_MIN_MACS:
        return ((None, 0, groups, None, 0, 0),)
    if groups == 1:       # images
        return tuple(((o0, o1), 0, 1, None, 0, 0) for o0, o1 in split(outer, 2 * threads))
    per_image = max(1, -(-2 * threads // outer))
    return tuple((o, g0, g1, None, 0, 0) for o in range(outer) for g0, g1 in split(groups, per_image))


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
        elif isinstance(o, tuple):     # a range of images of one group: w broadcast over them
            np.matmul(w[0], x[o[0]:o[1], 0], out=out[o[0]:o[1], 0])
            block = (slice(*o), slice(None), slice(None))
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
