"""Elementwise family: the binary ops with broadcasting (Add, Sub, Mul, RealDiv, Mod, Pow, Maximum, Minimum,
FloorMod, FloorDiv, PRelu, the comparisons and logic ops with bool output, and Select: ONNX Where, a three-way
broadcast) and the unary base class, all tiled and walked by elementwise_tiling.py."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError, OpSpec, TilingContext, TilingResult, Work
from .core.elementwise_tiling import ELEMWISE_TILING, elementwise_tiling, run_blocks
from .core.registry import register

FLOAT_TYPES = ("float32", "float16", "float64", "bfloat16")
INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")   # every ONNX integer width
NUM_TYPES = FLOAT_TYPES + INT_TYPES
LOW_PRECISION_TYPES = ("bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu", "float4_e2m1fn", "int4", "int2",
                       "uint2")   # Ascend's LLM storage types (Cast converts to and from them; moves carry them)
MOVE_TYPES = NUM_TYPES + ("bool",) + LOW_PRECISION_TYPES   # what data movement (views, gathers...) carries


class BinaryOp(OpSpec):
    inputs = ("x1", "x2")
    dtypes = NUM_TYPES
    out_dtype: str | None = None   # comparisons produce bool
    tiling_keys = (0, 1)
    tiling_struct = ELEMWISE_TILING

    @staticmethod
    def fn(a, b):
        raise NotImplementedError

    def infer(self, node: Node) -> list[TensorDesc]:
        a, b = node.input_desc(0), node.input_desc(1)
        if a.dtype != b.dtype:
            raise OpError(f"input dtypes differ: {a.dtype} vs {b.dtype}")
        try:
            shape = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise OpError(f"shapes {list(a.shape)} and {list(b.shape)} cannot be broadcast") from None
        return [TensorDesc(tuple(shape), self.out_dtype or a.dtype, a.format, a.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        broadcast = any(d.shape != ctx.outputs[0].shape for d in ctx.inputs)
        return elementwise_tiling(self, ctx, 3, broadcast)

    def compute(self, args: KernelArgs, inputs):
        shape = args.outputs[0].shape
        flat = [np.broadcast_to(x, shape).reshape(-1) for x in inputs]
        return [run_blocks(args, flat, self.fn, args.outputs[0].dtype)]


@register
class Add(BinaryOp):
    op_type = "Add"
    attrs = {"fused_relu": False}   # relu_fusion put a following Relu into the epilogue (residual Add + Relu)
    fn = staticmethod(np.add)

    def compute(self, args: KernelArgs, inputs):
        return [self.epilogue(args.attrs, out) for out in super().compute(args, inputs)]


@register
class Sub(BinaryOp):
    op_type = "Sub"
    fn = staticmethod(np.subtract)


@register
class Mul(BinaryOp):
    op_type = "Mul"
    fn = staticmethod(np.multiply)


@register
class RealDiv(BinaryOp):
    op_type = "RealDiv"
    dtypes = NUM_TYPES

    @staticmethod
    def fn(a, b):
        """Integers divide truncating toward zero (ONNX Div); a zero divisor gives 0 instead of a fault."""
        if a.dtype.kind in "iu":
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.trunc(np.divide(a, np.where(b == 0, 1, b), dtype=np.float64))
            return np.where(b == 0, 0, q).astype(a.dtype)
        return np.divide(a, b)

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 2  # reciprocal + multiply on the vector unit (vdiv is multi-pass)
        return w


def _fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C fmod: a - trunc(a / b) * b. An integer divided by zero gives 0 (no fault on the vector unit)."""
    if a.dtype.kind in "iu":
        safe = np.where(b == 0, 1, b)
        return np.where(b == 0, 0, np.fmod(a, safe)).astype(a.dtype)
    return np.fmod(a, b)


@register
class Mod(BinaryOp):
    """ONNX Mod with fmod=1 (the remainder has the dividend's sign); fmod=0 is FloorMod."""
    op_type = "Mod"
    dtypes = NUM_TYPES
    fn = staticmethod(_fmod)

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 3   # divide, truncate, multiply-subtract
        return w


def _binary(op_type: str, fn, out_dtype=None, dtypes=None, intrinsics: tuple[str, ...] = ()):
    body = {"op_type": op_type, "fn": staticmethod(fn), "out_dtype": out_dtype, "vector_intrinsics": intrinsics,
            "__doc__": f"{op_type}: broadcasting."}
    if dtypes:
        body["dtypes"] = dtypes
    if out_dtype == "bool":
        body["dtypes"] = (dtypes or NUM_TYPES) + ("bool",)
    return register(type(op_type, (BinaryOp,), body))


def _pow(a, b):
    if np.issubdtype(a.dtype, np.integer):
        return np.power(a.astype(np.float64), b).astype(a.dtype)
    return np.power(a, b)


_binary("Pow", _pow, intrinsics=("vexp", "vln"))
_binary("Maximum", np.maximum, dtypes=NUM_TYPES)
_binary("Minimum", np.minimum, dtypes=NUM_TYPES)
_binary("FloorMod", np.mod)
_binary("FloorDiv", lambda a, b: np.floor_divide(a, b))
_binary("Equal", np.equal, "bool")
_binary("NotEqual", np.not_equal, "bool")
_binary("Less", np.less, "bool")
_binary("LessEqual", np.less_equal, "bool")
_binary("Greater", np.greater, "bool")
_binary("GreaterEqual", np.greater_equal, "bool")
_binary("LogicalAnd", np.logical_and, "bool", ("bool",))
_binary("LogicalOr", np.logical_or, "bool", ("bool",))
_binary("LogicalXor", np.logical_xor, "bool", ("bool",))


@register
class PRelu(BinaryOp):
    """y = x if x >= 0 else slope * x; the slope broadcasts to x (unidirectionally)."""
    op_type = "PRelu"
    inputs = ("x", "weight")
    dtypes = ("float32", "float16", "float64")
    fn = staticmethod(lambda x, s: np.where(x >= 0, x, x * s))

    def infer(self, node: Node) -> list[TensorDesc]:
        out = super().infer(node)[0]
        if out.shape != node.input_desc(0).shape:
            raise OpError(f"slope {list(node.input_desc(1).shape)} does not broadcast to x "
                          f"{list(node.input_desc(0).shape)}")
        return [out]


@register
class Select(BinaryOp):
    """ONNX Where: condition ? x1 : x2 with numpy broadcasting of all three."""
    op_type = "Select"
    inputs = ("condition", "x1", "x2")
    dtypes = NUM_TYPES + ("bool",)

    def infer(self, node: Node) -> list[TensorDesc]:
        c, a, b = (node.input_desc(i) for i in range(3))
        if c.dtype != "bool":
            raise OpError(f"condition must be bool, got {c.dtype}")
        if a.dtype != b.dtype:
            raise OpError(f"input dtypes differ: {a.dtype} vs {b.dtype}")
        try:
            shape = np.broadcast_shapes(c.shape, a.shape, b.shape)
        except ValueError:
            raise OpError(f"shapes {list(c.shape)}, {list(a.shape)}, {list(b.shape)} cannot be broadcast") from None
        return [TensorDesc(tuple(shape), a.dtype, a.format, a.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 4, any(d.shape != ctx.outputs[0].shape for d in ctx.inputs))

    def compute(self, args, inputs):
        shape = args.outputs[0].shape
        flat = [np.broadcast_to(x, shape).reshape(-1) for x in inputs]
        return [run_blocks(args, flat, np.where, args.outputs[0].dtype)]


def rounded_once(ufunc):
    """`ufunc` on an fp16 tensor computed in fp32 and rounded once. numpy 2.4 has its own fp16 loops for exp and
    cos that differ from that by an ulp here and there; a kernel's bits must not depend on the numpy version."""
    def fn(x):
        if x.dtype == np.float16:
            return ufunc(x.astype(np.float32)).astype(np.float16)
        return ufunc(x)
    fn.__name__ = getattr(ufunc, "__name__", "fn")
    return fn


class UnaryOp(OpSpec):
    inputs = ("x",)
    dtypes = ("float32", "float16", "float64")
    tiling_struct = ELEMWISE_TILING
    vector_ops_per_elem = 1  # vector instructions per element (cost)

    @staticmethod
    def fn(x):
        raise NotImplementedError

    def infer(self, node: Node) -> list[TensorDesc]:
        d = node.input_desc(0)
        return [TensorDesc(d.shape, d.dtype, d.format, d.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 2, False)

    def compute(self, args: KernelArgs, inputs):
        return [run_blocks(args, [inputs[0].reshape(-1)], self.fn, args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= self.vector_ops_per_elem
        return w


@register
class Identity(UnaryOp):
    """A copy kernel; the identity pass removes Identity nodes, so this runs only when one must stay."""
    op_type = "Identity"
    dtypes = MOVE_TYPES
    fn = staticmethod(np.copy)

    def compute(self, args, inputs):
        return [run_blocks(args, [inputs[0].reshape(-1)], self.fn, inputs[0].dtype)]

