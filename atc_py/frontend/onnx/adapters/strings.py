"""String op adapters: StringNormalizer (run on the AICPU: the output length depends on the values), StringConcat."""
from __future__ import annotations

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op


@onnx_op("StringNormalizer")
class StringNormalizer(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        if ctx.attr("locale") not in (None, "", "en_US"):
            raise AdapterError(f"locale '{ctx.attr('locale')}' is not supported (en_US only)")
        return ctx.emit("StringNormalizer", [ctx.input(0)], {
            "case_change_action": ctx.attr("case_change_action", "NONE"),
            "is_case_sensitive": bool(ctx.attr("is_case_sensitive", 0)), "stopwords": list(ctx.attr("stopwords", []))})


@onnx_op("StringConcat")
class StringConcat(OnnxOp):
    @classmethod
    def _impl_v20(cls, ctx: NodeCtx):
        return ctx.emit("StringConcat", [ctx.input(0), ctx.input(1)])
