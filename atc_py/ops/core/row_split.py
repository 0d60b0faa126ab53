"""A base for ops whose work splits into independent rows (boxes, planes, sequences, frames...): tiling gives
each block `rows_per_block` consecutive rows, the kernel computes the rows the blocks cover and leaves the
rest zero, as a launch with stale tiling would. Each op says what a row is (`rows(ctx)`)."""
from __future__ import annotations

import numpy as np

from .base import KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, cores_for, covered, split_rows

ROWS_TILING = TilingStruct(("rows", "Q"), ("rows_per_block", "Q"))


class RowSplitOp(OpSpec):
    tiling_struct = ROWS_TILING

    def rows(self, ctx: TilingContext) -> int:
        """Independent rows of the launch; the default is the first dim of output 0."""
        out = ctx.outputs[0].shape
        return int(out[0]) if out else 1

    def tiling(self, ctx: TilingContext) -> TilingResult:
        rows = self.rows(ctx)
        cores = 1 if self.engine == "AICPU" else cores_for(self, ctx.soc)
        block_dim, per = split_rows(rows, cores)
        return TilingResult(block_dim, 0, ROWS_TILING.pack(rows=rows, rows_per_block=per))

    @staticmethod
    def covered_rows(args: KernelArgs) -> int:
        return covered(args.tiling["rows"], args.tiling["rows_per_block"], args.block_dim)

    def keep_covered(self, args: KernelArgs, out: np.ndarray, axis: int = 0) -> np.ndarray:
        """Zero the rows (along `axis`) past what the launch's blocks cover."""
        end = self.covered_rows(args)
        if out.ndim == 0:   # a scalar is one row (rows() counts it so)
            return out if end >= 1 else np.zeros_like(out)
        if end < out.shape[axis]:
            index = [slice(None)] * out.ndim
            index[axis] = slice(end, None)
            out[tuple(index)] = 0
        return out


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < max(rank, 1):
        raise OpError(f"{what} {axis} is out of range for rank {rank}")
    return a


def ints(v, n: int | None = None, what: str = "attribute") -> list[int]:
    out = [int(a) for a in np.asarray(v if v is not None else []).reshape(-1)]
    if n is not None and len(out) != n:
        raise OpError(f"{what} {out} must have {n} values")
    return out
