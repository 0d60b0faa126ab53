"""Activations: Relu, Sigmoid, Tanh (elementwise) and SoftmaxV2 (row-wise over an axis)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import (KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work, cores_for,
                        covered, prod, split_rows)
from .elementwise import UnaryOp
from .core.impl_modes import HIGH_PERFORMANCE
from .core.registry import register


@register
class Relu(UnaryOp):
    op_type = "Relu"
    fn = staticmethod(lambda x: np.maximum(x, 0))   # a Python 0 keeps x's dtype (NEP 50)


@register
class Sigmoid(UnaryOp):
    op_type = "Sigmoid"
    vector_intrinsics = ("vexp",)
    vector_ops_per_elem = 4  # exp, add, reciprocal, negate

    @staticmethod
    def fn(x):
        return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype)


@register
class Tanh(UnaryOp):
    op_type = "Tanh"
    vector_intrinsics = ("vexp",)
    vector_ops_per_elem = 5
    fn = staticmethod(np.tanh)


SOFTMAX_TILING = TilingStruct(("outer", "Q"), ("axis_len", "Q"), ("inner", "Q"), ("rows_per_block", "Q"))


def row_split_tiling(spec: OpSpec, ctx: TilingContext, shape, axis: int) -> tuple[int, bytes]:
    """Split the rows (outer × inner positions) of a reduction over `axis` across blocks."""
    outer, axis_len, inner = prod(shape[:axis]), shape[axis], prod(shape[axis + 1:])
    block_dim, per = split_rows(outer * inner, cores_for(spec, ctx.soc))
    return block_dim, SOFTMAX_TILING.pack(outer=outer, axis_len=axis_len, inner=inner, rows_per_block=per)


def rows_view(x: np.ndarray, t: dict) -> np.ndarray:
    """(rows, axis_len) view of x for the reduction the tiling describes."""
    return x.reshape(t["outer"], t["axis_len"], t["inner"]).transpose(0, 2, 1).reshape(-1, t["axis_len"])


def rows_unview(rows: np.ndarray, t: dict, shape) -> np.ndarray:
    return rows.reshape(t["outer"], t["inner"], t["axis_len"]).transpose(0, 2, 1).reshape(shape)


def run_row_blocks(args: KernelArgs, x: np.ndarray, fn) -> np.ndarray:
    t = args.tiling
    rows = rows_view(x, t)
    out = np.zeros_like(rows)
    end = covered(rows.shape[0], t["rows_per_block"], args.block_dim)   # rows are independent: one call
    if end:
        out[:end] = fn(rows[:end])
    return rows_unview(out, t, args.outputs[0].shape)


def norm_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise OpError(f"axis {axis} is out of range for rank {rank}")
    return axis % max(rank, 1)


@register
class SoftmaxV2(OpSpec):
    """Softmax along one axis. Two implementations (ops/core/impl_modes.py): high_performance, the default, computes
    fp16 rows in fp16 (the subtract, exp and divide each rounded); high_precision casts them to fp32 and rounds
    once. TBE's SoftmaxV2 keeps only the max and subtract in fp16 in either mode (its exp, sum and divide in fp32
    where vexp takes fp32, its mode choosing the reciprocal's precision): atc-py's high_performance rounds more
    than CANN's (ASSUMED, the model this library follows)."""
    op_type = "SoftmaxV2"
    vector_intrinsics = ("vexp",)
    impl_default = HIGH_PERFORMANCE
    inputs = ("x",)
    attrs = {"axes": [-1]}
    dtypes = ("float32", "float16", "float64", "bfloat16")
    tiling_struct = SOFTMAX_TILING
    ops_per_elem = 5  # max, sub, exp, sum, div

    @staticmethod
    def rows(r):
        e = np.exp(r - r.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).astype(r.dtype)

    def infer(self, node: Node) -> list[TensorDesc]:
        d = node.input_desc(0)
        norm_axis(self.attr(node, "axes")[0], len(d.shape))
        return [TensorDesc(d.shape, d.dtype, d.format, d.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        shape = ctx.inputs[0].shape
        axis = norm_axis(self.attr(ctx.attrs, "axes")[0], len(shape))
        block_dim, data = row_split_tiling(self, ctx, shape, axis)
        return TilingResult(block_dim, 0, data)

    def compute(self, args: KernelArgs, inputs):
        return [run_row_blocks(args, inputs[0], self.rows)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= self.ops_per_elem
        return w
