"""Activations (CANN's op types): Relu, Sigmoid, Tanh, CeluV2, Mish, ThresholdedRelu, Swish, GeluV2 (erf or tanh
approximation) and SwiGlu, elementwise: they walk the elementwise tiling's blocks; SoftmaxV2 and HardMax (one-hot
of the first maximum along an axis), row-wise over an axis: their rows split over the vector cores."""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Node, TensorDesc
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
from .core.elementwise_tiling import elementwise_tiling, run_blocks
from .core.impl_modes import HIGH_PERFORMANCE, fp32_vexp
from .core.registry import register
from .elementwise import FLOAT_TYPES, BinaryOp, UnaryOp
from .math_unary import AttrUnaryOp


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
    rows = x.reshape(t["outer"], t["axis_len"], t["inner"]).transpose(0, 2, 1)
    return rows.reshape(t["outer"] * t["inner"], t["axis_len"])   # (a -1 is ambiguous when axis_len is 0)


def rows_unview(rows: np.ndarray, t: dict, shape) -> np.ndarray:
    return rows.reshape(t["outer"], t["inner"], t["axis_len"]).transpose(0, 2, 1).reshape(shape)


def run_row_blocks(args: KernelArgs, x: np.ndarray, fn) -> np.ndarray:
    t = args.tiling
    rows = rows_view(x, t)
    out = np.zeros_like(rows)
    end = covered(rows.shape[0], t["rows_per_block"], args.block_dim)   # rows are independent: one call
    if end and rows.shape[1]:   # rows of no element (an axis a run-time count made empty) have nothing to compute
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
    fp16_head_ops = 2  # of them, the ones TBE keeps in fp16 before it casts an fp16 row up: max, sub

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
        """TBE's kernel, whatever atc-py's numerics round: where the SoC's vexp takes fp32 an fp16 row is cast up
        after its head ops and the rest runs in fp32 before a cast down (softmax_v2.py: cast_to float32 before
        vexp), priced in fp32 element-ops (an fp16 op is half of one); a row reduction of dependent passes, the
        "norm" class."""
        w = super().work(ctx)
        n = sum(d.numel for d in ctx.outputs)
        w.vector_class = "norm"
        if w.dtype == "float16" and fp32_vexp(ctx.soc):
            w.dtype = "float32"
            w.vector_ops = n * (self.ops_per_elem - self.fp16_head_ops + 2) + n * self.fp16_head_ops // 2
        else:
            w.vector_ops = n * self.ops_per_elem
        return w


def _sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype)


@register
class CeluV2(AttrUnaryOp):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    op_type = "CeluV2"
    attrs = {"alpha": 1.0}
    vector_ops_per_elem = 5

    @staticmethod
    def fa(x, a):
        alpha = np.asarray(a["alpha"], x.dtype)
        return np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(np.minimum(x, 0) / alpha))


@register
class Mish(AttrUnaryOp):
    """x * tanh(softplus(x))."""
    op_type = "Mish"
    vector_intrinsics = ("vexp", "vln")
    attrs = {}
    vector_ops_per_elem = 8
    fa = staticmethod(lambda x, a: x * np.tanh(np.logaddexp(0, x)))


@register
class ThresholdedRelu(AttrUnaryOp):
    """x where x > alpha, else 0."""
    op_type = "ThresholdedRelu"
    attrs = {"alpha": 1.0}
    vector_ops_per_elem = 2
    fa = staticmethod(lambda x, a: np.where(x > np.asarray(a["alpha"], x.dtype), x, 0))


@register
class Swish(AttrUnaryOp):
    """x * sigmoid(scale * x) (ONNX Swish's alpha is the scale)."""
    op_type = "Swish"
    vector_intrinsics = ("vexp",)
    attrs = {"scale": 1.0}
    vector_ops_per_elem = 5
    fa = staticmethod(lambda x, a: x * _sigmoid(np.asarray(a["scale"], x.dtype) * x))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_erf = np.vectorize(math.erf, otypes=[np.float64])


@register
class GeluV2(AttrUnaryOp):
    """GELU, exact (approximate='none': x * Phi(x) with erf) or tanh-approximated (approximate='tanh':
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))))."""
    vector_intrinsics = ("vexp",)
    op_type = "GeluV2"
    attrs = {"approximate": "none"}
    vector_ops_per_elem = 10

    def infer(self, node: Node) -> list[TensorDesc]:
        if self.attr(node, "approximate") not in ("none", "tanh"):
            raise OpError(f"approximate '{self.attr(node, 'approximate')}' is not 'none' or 'tanh'")
        return super().infer(node)

    @staticmethod
    def fa(x, a):
        w = x.astype(np.float64)
        if a["approximate"] == "tanh":
            y = 0.5 * w * (1.0 + np.tanh(_SQRT_2_OVER_PI * (w + 0.044715 * w ** 3)))
        else:
            y = 0.5 * w * (1.0 + _erf(w / math.sqrt(2.0)))
        return y.astype(x.dtype)


@register
class SwiGlu(BinaryOp):
    """Swish(x, alpha) * x2 of two equal-shape halves (ONNX SwiGLU's A and B; CANN's SwiGlu splits one tensor
    into these halves — the frontend passes them separately, which saves the concatenation)."""
    op_type = "SwiGlu"
    inputs = ("x", "x2")
    attrs = {"alpha": 1.0}
    dtypes = FLOAT_TYPES

    def infer(self, node: Node) -> list[TensorDesc]:
        a, b = node.input_desc(0), node.input_desc(1)
        if a.shape != b.shape or a.dtype != b.dtype:
            raise OpError(f"SwiGLU takes two tensors of one shape and dtype, got {a.dtype}{list(a.shape)} and "
                          f"{b.dtype}{list(b.shape)}")
        return [TensorDesc(a.shape, a.dtype, a.format, a.origin_format)]

    def tiling(self, ctx: TilingContext):
        return elementwise_tiling(self, ctx, 3, False)

    def compute(self, args: KernelArgs, inputs):
        alpha = float(self.attr(args.attrs, "alpha"))
        dt = args.outputs[0].dtype

        def fn(a, b):
            return (a * _sigmoid(np.asarray(alpha, a.dtype) * a) * b).astype(a.dtype)
        return [run_blocks(args, [x.reshape(-1) for x in inputs], fn, dt)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 6   # mul, exp, add, reciprocal, mul, mul
        return w


@register
class HardMax(SoftmaxV2):
    """1 at the first maximum of each row along `axis`, 0 elsewhere (ONNX Hardmax-13; the frontend coerces
    older opsets' 2-D semantics with reshapes). SoftmaxV2's row split and walk."""
    op_type = "HardMax"
    attrs = {"axis": -1}
    impl_default = None   # one implementation: a one-hot has nothing to round
    ops_per_elem = 2   # max, compare-select

    def work(self, ctx: TilingContext) -> Work:
        w = OpSpec.work(self, ctx)
        w.vector_ops *= self.ops_per_elem
        return w

    def _axis_attrs(self, attrs):
        return {"axes": [int(self.attr(attrs, "axis"))]}

    def infer(self, node: Node) -> list[TensorDesc]:
        proxy = Node(node.name, "SoftmaxV2", self._axis_attrs(node.attrs))
        proxy.inputs, proxy.outputs = node.inputs, node.outputs
        return super().infer(proxy)

    def tiling(self, ctx: TilingContext):
        return super().tiling(TilingContext(ctx.inputs, ctx.outputs, self._axis_attrs(ctx.attrs), ctx.soc))

    def compute(self, args: KernelArgs, inputs):
        def rows(r):
            out = np.zeros_like(r)
            out[np.arange(r.shape[0]), np.argmax(r, axis=1)] = 1
            return out
        return [run_row_blocks(args, inputs[0], rows)]
