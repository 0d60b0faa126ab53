"""Linear algebra adapters: Einsum, Det -> MatrixDeterminant."""
from __future__ import annotations

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op


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
