"""Elementwise and activation adapters."""
from __future__ import annotations

from ..adapter import NodeCtx, OnnxOp, onnx_op


def _binary(ge_type: str):
    class _B(OnnxOp):
        @classmethod
        def _impl_v7(cls, ctx: NodeCtx):
            return ctx.emit(ge_type, [ctx.input(0), ctx.input(1)])

        @classmethod
        def _impl_v1(cls, ctx: NodeCtx):
            # opset < 7: explicit `broadcast`/`axis`; numpy-style broadcasting covers axis == trailing
            return cls._impl_v7(ctx)
    return _B


def _unary(ge_type: str, first: int = 6):
    class _U(OnnxOp):
        @classmethod
        def _impl_v6(cls, ctx: NodeCtx):
            return ctx.emit(ge_type, [ctx.input(0)])
    _U.__name__ = ge_type
    if first == 1:
        _U._impl_v1 = _U._impl_v6
    return _U


onnx_op("Add")(_binary("Add"))
onnx_op("Sub")(_binary("Sub"))
onnx_op("Mul")(_binary("Mul"))
onnx_op("Div")(_binary("RealDiv"))
onnx_op("Relu")(_unary("Relu", first=1))
onnx_op("Sigmoid")(_unary("Sigmoid", first=1))
onnx_op("Tanh")(_unary("Tanh", first=1))
onnx_op("Identity")(_unary("Identity", first=1))


@onnx_op("Softmax")
class Softmax(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        """Before opset 13 Softmax coerces the input to 2-D at `axis` (default 1)."""
        x = ctx.input(0)
        axis = int(ctx.attr("axis", 1))
        rank = len(x.desc.shape)
        axis = axis % rank if rank else 0
        if axis == rank - 1:
            return ctx.emit("SoftmaxV2", [x], {"axes": [-1]})
        lead = 1
        for d in x.desc.shape[:axis]:
            lead *= d
        flat = ctx.emit("Reshape", [x, ctx.make_const("shape2d", _i64([lead, -1]))], suffix="flatten")[0]
        y = ctx.emit("SoftmaxV2", [flat], {"axes": [-1]}, suffix="softmax")[0]
        return ctx.emit("Reshape", [y, ctx.make_const("shape", _i64(list(x.desc.shape)))])

    @classmethod
    def _impl_v13(cls, ctx: NodeCtx):
        return ctx.emit("SoftmaxV2", [ctx.input(0)], {"axes": [int(ctx.attr("axis", -1))]})


def _i64(v):
    import numpy as np
    return np.array(v, dtype=np.int64)
