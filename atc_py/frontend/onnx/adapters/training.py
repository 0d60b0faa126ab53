"""ai.onnx.preview.training Gradient: reverse-mode differentiation of the forward graph, expanded into
ordinary GE ops at compile time (the gradient is a fixed function of the inputs)."""
from __future__ import annotations

import numpy as np

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op

TRAINING = "ai.onnx.preview.training"


def _unbroadcast(ctx: NodeCtx, g, shape, tag: str):
    """Sum a gradient over the axes a broadcast added or stretched, back to `shape`."""
    gshape = g.desc.shape
    if tuple(gshape) == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(shape) if d == 1 and gshape[lead + i] != 1]
    s = ctx.emit("ReduceSumD", [g], {"axes": axes, "keep_dims": True}, suffix=f"{tag}_sum")[0]
    return ctx.emit("Reshape", [s, ctx.make_const(f"{tag}_shape", np.array(shape, np.int64))], suffix=f"{tag}_shape")[0]


def _rules(ctx: NodeCtx, node, g, value, tag):
    """d(output)/d(input) applied to the incoming gradient g, per input of `node`."""
    a = value(node.input[0])
    b = value(node.input[1]) if len(node.input) > 1 else None
    emit = lambda t, ins, sfx: ctx.emit(t, ins, suffix=f"{tag}_{sfx}")[0]  # noqa: E731
    op = node.op_type
    if op == "Add":
        return [g, g]
    if op == "Sub":
        return [g, emit("Neg", [g], "neg")]
    if op == "Mul":
        return [emit("Mul", [g, b], "da"), emit("Mul", [g, a], "db")]
    if op == "Div":
        ga = emit("RealDiv", [g, b], "da")
        return [ga, emit("Neg", [emit("Mul", [ga, emit("RealDiv", [a, b], "q")], "gq")], "db")]
    if op == "Neg":
        return [emit("Neg", [g], "neg")]
    if op == "Identity":
        return [g]
    raise AdapterError(f"Gradient through {op} is not supported (Add, Sub, Mul, Div, Neg, Identity)")


@onnx_op("Gradient", TRAINING)
class Gradient(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        xs, y = list(ctx.attr("xs")), ctx.attr("y")
        if ctx.attr("zs"):
            raise AdapterError("Gradient with zs is not supported")
        producers = {o: n for n in ctx.conv.model.graph.node for o in n.output}
        order, seen = [], set()

        def visit(t):  # post-order DFS over the forward graph from y
            n = producers.get(t)
            if n is None or id(n) in seen or n is ctx.node:
                return
            seen.add(id(n))
            for i in n.input:
                visit(i)
            order.append(n)
        visit(y)
        yv = ctx.conv.value(y)
        for x in [y, *xs]:
            v = ctx.conv.value(x)
            ctx.const_budget(v.desc.numel if v.desc.known else 0, np.dtype(v.desc.dtype).itemsize, "a gradient seed")
        grads = {y: ctx.make_const("dy", np.ones(yv.desc.shape, yv.desc.dtype))}
        for k, n in enumerate(reversed(order)):
            g = grads.get(n.output[0])
            if g is None:
                continue
            for i, gi in zip(n.input, _rules(ctx, n, g, ctx.conv.value, f"g{k}")):
                gi = _unbroadcast(ctx, gi, ctx.conv.value(i).desc.shape, f"g{k}_{i}")
                grads[i] = gi if i not in grads else ctx.emit("Add", [grads[i], gi], suffix=f"acc{k}")[0]
        outs = []
        for x in xs:
            xv = ctx.conv.value(x)
            outs.append(grads.get(x) or ctx.make_const("zero", np.zeros(xv.desc.shape, xv.desc.dtype)))
        return [ctx.emit("Identity", [o], suffix=f"d{k}")[0] for k, o in enumerate(outs)]
