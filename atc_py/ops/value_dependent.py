"""Ops whose output *shape* depends on the input *values*: NonZero (the coordinates of the non-zero elements)
and UniqueWithCountsExt2 (ONNX Unique: the distinct values or slices, first-occurrence indices, the inverse
mapping and the counts). Both run on the AICPU, as CANN's do.

Their infer returns -1 for the value-dependent dims unless the input is a constant (then they fold), so the
partitioner puts them in the dynamic-shape partition, whose host executor infers and runs them with the real
values (`infer_depend` = the data input: the host executor runs such an op and reads its output size)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .activation import norm_axis
from .core.base import AICPU, KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work
from .core.registry import register
from .elementwise import MOVE_TYPES

COUNT_TILING = TilingStruct(("numel", "Q"), ("found", "Q"))


@register
class NonZero(OpSpec):
    """Indices of the non-zero elements in row-major order: [rank, N] (transpose=True, ONNX) or [N, rank]."""
    op_type = "NonZero"
    inputs = ("x",)
    attrs = {"transpose": False, "dtype": "int64"}
    engine = AICPU
    dtypes = MOVE_TYPES
    tiling_struct = COUNT_TILING
    infer_depend = frozenset({0})

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if str(self.attr(node, "dtype")) not in ("int32", "int64"):
            raise OpError(f"dtype {self.attr(node, 'dtype')} is not int32 or int64")
        data = node.const_input(0)
        n = -1 if data is None else int(np.count_nonzero(data))
        rank = max(len(x.shape), 1)
        shape = (rank, n) if self.attr(node, "transpose") else (n, rank)
        return [TensorDesc(shape, str(self.attr(node, "dtype")), "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        d = ctx.outputs[0]
        found = d.shape[1] if self.attr(ctx.attrs, "transpose") else d.shape[0]
        return TilingResult(1, 0, COUNT_TILING.pack(numel=ctx.inputs[0].numel, found=max(found, 0)))

    def compute(self, args: KernelArgs, inputs):
        x = np.asarray(inputs[0])
        coords = np.array(np.nonzero(x.reshape(1) if x.ndim == 0 else x), dtype=args.outputs[0].dtype)
        if coords.shape[1] != args.tiling["found"]:
            raise OpError(f"{coords.shape[1]} non-zero elements, the output was sized for {args.tiling['found']}")
        return [coords if self.attr(args.attrs, "transpose") else coords.T.copy()]

    def work(self, ctx: TilingContext) -> Work:
        x = ctx.inputs[0]
        return Work(vector_ops=2 * x.numel, bytes=x.nbytes + ctx.outputs[0].nbytes, dtype=x.dtype)


UNIQUE_TILING = TilingStruct(("numel", "Q"), ("found", "Q"), ("axis", "q"))


@register
class UniqueWithCountsExt2(OpSpec):
    """ONNX Unique: y = the distinct elements (axis None: of the flattened input) or the distinct slices along
    `axis`, sorted or in order of first occurrence; idx = where each first occurs; inverse = the y-position of
    every input element/slice; counts. CANN's UniqueWithCountsExt2 (sorted, axis) with ONNX's extra idx."""
    op_type = "UniqueWithCountsExt2"
    inputs = ("x",)
    outputs = ("y", "idx", "inverse", "counts")
    attrs = {"sorted": True, "axis": None}
    engine = AICPU
    dtypes = MOVE_TYPES
    tiling_struct = UNIQUE_TILING
    infer_depend = frozenset({0})

    def _axis(self, attrs, rank) -> int | None:
        a = self.attr(attrs, "axis")
        if a is not None and (not isinstance(a, int) or isinstance(a, bool)):
            raise OpError(f"axis must be an integer, got {a!r}")
        return None if a is None else norm_axis(a, rank)

    def unique(self, x: np.ndarray, attrs):
        axis = self._axis(attrs, x.ndim)
        flat = x.reshape(-1) if axis is None else x
        y, idx, inv, counts = np.unique(flat, return_index=True, return_inverse=True, return_counts=True,
                                        axis=None if axis is None else axis)
        inv = inv.reshape(-1)
        if not self.attr(attrs, "sorted"):   # order of first occurrence
            order = np.argsort(idx, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            idx, counts, inv = idx[order], counts[order], rank[inv]
            y = np.take(flat, idx, axis=0 if axis is None else axis)
        return y, idx.astype(np.int64), inv.astype(np.int64), counts.astype(np.int64)

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        axis = self._axis(node.attrs, len(x.shape))
        data = node.const_input(0)
        if data is not None:
            y, idx, inv, counts = self.unique(np.asarray(data), node.attrs)
            return [TensorDesc(y.shape, x.dtype, "ND", "ND")] + [TensorDesc(a.shape, "int64", "ND", "ND")
                                                                 for a in (idx, inv, counts)]
        n_in = x.numel if axis is None else x.shape[axis]
        y_shape = (-1,) if axis is None else tuple(-1 if a == axis else d for a, d in enumerate(x.shape))
        return [TensorDesc(y_shape, x.dtype, "ND", "ND"), TensorDesc((-1,), "int64", "ND", "ND"),
                TensorDesc((n_in,), "int64", "ND", "ND"), TensorDesc((-1,), "int64", "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        axis = self._axis(ctx.attrs, len(x.shape))
        return TilingResult(1, 0, UNIQUE_TILING.pack(numel=x.numel, found=max(ctx.outputs[1].shape[0], 0),
                                                     axis=-1 if axis is None else axis))

    def compute(self, args: KernelArgs, inputs):
        y, idx, inv, counts = self.unique(np.asarray(inputs[0]), args.attrs)
        if idx.size != args.tiling["found"]:
            raise OpError(f"{idx.size} distinct values, the outputs were sized for {args.tiling['found']}")
        return [y, idx, inv, counts]

    def work(self, ctx: TilingContext) -> Work:
        x = ctx.inputs[0]
        n = max(2, x.numel)
        return Work(vector_ops=n * int(np.log2(n)), bytes=x.nbytes + sum(d.nbytes for d in ctx.outputs),
                    dtype=x.dtype)
