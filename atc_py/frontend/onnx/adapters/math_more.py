"""Adapters for more math and activations: trigonometric and hyperbolic functions, IsNaN, IsInf, Round, Pow
with an exponent of another type, BitShift and the bitwise ops, BitCast, Celu, Mish, ThresholdedRelu, Swish,
SwiGLU, Hardmax, Einsum, Det, CumProd."""
from __future__ import annotations

import numpy as np
from ..onnx_lite import TensorProto

from ....ir.dtypes import dtype_from_onnx
from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from .math import _unary, legacy_broadcast

for _name, _since in [("Sin", 7), ("Cos", 7), ("Tan", 7), ("Asin", 7), ("Acos", 7), ("Atan", 7), ("Sinh", 9),
                      ("Cosh", 9), ("Asinh", 9), ("Acosh", 9), ("Atanh", 9), ("Round", 11), ("Mish", 18)]:
    _unary(_name, _name, _since)
_unary("IsNaN", "IsNan", 9)
_unary("Celu", "CeluV2", 12, {"alpha": ("alpha", 1.0)})
_unary("ThresholdedRelu", "ThresholdedRelu", 10, {"alpha": ("alpha", 1.0)})
_unary("Swish", "Swish", 24, {"alpha": ("scale", 1.0)})
_unary("BitwiseNot", "Invert", 18)


@onnx_op("IsInf")
class IsInf(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        return ctx.emit("IsInf", [ctx.input(0)], {"detect_positive": bool(ctx.attr("detect_positive", 1)),
                                                  "detect_negative": bool(ctx.attr("detect_negative", 1))})


def _bitwise(onnx_name: str, ge_type: str):
    def impl(cls, ctx: NodeCtx):
        return ctx.emit(ge_type, [ctx.input(0), ctx.input(1)])
    return onnx_op(onnx_name)(type(onnx_name, (OnnxOp,), {"_impl_v18": classmethod(impl)}))


_bitwise("BitwiseAnd", "BitwiseAnd")
_bitwise("BitwiseOr", "BitwiseOr")
_bitwise("BitwiseXor", "BitwiseXor")


@onnx_op("BitShift")
class BitShift(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        direction = ctx.attr("direction")
        if direction not in ("LEFT", "RIGHT"):
            raise AdapterError(f"direction '{direction}' is not LEFT or RIGHT")
        return ctx.emit("LeftShift" if direction == "LEFT" else "RightShift", [ctx.input(0), ctx.input(1)])


@onnx_op("BitCast")
class BitCast(OnnxOp):
    @classmethod
    def _impl_v26(cls, ctx: NodeCtx):
        to = int(ctx.attr("to"))
        dt = dtype_from_onnx(to)
        if dt is None:
            name = TensorProto.DataType.Name(to) if to in TensorProto.DataType.values() else str(to)
            raise AdapterError(f"BitCast to {name} is not supported: Ascend has no such data type")
        return ctx.emit("Bitcast", [ctx.input(0)], {"type": dt.name})


@onnx_op("Pow")
class Pow(OnnxOp):
    """Pow-12+ lets the exponent have another type: a float exponent of an integer base computes in the
    exponent's type and casts back (2 ** 0.5 is 1, not 2 ** 0); an integer exponent of a float base is cast to
    the base's type."""

    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        a = ctx.input(0)
        return ctx.emit("Pow", [a, legacy_broadcast(ctx, a, ctx.input(1))])

    @classmethod
    def _impl_v7(cls, ctx: NodeCtx):
        a, b = ctx.input(0), ctx.input(1)
        ta, tb = a.desc.dtype, b.desc.dtype
        if ta == tb:
            return ctx.emit("Pow", [a, b])
        if np.dtype(ta).kind in "iu" and np.dtype(tb).kind == "f":
            wide = ctx.emit("Cast", [a], {"dst_type": tb}, suffix="base")[0]
            y = ctx.emit("Pow", [wide, b], suffix="pow")[0]
            return ctx.emit("Cast", [y], {"dst_type": ta})
        e = ctx.emit("Cast", [b], {"dst_type": ta}, suffix="exponent")[0]
        return ctx.emit("Pow", [a, e])


@onnx_op("SwiGLU")
class SwiGLU(OnnxOp):
    @classmethod
    def _impl_v28(cls, ctx: NodeCtx):
        return ctx.emit("SwiGlu", [ctx.input(0), ctx.input(1)], {"alpha": float(ctx.attr("alpha", 1.0))})


def _coerced_2d(ctx: NodeCtx, ge_type: str, attrs: dict):
    """Opsets before 13 (Hardmax): the input as 2-D [prod(dims before axis), prod(the rest)], the op over the
    last axis, the result reshaped back."""
    x = ctx.input(0)
    rank = len(x.desc.shape)
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise AdapterError(f"axis {axis} is out of range for rank {rank}")
    axis %= max(rank, 1)
    if axis == rank - 1:
        return ctx.emit(ge_type, [x], {**attrs, "axis": -1})
    lead = int(np.prod(x.desc.shape[:axis], dtype=np.int64))
    flat = ctx.emit("Reshape", [x, ctx.make_const("shape2d", np.array([lead, -1], np.int64))], suffix="flatten")[0]
    y = ctx.emit(ge_type, [flat], {**attrs, "axis": -1}, suffix="2d")[0]
    return ctx.emit("Reshape", [y, ctx.make_const("shape", np.array(list(x.desc.shape), np.int64))])


@onnx_op("Hardmax")
class Hardmax(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return _coerced_2d(ctx, "HardMax", {})

    @classmethod
    def _impl_v13(cls, ctx: NodeCtx):
        return ctx.emit("HardMax", [ctx.input(0)], {"axis": int(ctx.attr("axis", -1))})


@onnx_op("Einsum")
class Einsum(OnnxOp):
    @classmethod
    def _impl_v12(cls, ctx: NodeCtx):
        xs = [ctx.input(i) for i in range(ctx.n_inputs)]
        if any(x is None for x in xs):
            raise AdapterError("Einsum inputs cannot be omitted")
        return ctx.emit("Einsum", xs, {"equation": str(ctx.attr("equation"))})


@onnx_op("Det")
class Det(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        return ctx.emit("MatrixDeterminant", [ctx.input(0)])


@onnx_op("CumProd")
class CumProd(OnnxOp):
    @classmethod
    def _impl_v26(cls, ctx: NodeCtx):
        return ctx.emit("Cumprod", [ctx.input(0), ctx.input(1)],
                        {"exclusive": int(ctx.attr("exclusive", 0)), "reverse": int(ctx.attr("reverse", 0))})
