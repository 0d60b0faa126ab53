"""Shape and layout adapters: Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze."""
from __future__ import annotations

import numpy as np

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op


@onnx_op("Reshape")
class Reshape(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        shape = ctx.attr("shape")
        if shape is None:
            raise AdapterError("Reshape-1 needs the 'shape' attribute")
        return ctx.emit("Reshape", [ctx.input(0), ctx.make_const("shape", np.array(shape, np.int64))])

    @classmethod
    def _impl_v5(cls, ctx: NodeCtx):
        return ctx.emit("Reshape", [ctx.input(0), ctx.input(1)])

    @classmethod
    def _impl_v14(cls, ctx: NodeCtx):
        return ctx.emit("Reshape", [ctx.input(0), ctx.input(1)], {"allowzero": int(ctx.attr("allowzero", 0))})


@onnx_op("Flatten")
class Flatten(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("Flatten", [ctx.input(0)], {"axis": int(ctx.attr("axis", 1))})


@onnx_op("Transpose")
class Transpose(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        x = ctx.input(0)
        perm = ctx.attr("perm")
        if perm is None:
            perm = list(range(len(x.desc.shape)))[::-1]
        return ctx.emit("TransposeD", [x], {"perm": [int(p) for p in perm]})


@onnx_op("Concat")
class Concat(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        xs = [ctx.input(i) for i in range(ctx.n_inputs)]
        return ctx.emit("ConcatD", [x for x in xs if x is not None], {"concat_dim": int(ctx.attr("axis", 1))})

    @classmethod
    def _impl_v4(cls, ctx: NodeCtx):
        if ctx.attr("axis") is None:
            raise AdapterError("Concat needs the 'axis' attribute")
        return cls._impl_v1(ctx)


def _axes(ctx: NodeCtx, since_input: bool) -> list[int]:
    if since_input:
        axes = ctx.const(1)
        if ctx.input(1) is not None and axes is None:
            raise AdapterError("axes must be a constant")
        return [] if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
    return [int(a) for a in ctx.attr("axes", [])]


@onnx_op("Unsqueeze")
class Unsqueeze(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("Unsqueeze", [ctx.input(0)], {"axes": _axes(ctx, False)})

    @classmethod
    def _impl_v13(cls, ctx: NodeCtx):
        if not ctx.known(1):
            return ctx.emit("UnsqueezeV3", [ctx.input(0), ctx.input(1)])   # axes from the graph: dynamic
        return ctx.emit("Unsqueeze", [ctx.input(0)], {"axes": _axes(ctx, True)})


@onnx_op("Squeeze")
class Squeeze(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("Squeeze", [ctx.input(0)], {"axes": _axes(ctx, False)})

    @classmethod
    def _impl_v13(cls, ctx: NodeCtx):
        if not ctx.known(1):
            return ctx.emit("SqueezeV3", [ctx.input(0), ctx.input(1)])   # axes from the graph: dynamic
        return ctx.emit("Squeeze", [ctx.input(0)], {"axes": _axes(ctx, True)})
