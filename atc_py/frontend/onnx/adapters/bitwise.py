"""Bit operation adapters: BitwiseNot, BitwiseAnd, BitwiseOr, BitwiseXor, BitShift -> LeftShift / RightShift,
BitCast -> Bitcast."""
from __future__ import annotations

from ....ir.dtypes import dtype_from_onnx
from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from ..onnx_lite import TensorProto
from .math import _unary

_unary("BitwiseNot", "Invert", 18)


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
