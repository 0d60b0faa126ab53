"""Activation adapters: Relu, Sigmoid, Tanh, Mish, Celu, ThresholdedRelu, Swish, SwiGLU, and Softmax, LogSoftmax
and Hardmax (2-D coercion before opset 13)."""
from __future__ import annotations

import numpy as np

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from .math import _unary

_unary("Relu", "Relu", 1)
_unary("Sigmoid", "Sigmoid", 1)
_unary("Tanh", "Tanh", 1)
_unary("Mish", "Mish", 18)
_unary("Celu", "CeluV2", 12, {"alpha": ("alpha", 1.0)})
_unary("ThresholdedRelu", "ThresholdedRelu", 10, {"alpha": ("alpha", 1.0)})
_unary("Swish", "Swish", 24, {"alpha": ("scale", 1.0)})


@onnx_op("SwiGLU")
class SwiGLU(OnnxOp):
    @classmethod
    def _impl_v28(cls, ctx: NodeCtx):
        return ctx.emit("SwiGlu", [ctx.input(0), ctx.input(1)], {"alpha": float(ctx.attr("alpha", 1.0))})


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


def _coerced_2d(ctx: NodeCtx, ge_type: str, attrs: dict):
    """Opsets before 13 (Hardmax): the input as 2-D [prod(dims before axis), prod(the rest)], the op over the
    last axis, the result reshaped back."""
    x = ctx.input(0)
    rank = len(x.desc.shape)
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise AdapterError(f"axis {axis} is out of range for rank {rank}")
    axis %= max(rank, 1)
    if axis == rank - 1:
        return ctx.emit(ge_type, [x], {**attrs, "axis": -1})
    lead = int(np.prod(x.desc.shape[:axis], dtype=np.int64))
    flat = ctx.emit("Reshape", [x, ctx.make_const("shape2d", np.array([lead, -1], np.int64))], suffix="flatten")[0]
    y = ctx.emit(ge_type, [flat], {**attrs, "axis": -1}, suffix="2d")[0]
    return ctx.emit("Reshape", [y, ctx.make_const("shape", np.array(list(x.desc.shape), np.int64))])


@onnx_op("Hardmax")
class Hardmax(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return _coerced_2d(ctx, "HardMax", {})

    @classmethod
    def _impl_v13(cls, ctx: NodeCtx):
        return ctx.emit("HardMax", [ctx.input(0)], {"axis": int(ctx.attr("axis", -1))})
