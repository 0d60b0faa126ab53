"""Normalisations of each row over its trailing dims (CANN op types): LayerNorm, LayerNormV3 (LayerNorm with mean
and rstd outputs, ONNX's Mean and InvStdDev) and RmsNorm (y = x * rstd * gamma).

Each op splits its independent rows over the vector cores and computes the rows its blocks cover. Statistics are
computed in fp32 (fp64 for double inputs), as the kernels accumulate, or as the SoC and the implementation mode
give (LayerNorm). The row is normalised as ONNX's function bodies write it and TBE's kernels compute it: times the
reciprocal of the standard deviation (rstd), not divided by the standard deviation, which rounds differently in
about one element in eight (fp32)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from ..platform.soc import SocSpec
from .activation import norm_axis
from .core.base import (
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    Work,
    cores_for,
    covered,
    prod,
    split_rows,
)
from .core.impl_modes import HIGH_PERFORMANCE
from .core.registry import register
from .elementwise import FLOAT_TYPES

ROWS_TILING = TilingStruct(("rows", "Q"), ("row_len", "Q"), ("rows_per_block", "Q"), ("epsilon", "f"))


@register
class LayerNorm(OpSpec):
    op_type = "LayerNorm"
    inputs = ("x", "gamma", "beta?")
    outputs = ("y", "mean", "variance")
    attrs = {"begin_norm_axis": -1, "begin_params_axis": -1, "epsilon": 1e-5}
    impl_default = HIGH_PERFORMANCE
    tiling_struct = TilingStruct(("outer", "Q"), ("axis_len", "Q"), ("inner", "Q"), ("rows_per_block", "Q"),
                                 ("epsilon", "f"))

    def _axis(self, attrs, rank) -> int:
        a = int(self.attr(attrs, "begin_norm_axis"))
        if not -rank <= a < rank:
            raise OpError(f"begin_norm_axis {a} is out of range for rank {rank}")
        return a % rank

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        axis = self._axis(node.attrs, len(x.shape))
        g = node.input_desc(1)
        try:
            np.broadcast_shapes(x.shape[axis:], g.shape)
        except ValueError:
            raise OpError(f"gamma shape {list(g.shape)} does not match normalised dims {list(x.shape[axis:])}") from None
        stat = TensorDesc(x.shape[:axis] + (1,) * (len(x.shape) - axis), "float32", x.format, x.origin_format)
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format), stat, stat]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        axis = self._axis(ctx.attrs, len(x.shape))
        rows, length = prod(x.shape[:axis]), prod(x.shape[axis:])
        block_dim, per = split_rows(rows, cores_for(self, ctx.soc))
        data = self.tiling_struct.pack(outer=rows, axis_len=length, inner=1, rows_per_block=per,
                                       epsilon=float(self.attr(ctx.attrs, "epsilon")))
        return TilingResult(block_dim, 0, data)

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x, gamma, beta = inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None
        # fp32 inside, or what the SoC and the implementation mode give (passes/soc_kernels.py: fp16 on Ascend310)
        inside = np.dtype(args.attrs.get("_internal_dtype") or "float32")
        eps = inside.type(t["epsilon"])
        flat = x.reshape(t["outer"], t["axis_len"])
        out = np.zeros((t["outer"], t["axis_len"]), dtype=inside)
        means = np.zeros((t["outer"], 1), dtype=np.float32)
        vars_ = np.zeros((t["outer"], 1), dtype=np.float32)
        end = covered(t["outer"], t["rows_per_block"], args.block_dim)   # rows are independent: one pass
        if end:
            r = flat[:end].astype(inside)
            mean = r.mean(axis=1, keepdims=True, dtype=inside)
            centred = r - mean
            var = np.square(centred).mean(axis=1, keepdims=True, dtype=inside)
            out[:end] = centred * np.reciprocal(np.sqrt(var + eps))
            means[:end], vars_[:end] = mean, var
        shape = args.outputs[0].shape
        y = out.reshape(shape) * gamma.astype(inside)
        if beta is not None:
            y = y + beta.astype(inside)
        return [y.astype(args.outputs[0].dtype), means.reshape(args.outputs[1].shape),
                vars_.reshape(args.outputs[2].shape)]

    def inside_dtype(self, dtype: str, soc: SocSpec, mode: str) -> str | None:
        """TBE's LayerNorm on fp16 input computes in fp32 if the SoC has fp32 vexp and the mode is high_performance
        (ATC's default), or with high_precision; else in fp16 (Ascend310 by default). compute() works in fp32
        unless told: the attribute is needed when that changes, or when high precision was asked for."""
        if dtype != "float16":
            return None
        vexp = soc.intrinsic_dtypes("vexp")
        inside = "float32" if ((vexp is None or "float32" in vexp) and mode == "high_performance") \
            or mode == "high_precision" else "float16"
        return inside if inside == "float16" or mode == "high_precision" else None

    def work(self, ctx: TilingContext) -> Work:
        return in_inside_dtype(super().work(ctx), ctx, 6)   # mean, sub, square, mean, rsqrt-mul, affine


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


def in_inside_dtype(w: Work, ctx: TilingContext, ops_per_elem: int) -> Work:
    """A norm kernel's work priced in the dtype it computes in, as compute() and the autofuse lowering of the same
    op (autofuse/lowering.py) have it: fp32 for fp16 and bf16 rows (what `_internal_dtype` names where the SoC or
    the mode says otherwise), its passes at that dtype's rate plus a cast of each element in and out; rows of
    dependent passes, the "norm" class."""
    x = ctx.inputs[0]
    inside = ctx.attrs.get("_internal_dtype") or ("float64" if x.dtype == "float64" else "float32")
    w.vector_ops = x.numel * (ops_per_elem + (2 if x.dtype != inside else 0))
    w.dtype, w.vector_class = inside, "norm"
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
        acc = np.float64 if x.dtype == np.float64 else np.float32
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
        return in_inside_dtype(super().work(ctx), ctx, 4)   # square, sum, scale, gamma
