"""Normalisations over a set of `axes` whose result is used elementwise: MVNV2 (ONNX MeanVarianceNormalization)
and LpNorm (the p-norm over `axes`, kept dims: ONNX LpNormalization divides by it).

The output elements are split over blocks (the elementwise tiling) and each block writes its chunk of the result;
statistics are computed in fp32 (fp64 for double inputs)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError, OpSpec, TilingContext, TilingResult, Work
from .core.elementwise_tiling import ELEMWISE_TILING, elementwise_tiling, run_blocks
from .core.registry import register
from .elementwise import FLOAT_TYPES
from .reduce import reduce_axes


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
        acc = np.float64 if x.dtype == np.float64 else np.float32
        y = self.result(x.astype(acc), self._axes(args.attrs, x.ndim), args.attrs)
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
