"""Reductions over constant axes (ReduceSumD, ReduceMeanD, ReduceMaxD, ReduceMinD, ReduceProdD, ReduceL2D,
ReduceLogSumExpD), ArgMaxD/ArgMinD, LogSoftmaxV2, and TopKV2 (AICPU).

Tiling splits the *output* elements over blocks; each block produces its part of the reduced tensor."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .activation import SoftmaxV2, norm_axis
from .base import AICPU, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work
from .elementwise import ELEMWISE_TILING, elementwise_tiling, run_blocks
from .registry import register

NUM = ("float32", "float16", "float64", "int32", "int64")


def reduce_axes(axes, rank: int) -> tuple[int, ...]:
    if axes is None or len(axes) == 0:
        return tuple(range(rank))
    out = []
    for a in axes:
        out.append(norm_axis(int(a), rank))
    if len(set(out)) != len(out):
        raise OpError(f"axes {list(axes)} repeat an axis")
    return tuple(sorted(out))


class ReduceOp(OpSpec):
    inputs = ("x",)
    attrs = {"axes": None, "keep_dims": False, "noop_with_empty_axes": False}
    dtypes = NUM
    tiling_struct = ELEMWISE_TILING
    ops_per_elem = 1

    @staticmethod
    def fn(x, axes, keep):
        raise NotImplementedError

    def _axes(self, attrs, rank):
        axes = self.attr(attrs, "axes")
        if (axes is None or len(axes) == 0) and self.attr(attrs, "noop_with_empty_axes"):
            return ()
        return reduce_axes(axes, rank)

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        axes = self._axes(node.attrs, len(x.shape))
        keep = bool(self.attr(node, "keep_dims"))
        shape = tuple((1 if i in axes else d) for i, d in enumerate(x.shape) if keep or i not in axes)
        return [TensorDesc(shape, x.dtype, "ND", x.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 2, False)

    def compute(self, args, inputs):
        x = inputs[0]
        axes = self._axes(args.attrs, x.ndim)
        full = self.fn(x, axes, True) if axes else x
        dt = args.outputs[0].dtype
        return [run_blocks(args, [np.asarray(full).astype(dt).reshape(-1)], lambda v: v, dt)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * self.ops_per_elem
        return w


def _reduce(op_type: str, fn, ops: int = 1):
    return register(type(op_type, (ReduceOp,), {"op_type": op_type, "fn": staticmethod(fn), "ops_per_elem": ops,
                                               "__doc__": f"{op_type}: reduction over constant axes."}))


_reduce("ReduceSumD", lambda x, a, k: np.sum(x, axis=a, keepdims=k))
_reduce("ReduceMeanD", lambda x, a, k: np.mean(x, axis=a, keepdims=k), 2)
_reduce("ReduceMaxD", lambda x, a, k: np.max(x, axis=a, keepdims=k))
_reduce("ReduceMinD", lambda x, a, k: np.min(x, axis=a, keepdims=k))
_reduce("ReduceProdD", lambda x, a, k: np.prod(x, axis=a, keepdims=k))
_reduce("ReduceL2D", lambda x, a, k: np.sqrt(np.sum(np.square(x), axis=a, keepdims=k)), 2)
_reduce("ReduceL1D", lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k), 2)
_reduce("ReduceSumSquareD", lambda x, a, k: np.sum(np.square(x), axis=a, keepdims=k), 2)
_reduce("ReduceLogSumExpD", lambda x, a, k: np.log(np.sum(np.exp(x), axis=a, keepdims=k)), 3)
_reduce("ReduceLogSumD", lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)), 2)


class ArgOp(OpSpec):
    """Index of the max/min along `dimension` (first occurrence, or last with select_last_index); int64."""
    inputs = ("x",)
    attrs = {"dimension": 0, "keep_dims": True, "select_last_index": False}
    dtypes = NUM
    tiling_struct = ELEMWISE_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        axis = norm_axis(int(self.attr(node, "dimension")), len(x.shape))
        keep = bool(self.attr(node, "keep_dims"))
        shape = tuple((1 if i == axis else d) for i, d in enumerate(x.shape) if keep or i != axis)
        return [TensorDesc(shape, "int64", "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 2, False)

    def compute(self, args, inputs):
        x = inputs[0]
        axis = norm_axis(int(self.attr(args.attrs, "dimension")), x.ndim)
        if self.attr(args.attrs, "select_last_index"):
            idx = x.shape[axis] - 1 - self.fn(np.flip(x, axis), axis=axis)
        else:
            idx = self.fn(x, axis=axis)
        return [run_blocks(args, [np.asarray(idx, np.int64).reshape(-1)], lambda v: v, "int64")]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * 2
        return w


@register
class ArgMaxD(ArgOp):
    op_type = "ArgMaxD"
    fn = staticmethod(np.argmax)


@register
class ArgMinD(ArgOp):
    op_type = "ArgMinD"
    fn = staticmethod(np.argmin)


@register
class LogSoftmaxV2(SoftmaxV2):
    """SoftmaxV2's row split and kernel walk with log-softmax rows."""
    op_type = "LogSoftmaxV2"
    dtypes = ("float32", "float16", "float64")
    ops_per_elem = 6

    @staticmethod
    def rows(r):
        s = r - r.max(axis=1, keepdims=True)
        return (s - np.log(np.exp(s).sum(axis=1, keepdims=True))).astype(r.dtype)


TOPK_TILING = TilingStruct(("rows", "Q"), ("axis_len", "Q"), ("k", "Q"))


@register
class TopKV2(OpSpec):
    """The k largest (or smallest) along an axis, sorted, and their int64 indices. Runs on the AICPU."""
    op_type = "TopKV2"
    inputs = ("x",)
    outputs = ("values", "indices")
    attrs = {"k": 1, "dim": -1, "largest": True, "sorted": True}
    engine = AICPU
    dtypes = NUM
    tiling_struct = TOPK_TILING

    def _geom(self, x, attrs):
        axis = norm_axis(int(self.attr(attrs, "dim")), len(x.shape))
        k = int(self.attr(attrs, "k"))
        if not 0 <= k <= x.shape[axis]:
            raise OpError(f"k={k} is outside [0, {x.shape[axis]}]")
        return axis, k

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        axis, k = self._geom(x, node.attrs)
        shape = tuple(k if i == axis else d for i, d in enumerate(x.shape))
        return [TensorDesc(shape, x.dtype, "ND", "ND"), TensorDesc(shape, "int64", "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        axis, k = self._geom(x, ctx.attrs)
        return TilingResult(1, 0, TOPK_TILING.pack(rows=x.numel // max(1, x.shape[axis]), axis_len=x.shape[axis], k=k))

    def compute(self, args, inputs):
        x = inputs[0]
        axis, k = self._geom(x, args.attrs)
        key = -x if self.attr(args.attrs, "largest") else x
        # stable sort: ties keep the lower index first (ONNX TopK)
        order = np.argsort(key, axis=axis, kind="stable")
        idx = np.take(order, np.arange(k), axis=axis)
        return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)]

    def work(self, ctx: TilingContext) -> Work:
        n = ctx.inputs[0].numel
        return Work(vector_ops=n * max(1, int(np.log2(max(2, ctx.inputs[0].shape[-1])))),
                    bytes=ctx.inputs[0].nbytes + sum(d.nbytes for d in ctx.outputs), dtype=ctx.inputs[0].dtype)
