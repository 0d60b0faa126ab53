"""Adapters of the custom ONNX domain `ascend` (opset 1): IncreFlashAttention, GroupedMatmul."""
from __future__ import annotations

from ..adapter import NodeCtx, OnnxOp, onnx_op


@onnx_op("IncreFlashAttention", domain="ascend")
class IncreFlashAttention(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        attrs = {"num_heads": int(ctx.attr("num_heads", 1)), "input_layout": ctx.attr("input_layout", "BNSD")}
        if ctx.attr("scale_value") is not None:
            attrs["scale_value"] = float(ctx.attr("scale_value"))
        return ctx.emit("IncreFlashAttention", [ctx.input(i) for i in range(4)], attrs)


@onnx_op("GroupedMatmul", domain="ascend")
class GroupedMatmul(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("GroupedMatmul", [ctx.input(i) for i in range(3)])
