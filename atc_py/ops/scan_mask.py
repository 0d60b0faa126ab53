"""Trilu, CumSum and Cumprod: standard ops whose tiling reads an input value (k / axis) when it is not a constant.

Trilu depends on input 1 (k) with placements {HOST, AICPU}; CumSum on input 1 (axis) with {HOST} only,
so CumSum fails the tiling-sink gate and is forced dynamic when its axis comes from the device. Cumprod is
CumSum's row scan with products.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import (
    HOST,
    ON_AICPU,
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    Work,
    check_tiling_shape,
    cores_for,
    covered,
    prod,
    split_rows,
)
from .core.registry import register
from .elementwise import FLOAT_TYPES

TRILU_TILING = TilingStruct(("batch", "Q"), ("rows", "Q"), ("cols", "Q"), ("mats_per_block", "Q"), ("k", "q"),
                            ("upper", "B"))


def scalar_value(ctx: TilingContext, index: int, default: int, name: str) -> int:
    v = ctx.depend_values.get(index)
    if v is None:
        return default
    arr = np.asarray(v).reshape(-1)
    if arr.size != 1:
        raise OpError(f"input '{name}' must hold one value, got {arr.size}")
    return int(arr[0])


@register
class Trilu(OpSpec):
    op_type = "Trilu"
    inputs = ("x", "k?")
    attrs = {"upper": 1}
    dtypes = ("float32", "float16", "int32", "int64")
    tiling_depend = frozenset({1})
    tiling_placements = frozenset({HOST, ON_AICPU})
    tiling_keys = (0, 1)  # lower / upper
    tiling_struct = TRILU_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if len(x.shape) < 2:
            raise OpError(f"Trilu needs rank >= 2, got {list(x.shape)}")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        k = scalar_value(ctx, 1, 0, "k")
        batch, rows, cols = prod(x.shape[:-2]), x.shape[-2], x.shape[-1]
        block_dim, per = split_rows(batch, cores_for(self, ctx.soc))
        upper = int(bool(self.attr(ctx.attrs, "upper")))
        return TilingResult(block_dim, upper, TRILU_TILING.pack(batch=batch, rows=rows, cols=cols,
                                                                mats_per_block=per, k=k, upper=upper))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        check_tiling_shape("x", np.reshape(inputs[0], -1), (t["batch"] * t["rows"] * t["cols"],))
        x = inputs[0].reshape(t["batch"], t["rows"], t["cols"])
        keep = np.triu(np.ones((t["rows"], t["cols"]), bool), t["k"]) if t["upper"] else \
            np.tril(np.ones((t["rows"], t["cols"]), bool), t["k"])
        out = np.zeros_like(x)
        end = covered(t["batch"], t["mats_per_block"], args.block_dim)   # matrices are independent: one call
        out[:end] = np.where(keep, x[:end], 0)
        return [out.reshape(args.outputs[0].shape)]


CUMSUM_TILING = TilingStruct(("outer", "Q"), ("axis_len", "Q"), ("inner", "Q"), ("rows_per_block", "Q"),
                             ("axis", "q"), ("exclusive", "B"), ("reverse", "B"))


@register
class Cumsum(OpSpec):
    op_type = "Cumsum"
    inputs = ("x", "axis")
    attrs = {"exclusive": 0, "reverse": 0}
    dtypes = ("float32", "float16", "float64", "int32", "int64", "uint32", "uint64")
    tiling_depend = frozenset({1})
    tiling_placements = frozenset({HOST})
    tiling_struct = CUMSUM_TILING
    scan = staticmethod(np.cumsum)   # the running operation (Cumprod: np.cumprod) ...
    identity = 0                     # ... and what an exclusive scan starts from

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        rank = max(len(x.shape), 1)
        axis = scalar_value(ctx, 1, 0, "axis")
        if not -rank <= axis < rank:
            raise OpError(f"axis {axis} is out of range for rank {rank}")
        axis %= rank
        shape = x.shape or (1,)
        outer, axis_len, inner = prod(shape[:axis]), shape[axis], prod(shape[axis + 1:])
        block_dim, per = split_rows(outer * inner, cores_for(self, ctx.soc))
        data = CUMSUM_TILING.pack(outer=outer, axis_len=axis_len, inner=inner, rows_per_block=per, axis=axis,
                                  exclusive=int(bool(self.attr(ctx.attrs, "exclusive"))),
                                  reverse=int(bool(self.attr(ctx.attrs, "reverse"))))
        return TilingResult(block_dim, 0, data)

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        check_tiling_shape("x", np.reshape(inputs[0], -1), (t["outer"] * t["axis_len"] * t["inner"],))
        x = inputs[0].reshape(t["outer"], t["axis_len"], t["inner"])
        rows = x.transpose(0, 2, 1).reshape(t["outer"] * t["inner"], t["axis_len"])   # (a -1 is ambiguous at 0)
        out = np.zeros_like(rows)
        end = covered(rows.shape[0], t["rows_per_block"], args.block_dim)   # rows are independent: one pass
        if end:
            r = rows[:end][:, ::-1] if t["reverse"] else rows[:end]
            c = self.scan(r, axis=1, dtype=r.dtype)
            if t["exclusive"]:
                c = np.concatenate([np.full_like(c[:, :1], self.identity), c[:, :-1]], axis=1)
            out[:end] = c[:, ::-1] if t["reverse"] else c
        return [out.reshape(t["outer"], t["inner"], t["axis_len"]).transpose(0, 2, 1).reshape(args.outputs[0].shape)]

    def work(self, ctx: TilingContext) -> Work:
        return super().work(ctx)


@register
class Cumprod(Cumsum):
    """Running product along an axis (ONNX CumProd): Cumsum's tiling and row walk with products; an exclusive
    scan starts from 1."""
    op_type = "Cumprod"
    dtypes = FLOAT_TYPES + ("int32", "int64", "uint32", "uint64")
    scan = staticmethod(np.cumprod)
    identity = 1
