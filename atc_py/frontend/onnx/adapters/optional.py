"""Optional, OptionalHasElement, OptionalGetElement and Identity, resolved at compile time: whether an
optional holds a value is known when compiling (structured.py), so OptionalHasElement is a constant and
OptionalGetElement the content itself. Identity passes sequences and optionals through (one Identity node
per tensor)."""
from __future__ import annotations

import numpy as np

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from ..structured import Optional, leaves, rebuild


def identity(ctx: NodeCtx, v):
    """v with an Identity node per tensor, same structure."""
    copies = [ctx.emit("Identity", [t], suffix=f"e{k}" if k else "")[0] for k, t in enumerate(leaves(v))]
    return rebuild(v, iter(copies))


@onnx_op("Identity")
class Identity(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return [identity(ctx, ctx.input(0))]


@onnx_op("Optional")
class OptionalOp(OnnxOp):
    @classmethod
    def _impl_v15(cls, ctx: NodeCtx):
        return [Optional(ctx.input(0) if ctx.n_inputs else None)]


@onnx_op("OptionalHasElement")
class OptionalHasElement(OnnxOp):
    @classmethod
    def _impl_v15(cls, ctx: NodeCtx):
        v = ctx.input(0) if ctx.n_inputs else None
        has = v is not None and not (isinstance(v, Optional) and v.content is None)
        return [ctx.make_const("has_element", np.array(has))]


@onnx_op("OptionalGetElement")
class OptionalGetElement(OnnxOp):
    @classmethod
    def _impl_v15(cls, ctx: NodeCtx):
        v = ctx.input(0)
        if isinstance(v, Optional):
            if v.content is None:
                raise AdapterError("the optional is empty (known when compiling): it has no element to get")
            v = v.content
        return [identity(ctx, v)]
