"""Reductions over constant axes (ReduceSumD, ReduceMeanD, ReduceMaxD, ReduceMinD, ReduceProdD, ReduceL2D,
ReduceLogSumExpD), ArgMaxD/ArgMinD, LogSoftmaxV2, and TopKV2 (AICPU).

Tiling splits the *output* elements over blocks and, when there are too few of them for the cores (a full
reduction has one), the reduced elements too: each of a output chunk's `splits` blocks reduces its share of the
reduced elements to a partial, and after a cross-core sync one block combines the partials (atomic accumulation
into the output; CANN's reduce kernels do the same). A full reduction of 64M elements runs on every core."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..ir.dtypes import is_float
from ..ir.graph import Node, TensorDesc
from .activation import SoftmaxV2, norm_axis
from .core.base import (
    AICPU,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    Work,
    block_align_elems,
    ceil_div,
    cores_for,
    split_rows,
)
from .core.elementwise_tiling import run_blocks
from .core.registry import register
from .elementwise import NUM_TYPES

NUM = NUM_TYPES
REDUCE_TILING = TilingStruct(("total", "Q"), ("block_len", "Q"), ("ub_factor", "I"), ("broadcast", "I"),
                             ("splits", "I"), ("reduce_len", "Q"))
MIN_SPLIT_ELEMS = 4096   # a split of the reduced elements reduces at least this many (16 UB blocks of fp32)
PARTIAL_BYTES = 4        # partials are fp32


def reduce_tiling(spec: OpSpec, ctx: TilingContext) -> TilingResult:
    """Output elements over the cores in 32-byte-aligned chunks; the reduced elements split as well when the
    output chunks leave cores idle."""
    out, x = ctx.outputs[0], ctx.inputs[0]
    total = out.numel
    red = x.numel // max(1, total)
    cores = cores_for(spec, ctx.soc)
    align = block_align_elems(ctx.soc, out.dtype)
    block_dim, block_len = split_rows(total, cores, align)
    free = cores // max(1, block_dim)
    splits = max(1, min(free, red // MIN_SPLIT_ELEMS)) if free >= 2 else 1
    ub_factor = max(align, (ctx.soc.ub_size // (4 * np.dtype(x.dtype).itemsize)) // align * align)
    data = REDUCE_TILING.pack(total=total, block_len=block_len, ub_factor=ub_factor, broadcast=0, splits=splits,
                              reduce_len=red)
    return TilingResult(block_dim * splits, int(splits > 1), data)


def reduce_block_work(spec: OpSpec, ctx: TilingContext, ops_per_elem: int) -> Work:
    """One block: its output chunk's share of the reduced elements, and with a split the combine step."""
    t = REDUCE_TILING.unpack(spec.tiling(ctx).tiling_data)
    x, out = ctx.inputs[0], ctx.outputs[0]
    per, splits, red = min(t["block_len"], t["total"]), t["splits"], t["reduce_len"]
    elems = per * ceil_div(red, splits)
    w = Work(vector_ops=elems * ops_per_elem, bytes=elems * np.dtype(x.dtype).itemsize + per * np.dtype(out.dtype).itemsize,
             dtype=x.dtype, vector_class="reduce", out_elems=per)
    if splits > 1:
        w.bytes += per * splits * PARTIAL_BYTES
        w.vector_ops += per * splits
        w.syncs = 1
    return w


def split_args(args):
    """The launch as its output chunks see it: block_dim // splits complete chunks."""
    return replace(args, block_dim=args.block_dim // max(1, args.tiling.get("splits", 1)))


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
    tiling_struct = REDUCE_TILING
    tiling_keys = (0, 1)
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
        return reduce_tiling(self, ctx)

    def compute(self, args, inputs):
        x = inputs[0]
        axes = self._axes(args.attrs, x.ndim)
        full = self.fn(x, axes, True) if axes else x
        dt = args.outputs[0].dtype
        return [run_blocks(split_args(args), [np.asarray(full).astype(dt).reshape(-1)], lambda v: v, dt)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * self.ops_per_elem
        w.vector_class = "reduce"
        t = REDUCE_TILING.unpack(self.tiling(ctx).tiling_data)
        if t["splits"] > 1:   # the partials, written and read back by the combining blocks
            w.bytes += 2 * t["total"] * t["splits"] * PARTIAL_BYTES
            w.vector_ops += t["total"] * t["splits"]
        return w

    def block_work(self, ctx: TilingContext, block_dim: int) -> Work:
        return reduce_block_work(self, ctx, self.ops_per_elem)


def _reduce(op_type: str, fn, ops: int = 1, dtypes=NUM):
    return register(type(op_type, (ReduceOp,), {"op_type": op_type, "fn": staticmethod(fn), "ops_per_elem": ops,
                                               "dtypes": dtypes,
                                               "__doc__": f"{op_type}: reduction over constant axes."}))


def _extreme(x: np.ndarray, largest: bool):
    """The identity of max (min): the lowest (highest) value of x's dtype, so an empty set reduces to it
    (ONNX: ReduceMax of nothing is -inf for floats, the type's minimum for integers, False for bool)."""
    if x.dtype == np.bool_:
        return not largest
    if is_float(x.dtype.name):
        return -np.inf if largest else np.inf
    info = np.iinfo(x.dtype)
    return info.min if largest else info.max


_reduce("ReduceSumD", lambda x, a, k: np.sum(x, axis=a, keepdims=k))
_reduce("ReduceMeanD", lambda x, a, k: np.mean(x, axis=a, keepdims=k), 2)
_reduce("ReduceMaxD", lambda x, a, k: np.max(x, axis=a, keepdims=k, initial=_extreme(x, True)), 1, NUM + ("bool",))
_reduce("ReduceMinD", lambda x, a, k: np.min(x, axis=a, keepdims=k, initial=_extreme(x, False)), 1, NUM + ("bool",))
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
    tiling_struct = REDUCE_TILING
    tiling_keys = (0, 1)

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        axis = norm_axis(int(self.attr(node, "dimension")), len(x.shape))
        keep = bool(self.attr(node, "keep_dims"))
        shape = tuple((1 if i == axis else d) for i, d in enumerate(x.shape) if keep or i != axis)
        return [TensorDesc(shape, "int64", "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return reduce_tiling(self, ctx)

    def compute(self, args, inputs):
        x = inputs[0]
        args = split_args(args)
        axis = norm_axis(int(self.attr(args.attrs, "dimension")), x.ndim)
        if self.attr(args.attrs, "select_last_index"):
            idx = x.shape[axis] - 1 - self.fn(np.flip(x, axis), axis=axis)
        else:
            idx = self.fn(x, axis=axis)
        return [run_blocks(args, [np.asarray(idx, np.int64).reshape(-1)], lambda v: v, "int64")]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * 2
        w.vector_class = "reduce"
        return w

    def block_work(self, ctx: TilingContext, block_dim: int) -> Work:
        return reduce_block_work(self, ctx, 2)


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
    """SoftmaxV2's row split and kernel walk with log-softmax rows, and its two implementations (TBE's
    LogSoftmaxV2 computes fp16 in fp32 in either mode, its mode choosing an fp32 input's max: atc-py's
    high_performance rounds more than CANN's, as SoftmaxV2's)."""
    op_type = "LogSoftmaxV2"
    vector_intrinsics = ("vexp", "vln")
    dtypes = ("float32", "float16", "float64")
    ops_per_elem = 6
    fp16_head_ops = 0   # all of its passes in fp32 for fp16 rows

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
        if self.attr(args.attrs, "largest"):   # integers: ~x reverses the order without -x's wrap-around
            key = ~x if x.dtype.kind in "iu" else -x
        else:
            key = x
        # stable sort: ties keep the lower index first (ONNX TopK)
        order = np.argsort(key, axis=axis, kind="stable")
        idx = np.take(order, np.arange(k), axis=axis)
        return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)]

    def work(self, ctx: TilingContext) -> Work:
        n = ctx.inputs[0].numel
        return Work(vector_ops=n * max(1, int(np.log2(max(2, ctx.inputs[0].shape[-1])))),
                    bytes=ctx.inputs[0].nbytes + sum(d.nbytes for d in ctx.outputs), dtype=ctx.inputs[0].dtype)
