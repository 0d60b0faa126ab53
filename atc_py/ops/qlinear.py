"""onnxruntime's quantized elementwise contrib ops (com.microsoft, what its QOperator quantizer writes): QLinearAdd,
QLinearMul, QLinearSigmoid and QLinearLeakyRelu. int8/uint8 in and out with one scale and zero point per tensor.

The arithmetic is onnxruntime's CPU kernels' (MLAS on x86-64 with AVX2), not the formula of the contrib op docs
evaluated exactly: a result on a rounding boundary of the output quantization lands where onnxruntime puts it.
* QLinearAdd: the ratios rA = sA / sC and rB = sB / sC and a fixed part zC - (rA·zA + rB·zB) in fp32, then the
  inputs' raw integers added on with fused multiply-adds (the compiler contracts the fixed part too); an input
  that is one value per broadcast span (a per-channel tensor, a scalar) joins the fixed part first.
* QLinearMul: (a - zA)·(b - zB) (exact in fp32) times the fp32 ratio sA·sB / sC, plus zC, each step rounded to
  fp32 (no fused multiply-add here).
* QLinearSigmoid / QLinearLeakyRelu: a 256-entry table — each possible input dequantized, the function applied in
  fp32, quantized again (x / s, round half to even, + z, saturate) — then a lookup.
Every result is rounded half to even and saturated to the output type."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError, OpSpec, TilingContext, TilingResult, Work
from .core.elementwise_tiling import ELEMWISE_TILING, elementwise_tiling, run_blocks
from .core.registry import register
from .quant import INT_RANGES

Q8 = ("int8", "uint8")
F32 = np.float32


def param(v: np.ndarray | None, what: str, dtype=F32):
    """A per-tensor scale or zero point: its one value (0 for an absent zero point)."""
    if v is None:
        return dtype(0)
    a = np.asarray(v)
    if a.size != 1:
        raise OpError(f"{what} must hold one value (onnxruntime quantizes these ops per tensor), got shape "
                      f"{list(a.shape)}")
    return dtype(a.reshape(-1)[0])


def check_params(node: Node, x: TensorDesc, scales: tuple[int, ...], zps: tuple[int, ...]) -> None:
    """Scales are float32 and zero points have x's type; both hold one value (when their shapes are known)."""
    if x.dtype not in Q8:
        raise OpError(f"{node.op_type} takes int8 or uint8 tensors, got {x.dtype}")
    for i in scales + zps:
        d = node.input_desc(i) if i < len(node.inputs) else None
        if d is None:
            if i in scales:
                raise OpError(f"input {i} (a scale) is required")
            continue
        want = "float32" if i in scales else x.dtype
        if d.dtype != want:
            raise OpError(f"input {i} is {d.dtype}; {node.op_type} takes {want} here")
        if all(n >= 0 for n in d.shape) and int(np.prod(d.shape)) != 1:
            raise OpError(f"input {i} must hold one value (per-tensor quantization), got shape {list(d.shape)}")


def rne_saturate(v: np.ndarray, dtype: str) -> np.ndarray:
    """Round half to even, then clip to the integer type's range (cvtps2dq, then the saturating packs)."""
    lo, hi = INT_RANGES[dtype]
    return np.clip(np.rint(v), lo, hi).astype(dtype)


def fma32(x, r, c) -> np.ndarray:
    """fp32 fused multiply-add x·r + c with one rounding: x is an 8-bit integer and r, c are fp32, so the float64
    product is exact and the float64 sum is too unless the operands' bits span more than 53."""
    return (np.asarray(x, np.float64) * np.float64(r) + np.asarray(c, np.float64)).astype(F32)


def span_scalar(a_shape, b_shape, out_shape) -> str:
    """Which input onnxruntime's broadcast loop treats as one value per span: "a", "b" or "" (both vary). A span is
    the run of innermost output dims the inputs broadcast alike; size-1 dims merge away."""
    if int(np.prod(a_shape)) == 1:
        return "a"
    if int(np.prod(b_shape)) == 1:
        return "b"
    rank = len(out_shape)
    a = (1,) * (rank - len(a_shape)) + tuple(a_shape)
    b = (1,) * (rank - len(b_shape)) + tuple(b_shape)
    for k in range(rank - 1, -1, -1):
        if out_shape[k] != 1:
            return "a" if a[k] == 1 else "b" if b[k] == 1 else ""
    return ""


class QLinearBinary(OpSpec):
    inputs = ("A", "A_scale", "A_zero_point?", "B", "B_scale", "B_zero_point?", "C_scale", "C_zero_point?")
    outputs = ("C",)
    attrs = {}
    dtypes = Q8 + ("float32",)
    tiling_struct = ELEMWISE_TILING
    tiling_keys = (0, 1)

    def infer(self, node: Node) -> list[TensorDesc]:
        a, b = node.input_desc(0), node.input_desc(3)
        if a.dtype != b.dtype:
            raise OpError(f"A is {a.dtype} and B is {b.dtype}; {node.op_type} takes one type")
        check_params(node, a, (1, 4, 6), (2, 5, 7))
        try:
            shape = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise OpError(f"shapes {list(a.shape)} and {list(b.shape)} cannot be broadcast") from None
        return [TensorDesc(tuple(shape), a.dtype, a.format, a.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 3, any(ctx.inputs[i].shape != ctx.outputs[0].shape for i in (0, 3)))

    def params(self, inputs, dtype):
        def get(i):
            return inputs[i] if i < len(inputs) else None
        zt = np.int64
        return (param(get(1), "A_scale"), param(get(2), "A_zero_point", zt), param(get(4), "B_scale"),
                param(get(5), "B_zero_point", zt), param(get(6), "C_scale"), param(get(7), "C_zero_point", zt))

    def compute(self, args: KernelArgs, inputs):
        out = args.outputs[0]
        shape = tuple(out.shape)
        a, b = inputs[0], inputs[3]
        fn = self.kernel(self.params(inputs, out.dtype), span_scalar(a.shape, b.shape, shape), out.dtype)
        flat = [np.broadcast_to(x, shape).reshape(-1) for x in (a, b)]
        return [run_blocks(args, flat, fn, out.dtype)]

    def kernel(self, p, scalar: str, dtype: str):
        raise NotImplementedError

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 6   # widen, convert, two multiply-adds, round, pack
        return w


@register
class QLinearAdd(QLinearBinary):
    op_type = "QLinearAdd"

    def kernel(self, p, scalar: str, dtype: str):
        sa, za, sb, zb, sc, zc = p
        ra, rb = F32(sa / sc), F32(sb / sc)
        if scalar == "a":   # onnxruntime swaps the inputs so that the one-value input is MLAS's B
            fixed = F32(zc) - fma32(zb, rb, F32(ra * F32(za)))
        else:
            fixed = F32(zc) - fma32(za, ra, F32(rb * F32(zb)))

        def fn(x, y):   # the one-value-per-span input joins the fixed part first (per element: the same bits)
            if scalar == "a":
                return rne_saturate(fma32(y, rb, fma32(x, ra, fixed)), dtype)
            return rne_saturate(fma32(x, ra, fma32(y, rb, fixed)), dtype)
        return fn


@register
class QLinearMul(QLinearBinary):
    op_type = "QLinearMul"

    def kernel(self, p, scalar: str, dtype: str):
        sa, za, sb, zb, sc, zc = p
        ratio = F32(F32(sa * sb) / sc)

        def fn(x, y):
            prod = ((x.astype(np.int32) - za) * (y.astype(np.int32) - zb)).astype(F32)
            return rne_saturate((prod * ratio).astype(F32) + F32(zc), dtype)
        return fn


def quantize_f32(y: np.ndarray, scale, zp, dtype: str) -> np.ndarray:
    """MLAS's QuantizeLinear: y / scale in fp32, round half to even, + zero point, saturate."""
    with np.errstate(all="ignore"):
        q = (y.astype(F32) / F32(scale)).astype(F32)
    lo, hi = INT_RANGES[dtype]
    q = np.clip(q, F32(lo - int(zp)), F32(hi - int(zp)))
    return (np.rint(q).astype(np.int64) + int(zp)).astype(dtype)


def lookup_table(dtype: str, x_scale, x_zp, y_scale, y_zp, fn) -> np.ndarray:
    """The 256 outputs, indexed by the input's byte: each possible input dequantized in fp32, fn, quantized."""
    codes = np.arange(256, dtype=np.uint8).view(dtype).astype(np.int32)
    x = (F32(x_scale) * (codes - int(x_zp)).astype(F32)).astype(F32)
    with np.errstate(all="ignore"):
        return quantize_f32(fn(x), y_scale, y_zp, dtype)


def table_lookup(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    return table[x.view(np.uint8)]


class QLinearLookup(OpSpec):
    """An activation onnxruntime computes as a lookup table."""
    inputs = ("X", "X_scale", "X_zero_point?", "Y_scale", "Y_zero_point?")
    attrs = {}
    dtypes = Q8 + ("float32",)
    tiling_struct = ELEMWISE_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        check_params(node, x, (1, 3), (2, 4))
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 2, False)

    def fn(self, attrs, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def compute(self, args: KernelArgs, inputs):
        dtype = args.outputs[0].dtype
        def get(i):
            return inputs[i] if i < len(inputs) else None
        table = lookup_table(dtype, param(get(1), "X_scale"), param(get(2), "X_zero_point", np.int64),
                             param(get(3), "Y_scale"), param(get(4), "Y_zero_point", np.int64),
                             lambda x: self.fn(args.attrs, x))
        return [run_blocks(args, [inputs[0].reshape(-1)], lambda x: table_lookup(x, table), dtype)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops += 256 * 8   # the table
        return w


@register
class QLinearSigmoid(QLinearLookup):
    op_type = "QLinearSigmoid"

    def fn(self, attrs, x):
        return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(F32)


@register
class QLinearLeakyRelu(QLinearLookup):
    op_type = "QLinearLeakyRelu"
    attrs = {"alpha": 0.01}

    def fn(self, attrs, x):
        return np.where(x >= 0, x, (F32(self.attr(attrs, "alpha")) * x).astype(F32))
