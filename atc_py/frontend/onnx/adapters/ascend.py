"""Adapters of the custom ONNX domain `ascend` (opset 1): IncreFlashAttention, GroupedMatmul, and the paged KV
cache of LLM serving: ReshapeAndCache, PagedAttention."""
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


@onnx_op("ReshapeAndCache", domain="ascend")
class ReshapeAndCache(OnnxOp):
    """torch_npu._npu_reshape_and_cache: the step's keys and values into their cache slots."""
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("ReshapeAndCache", [ctx.input(i) for i in range(5)], n_out=2)


@onnx_op("PagedAttention", domain="ascend")
class PagedAttention(OnnxOp):
    """FusedInferAttentionScore with a block table over the token-flattened batch (TND)."""
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        attrs = {"num_heads": int(ctx.attr("num_heads", 1)),
                 "num_key_value_heads": int(ctx.attr("num_key_value_heads", 0))}
        if ctx.attr("scale_value") is not None:
            attrs["scale_value"] = float(ctx.attr("scale_value"))
        return ctx.emit("PagedAttention", [ctx.input(i) for i in range(6)], attrs)
