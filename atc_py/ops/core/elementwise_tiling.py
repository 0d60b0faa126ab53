"""The elementwise tiling and the kernels' walk over it, shared by every op whose output splits into runs of
consecutive elements (the elementwise family, data movement, the ops that compute a whole result and write it
block by block).

Tiling: the flattened output is split into `block_dim` equal, 32-byte-aligned chunks; each block
streams its chunk through UB in passes of `ub_factor` elements. The kernel walks exactly those
chunks, so it computes what the tiling says, not what the shapes say.
"""
from __future__ import annotations

import numpy as np

from .base import (
    KernelArgs,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    block_align_elems,
    cores_for,
    covered,
    split_rows,
)
from .host_pool import cuts, run_pieces

ELEMWISE_TILING = TilingStruct(("total", "Q"), ("block_len", "Q"), ("ub_factor", "I"), ("broadcast", "I"))


def elementwise_tiling(spec: OpSpec, ctx: TilingContext, n_buffers: int, broadcast: bool,
                       cores: int | None = None) -> TilingResult:
    """Blocks of consecutive output elements over the op's cores (or the `cores` its kernel's own split uses)."""
    out = ctx.outputs[0]
    total = out.numel
    align = block_align_elems(ctx.soc, out.dtype)
    block_dim, block_len = split_rows(total, cores or cores_for(spec, ctx.soc), align)
    # UB holds n_buffers tensors, double-buffered
    ub_factor = max(align, (ctx.soc.ub_size // (2 * n_buffers * np.dtype(out.dtype).itemsize)) // align * align)
    data = ELEMWISE_TILING.pack(total=total, block_len=block_len, ub_factor=ub_factor, broadcast=int(broadcast))
    return TilingResult(block_dim, int(broadcast), data)


PARALLEL_MIN_ELEMS = 1 << 16   # outputs at least this big are cut for the host pool (numpy releases the GIL)


# ufuncs of well under a ns an element on float32: memory-bound, worth cutting only when huge (host_pool.cuts)
CHEAP_UFUNCS = frozenset((np.add, np.subtract, np.multiply, np.maximum, np.minimum, np.fmax, np.fmin, np.negative,
                          np.absolute, np.equal, np.not_equal, np.greater, np.greater_equal, np.less, np.less_equal,
                          np.logical_and, np.logical_or, np.logical_not, np.bitwise_and, np.bitwise_or,
                          np.bitwise_xor, np.invert, np.left_shift, np.right_shift, np.sign, np.copysign))


def for_blocks(args: KernelArgs, body, heavy: bool = False) -> None:
    """Call body(lo, hi) over the flattened output as the tiling splits it into blocks: block b covers
    [b * block_len, min(total, (b + 1) * block_len)). The blocks are consecutive, so elementwise bodies run
    once over their union (what the blocks compute, minus a Python call per block); a big output is cut for the
    host pool (every element is computed alone: any cut gives the same bits), from a smaller size when the body
    is `heavy` (a few ns an element). Bytes past the last block stay untouched."""
    end = covered(args.tiling["total"], args.tiling["block_len"], args.block_dim)
    if end == 0:
        return
    ranges = cuts(end, end * 4, 64, heavy) if end >= PARALLEL_MIN_ELEMS else [(0, end)]
    if len(ranges) > 1:
        run_pieces(len(ranges), lambda i: body(*ranges[i]))
        return
    body(0, end)


def run_blocks(args: KernelArgs, flat_inputs: list[np.ndarray], fn, out_dtype) -> np.ndarray:
    """Apply fn to each block's chunk of the flattened inputs, as the tiling splits them. A ufunc writes
    its result straight into the output (no temporary and second copy); bytes past the blocks stay zero."""
    total = args.outputs[0].numel
    end = covered(args.tiling["total"], args.tiling["block_len"], args.block_dim)
    out = (np.empty if end >= total else np.zeros)(total, dtype=out_dtype)
    if isinstance(fn, np.ufunc) and fn.nout == 1:
        def body(lo, hi):
            fn(*(x[lo:hi] for x in flat_inputs), out=out[lo:hi], casting="unsafe")
    else:
        def body(lo, hi):
            out[lo:hi] = fn(*(x[lo:hi] for x in flat_inputs))
    half = np.dtype(out_dtype) == np.float16 or any(x.dtype == np.float16 for x in flat_inputs)
    for_blocks(args, body, heavy=half or (isinstance(fn, np.ufunc) and fn not in CHEAP_UFUNCS))
    return out.reshape(args.outputs[0].shape)
