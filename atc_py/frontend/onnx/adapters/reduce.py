"""Reduction adapters: ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp, ArgMax/ArgMin, TopK.
Axes move from attribute to input at opset 13 (ReduceSum) or 18 (the others)."""
from __future__ import annotations

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from .index import const_ints


def _reduce(onnx_name: str, ge_type: str, axes_input_since: int):
    def from_attr(cls, ctx: NodeCtx):
        return ctx.emit(ge_type, [ctx.input(0)], {"axes": ctx.attr("axes"), "keep_dims": bool(ctx.attr("keepdims", 1))})

    def from_input(cls, ctx: NodeCtx):
        attrs = {"keep_dims": bool(ctx.attr("keepdims", 1)),
                 "noop_with_empty_axes": bool(ctx.attr("noop_with_empty_axes", 0))}
        if ctx.known(1):
            return ctx.emit(ge_type, [ctx.input(0)], {"axes": const_ints(ctx, 1, "axes"), **attrs})
        return ctx.emit(ge_type[:-1], [ctx.input(0), ctx.input(1)], attrs)   # ReduceSum(x, axes): dynamic
    body = {"_impl_v1": classmethod(from_attr), f"_impl_v{axes_input_since}": classmethod(from_input)}
    return onnx_op(onnx_name)(type(onnx_name, (OnnxOp,), body))

_reduce("ReduceSum", "ReduceSumD", 13)
for _n, _g in [("ReduceMean", "ReduceMeanD"), ("ReduceMax", "ReduceMaxD"), ("ReduceMin", "ReduceMinD"),
               ("ReduceProd", "ReduceProdD"), ("ReduceL1", "ReduceL1D"), ("ReduceL2", "ReduceL2D"),
               ("ReduceSumSquare", "ReduceSumSquareD"), ("ReduceLogSum", "ReduceLogSumD"),
               ("ReduceLogSumExp", "ReduceLogSumExpD")]:
    _reduce(_n, _g, 18)

def _arg(onnx_name: str, ge_type: str):
    def impl(cls, ctx: NodeCtx):
        return ctx.emit(ge_type, [ctx.input(0)], {"dimension": int(ctx.attr("axis", 0)),
                                                  "keep_dims": bool(ctx.attr("keepdims", 1)),
                                                  "select_last_index": bool(ctx.attr("select_last_index", 0))})
    return onnx_op(onnx_name)(type(onnx_name, (OnnxOp,), {"_impl_v1": classmethod(impl)}))

_arg("ArgMax", "ArgMaxD")
_arg("ArgMin", "ArgMinD")

@onnx_op("TopK")
class TopK(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("TopKV2", [ctx.input(0)], {"k": int(ctx.attr("k")), "dim": int(ctx.attr("axis", -1))}, n_out=2)

    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        attrs = {"dim": int(ctx.attr("axis", -1)), "largest": bool(ctx.attr("largest", 1)),
                 "sorted": bool(ctx.attr("sorted", 1))}
        if not ctx.known(1):
            return ctx.emit("TopK", [ctx.input(0), ctx.input(1)], attrs, n_out=2)   # K from the graph: dynamic
        k = const_ints(ctx, 1, "K")
        if not k or len(k) != 1:
            raise AdapterError(f"K must hold one value, got {k}")
        return ctx.emit("TopKV2", [ctx.input(0)], {"k": k[0], **attrs}, n_out=2)

    _impl_v11 = _impl_v10

