"""Trilu, CumSum and CumProd adapters."""
from __future__ import annotations

from ..adapter import NodeCtx, OnnxOp, onnx_op


@onnx_op("Trilu")
class Trilu(OnnxOp):
    @classmethod
    def _impl_v14(cls, ctx: NodeCtx):
        return ctx.emit("Trilu", [ctx.input(0), ctx.input(1)], {"upper": int(ctx.attr("upper", 1))})


@onnx_op("CumSum")
class CumSum(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        return ctx.emit("Cumsum", [ctx.input(0), ctx.input(1)],
                        {"exclusive": int(ctx.attr("exclusive", 0)), "reverse": int(ctx.attr("reverse", 0))})


@onnx_op("CumProd")
class CumProd(OnnxOp):
    @classmethod
    def _impl_v26(cls, ctx: NodeCtx):
        return ctx.emit("Cumprod", [ctx.input(0), ctx.input(1)],
                        {"exclusive": int(ctx.attr("exclusive", 0)), "reverse": int(ctx.attr("reverse", 0))})
