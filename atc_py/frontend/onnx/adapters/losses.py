"""Loss adapters: NegativeLogLikelihoodLoss -> NLLLoss, SoftmaxCrossEntropyLoss (CANN's op types)."""
from __future__ import annotations

from ..adapter import NodeCtx, OnnxOp, onnx_op


def _loss_attrs(ctx: NodeCtx) -> dict:
    attrs = {"reduction": ctx.attr("reduction", "mean")}
    if ctx.attr("ignore_index") is not None:
        attrs["ignore_index"] = int(ctx.attr("ignore_index"))
    return attrs


@onnx_op("NegativeLogLikelihoodLoss")
class NegativeLogLikelihoodLoss(OnnxOp):
    @classmethod
    def _impl_v12(cls, ctx: NodeCtx):
        return ctx.emit("NLLLoss", [ctx.input(0), ctx.input(1), ctx.input(2)], _loss_attrs(ctx), n_out=2)[:1]


@onnx_op("SoftmaxCrossEntropyLoss")
class SoftmaxCrossEntropyLoss(OnnxOp):
    @classmethod
    def _impl_v12(cls, ctx: NodeCtx):
        return ctx.emit("SoftmaxCrossEntropyLoss", [ctx.input(0), ctx.input(1), ctx.input(2)], _loss_attrs(ctx),
                        n_out=2)
