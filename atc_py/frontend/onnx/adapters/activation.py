"""Activation adapters: Relu, Sigmoid, Tanh, Softmax and LogSoftmax (2-D coercion before opset 13)."""
from __future__ import annotations

import numpy as np

from ..adapter import NodeCtx, OnnxOp, onnx_op
from .math import _unary

_unary("Relu", "Relu", 1)
_unary("Sigmoid", "Sigmoid", 1)
_unary("Tanh", "Tanh", 1)


def _softmax_family(onnx_name: str, ge_type: str):
    def impl_v1(cls, ctx: NodeCtx):
        """Before opset 13 the input is coerced to 2-D at `axis` (default 1) and normalised over the rest."""
        x = ctx.input(0)
        rank = len(x.desc.shape)
        axis = int(ctx.attr("axis", 1)) % rank if rank else 0
        if axis == rank - 1:
            return ctx.emit(ge_type, [x], {"axes": [-1]})
        lead = int(np.prod(x.desc.shape[:axis], dtype=np.int64))
        flat = ctx.emit("Reshape", [x, ctx.make_const("shape2d", np.array([lead, -1], np.int64))], suffix="flatten")[0]
        y = ctx.emit(ge_type, [flat], {"axes": [-1]}, suffix="softmax")[0]
        return ctx.emit("Reshape", [y, ctx.make_const("shape", np.array(list(x.desc.shape), np.int64))])

    def impl_v13(cls, ctx: NodeCtx):
        return ctx.emit(ge_type, [ctx.input(0)], {"axes": [int(ctx.attr("axis", -1))]})
    return onnx_op(onnx_name)(type(onnx_name, (OnnxOp,), {"_impl_v1": classmethod(impl_v1),
                                                          "_impl_v13": classmethod(impl_v13)}))


_softmax_family("Softmax", "SoftmaxV2")
_softmax_family("LogSoftmax", "LogSoftmaxV2")
