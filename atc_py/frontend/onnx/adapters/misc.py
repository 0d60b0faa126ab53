"""Adapters for ops that become views, fills or identities: Unsqueeze, Squeeze, ConstantOfShape, Dropout,
Sum, LRN."""
from __future__ import annotations

import numpy as np

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op


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


@onnx_op("ConstantOfShape")
class ConstantOfShape(OnnxOp):
    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        value = ctx.attr("value")
        arr = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
        return ctx.emit("Fill", [ctx.input(0)], {"value": arr[0].item() if arr.size else 0.0,
                                                 "dtype": arr.dtype.name})


@onnx_op("Dropout")
class Dropout(OnnxOp):
    """Inference: Dropout is the identity (its mask output is not supported)."""
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        mask = ctx.node.output[1] if len(ctx.node.output) > 1 else ""
        g = ctx.conv.model.graph
        if mask and (any(mask in n.input for n in g.node) or any(o.name == mask for o in g.output)):
            raise AdapterError("the mask output of Dropout is used; only inference Dropout is supported")
        return ctx.emit("Identity", [ctx.input(0)])


@onnx_op("Sum")
class Sum(OnnxOp):
    @classmethod
    def _impl_v6(cls, ctx: NodeCtx):
        xs = [ctx.input(i) for i in range(ctx.n_inputs)]
        if len(xs) == 1:
            return ctx.emit("Identity", xs)
        return ctx.emit("AddN", xs)


@onnx_op("LRN")
class LRN(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        size = int(ctx.attr("size"))
        return ctx.emit("LRN", [ctx.input(0)], {"size": size, "depth_radius": (size - 1) // 2,
                                                "alpha": float(ctx.attr("alpha", 1e-4)),
                                                "beta": float(ctx.attr("beta", 0.75)),
                                                "bias": float(ctx.attr("bias", 1.0))})



@onnx_op("StringNormalizer")
class StringNormalizer(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        if ctx.attr("locale") not in (None, "", "en_US"):
            raise AdapterError(f"locale '{ctx.attr('locale')}' is not supported (en_US only)")
        return ctx.emit("StringNormalizer", [ctx.input(0)], {
            "case_change_action": ctx.attr("case_change_action", "NONE"),
            "is_case_sensitive": bool(ctx.attr("is_case_sensitive", 0)), "stopwords": list(ctx.attr("stopwords", []))})
