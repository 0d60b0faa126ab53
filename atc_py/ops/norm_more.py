"""More normalisations (CANN op types): LayerNormV3 (LayerNorm with mean and rstd outputs, ONNX's Mean and
InvStdDev), RmsNorm (y = x * rstd * gamma over the trailing dims), GroupNorm (per (n, group) statistics,
per-channel affine), MVNV2 (ONNX MeanVarianceNormalization over `axes`) and LpNorm (the p-norm over `axes`,
kept dims: ONNX LpNormalization divides by it).

Statistics are computed in fp32 (fp64 for double inputs), as the kernels accumulate; each op splits its
independent rows (or (n, group) planes) over the vector cores and computes the rows its blocks cover."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .activation import norm_axis
from .core.base import (KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work, cores_for,
                        covered, prod, split_rows)
from .elementwise import FLOAT_TYPES
from .core.elementwise_tiling import ELEMWISE_TILING, elementwise_tiling, run_blocks
from .norm import LayerNorm
from .reduce import reduce_axes
from .core.registry import register

ROWS_TILING = TilingStruct(("rows", "Q"), ("row_len", "Q"), ("rows_per_block", "Q"), ("epsilon", "f"))


def _acc(dtype) -> type:
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


@register
class LayerNormV3(LayerNorm):
    """LayerNorm whose third output is rstd = 1 / sqrt(variance + epsilon) (ONNX InvStdDev)."""
    op_type = "LayerNormV3"
    outputs = ("y", "mean", "rstd")
    dtypes = FLOAT_TYPES

    def compute(self, args: KernelArgs, inputs):
        y, mean, var = super().compute(args, inputs)
        return [y, mean, (1.0 / np.sqrt(var + np.float32(args.tiling["epsilon"]))).astype(np.float32)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops += 2 * ctx.outputs[2].numel   # add, rsqrt per row
        return w


def _rows_tiling(spec: OpSpec, ctx: TilingContext, rows: int, row_len: int, eps: float) -> TilingResult:
    block_dim, per = split_rows(rows, cores_for(spec, ctx.soc))
    return TilingResult(block_dim, 0, ROWS_TILING.pack(rows=rows, row_len=row_len, rows_per_block=per, epsilon=eps))


@register
class RmsNorm(OpSpec):
    """y = x / sqrt(mean(x^2) + epsilon) * gamma over the dims from `begin_norm_axis` (None: as many trailing
    dims as gamma has, CANN's rule; the ONNX frontend sets it); rstd is the second output."""
    op_type = "RmsNorm"
    inputs = ("x", "gamma")
    outputs = ("y", "rstd")
    attrs = {"epsilon": 1e-6, "begin_norm_axis": None}
    dtypes = FLOAT_TYPES
    tiling_struct = ROWS_TILING

    def _axis(self, attrs, x, g) -> int:
        a = self.attr(attrs, "begin_norm_axis")
        if a is not None and (not isinstance(a, int) or isinstance(a, bool)):
            raise OpError(f"begin_norm_axis must be an integer, got {a!r}")
        axis = len(x) - len(g) if a is None else norm_axis(a, len(x))
        if axis < 0:
            raise OpError(f"gamma {list(g)} has more dims than x {list(x)}")
        try:
            np.broadcast_shapes(tuple(x[axis:]), tuple(g))
        except ValueError:
            raise OpError(f"gamma {list(g)} does not broadcast to the normalised dims {list(x[axis:])}") from None
        return axis

    def infer(self, node: Node) -> list[TensorDesc]:
        x, g = node.input_desc(0), node.input_desc(1)
        axis = self._axis(node.attrs, x.shape, g.shape)
        stat = TensorDesc(x.shape[:axis] + (1,) * (len(x.shape) - axis), "float32", "ND", "ND")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format), stat]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        axis = self._axis(ctx.attrs, x.shape, ctx.inputs[1].shape)
        return _rows_tiling(self, ctx, prod(x.shape[:axis]), prod(x.shape[axis:]), float(self.attr(ctx.attrs, "epsilon")))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x, gamma = inputs
        acc = _acc(x.dtype)
        rows = x.reshape(t["rows"], t["row_len"]).astype(acc)
        rstd = np.zeros((t["rows"], 1), acc)
        end = covered(t["rows"], t["rows_per_block"], args.block_dim)   # rows are independent: one pass
        if end:
            rstd[:end] = 1.0 / np.sqrt(np.mean(np.square(rows[:end]), axis=1, keepdims=True) + acc(t["epsilon"]))
        y_shape = args.outputs[0].shape
        y = (rows * rstd).reshape(y_shape) * gamma.astype(acc)
        y.reshape(t["rows"], t["row_len"])[end:] = 0   # rows no block covered stay unwritten (zero)
        return [y.astype(args.outputs[0].dtype), rstd.astype(np.float32).reshape(args.outputs[1].shape)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * 4   # square, sum, scale, gamma
        w.vector_class = "norm"
        return w


GN_TILING = TilingStruct(("n", "Q"), ("c", "Q"), ("groups", "Q"), ("plane", "Q"), ("units_per_block", "Q"),
                         ("epsilon", "f"))


@register
class GroupNorm(OpSpec):
    """Normalise each (n, group) of C / num_groups channels, then the per-channel gamma and beta (ONNX
    GroupNormalization-21; the frontend expands opset 18's per-group scale and bias to channels)."""
    op_type = "GroupNorm"
    inputs = ("x", "gamma", "beta")
    outputs = ("y", "mean", "variance")
    attrs = {"num_groups": 1, "epsilon": 1e-5, "data_format": "NCHW", "is_training": False}
    dtypes = FLOAT_TYPES
    tiling_struct = GN_TILING

    def _geom(self, attrs, x, g, b):
        groups = int(self.attr(attrs, "num_groups"))
        if len(x) < 2 or groups < 1 or x[1] % groups:
            raise OpError(f"num_groups {groups} does not divide the channels of {list(x)}")
        if tuple(g) != (x[1],) or tuple(b) != (x[1],):
            raise OpError(f"gamma {list(g)} and beta {list(b)} must be [{x[1]}]")
        return x[0], x[1], groups, prod(x[2:])

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        n, _, groups, _ = self._geom(node.attrs, x.shape, node.input_desc(1).shape, node.input_desc(2).shape)
        stat = TensorDesc((n, groups), "float32", "ND", "ND")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format), stat, stat]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        n, c, groups, plane = self._geom(ctx.attrs, *(d.shape for d in ctx.inputs[:3]))
        block_dim, per = split_rows(n * groups, cores_for(self, ctx.soc))
        return TilingResult(block_dim, 0, GN_TILING.pack(n=n, c=c, groups=groups, plane=plane, units_per_block=per,
                                                         epsilon=float(self.attr(ctx.attrs, "epsilon"))))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x, gamma, beta = inputs
        acc = _acc(x.dtype)
        rows = t["n"] * t["groups"]
        units = x.reshape(rows, x.size // rows if rows else 0).astype(acc)   # -1 fails on a batch of 0
        mean = np.zeros((units.shape[0], 1), acc)
        var = np.zeros((units.shape[0], 1), acc)
        out = np.zeros_like(units)
        end = covered(units.shape[0], t["units_per_block"], args.block_dim)   # groups are independent: one pass
        if end:
            u = units[:end]
            mean[:end] = u.mean(axis=1, keepdims=True)
            var[:end] = np.square(u - mean[:end]).mean(axis=1, keepdims=True)
            out[:end] = (u - mean[:end]) / np.sqrt(var[:end] + acc(t["epsilon"]))
        y = out.reshape(t["n"], t["c"], t["plane"]) * gamma.astype(acc)[:, None] + beta.astype(acc)[:, None]
        y.reshape(units.shape)[end:] = 0
        stat = (t["n"], t["groups"])
        return [y.reshape(args.outputs[0].shape).astype(args.outputs[0].dtype),
                mean.reshape(stat).astype(np.float32), var.reshape(stat).astype(np.float32)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * 7   # mean, sub, square, mean, rsqrt-mul, scale, shift
        w.vector_class = "norm"
        return w


class AxesReduceNorm(OpSpec):
    """Base of the ops that reduce over a set of `axes` and use the result elementwise: the output elements
    are split over blocks (elementwise tiling) and each block writes its chunk of the result."""
    inputs = ("x",)
    dtypes = FLOAT_TYPES
    tiling_struct = ELEMWISE_TILING

    def _axes(self, attrs, rank) -> tuple[int, ...]:
        return reduce_axes(self.attr(attrs, "axes"), rank)

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 3, False)

    def result(self, x: np.ndarray, axes, attrs) -> np.ndarray:
        raise NotImplementedError

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        y = self.result(x.astype(_acc(x.dtype)), self._axes(args.attrs, x.ndim), args.attrs)
        dt = args.outputs[0].dtype
        return [run_blocks(args, [np.asarray(y).astype(dt).reshape(-1)], lambda v: v, dt)]


@register
class MVNV2(AxesReduceNorm):
    """(x - mean) / (sqrt(variance) + eps) over `axes` (ONNX MeanVarianceNormalization: eps = 1e-9 after the
    square root, as its function body adds it)."""
    op_type = "MVNV2"
    attrs = {"eps": 1e-9, "axes": [0, 2, 3]}

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        self._axes(node.attrs, len(x.shape))
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def result(self, x, axes, attrs):
        mean = x.mean(axis=axes, keepdims=True)
        var = np.maximum(np.square(x).mean(axis=axes, keepdims=True) - np.square(mean), 0)
        return (x - mean) / (np.sqrt(var) + float(self.attr(attrs, "eps")))

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 6
        w.vector_class = "norm"
        return w


@register
class LpNorm(AxesReduceNorm):
    """max((sum |x|^p)^(1/p), epsilon) over `axes`, dims kept when keepdim (p = 1, 2 or any positive integer);
    epsilon keeps a division by the norm finite (ONNX LpNormalization gives 0 for an all-zero slice)."""
    op_type = "LpNorm"
    attrs = {"p": 2, "axes": [], "keepdim": False, "epsilon": 1e-12}

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if int(self.attr(node, "p")) < 1:
            raise OpError(f"p = {self.attr(node, 'p')} is not a positive integer")
        axes = self._axes(node.attrs, len(x.shape))
        keep = bool(self.attr(node, "keepdim"))
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
        return [TensorDesc(shape, x.dtype, "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 2, False)

    def result(self, x, axes, attrs):
        p = int(self.attr(attrs, "p"))
        keep = bool(self.attr(attrs, "keepdim"))
        a = np.abs(x)
        if p == 1:
            norm = a.sum(axis=axes, keepdims=keep)
        elif p == 2:
            norm = np.sqrt(np.square(a).sum(axis=axes, keepdims=keep))
        else:
            norm = np.power(np.power(a, p).sum(axis=axes, keepdims=keep), 1.0 / p)
        return np.maximum(norm, float(self.attr(attrs, "epsilon")))

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * 3
        w.vector_class = "reduce"
        return w
