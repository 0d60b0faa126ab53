"""Transposes move down through elementwise ops until they meet their inverse (onnxruntime's transpose
optimizer does the same). The NHWC TensorFlow adapters wrap every window op in NCHW transposes, so a
Conv2D -> Transpose -> BiasAdd -> Relu -> Transpose -> MaxPool chain keeps two full memory passes per layer;
once the first Transpose is below the Relu the pair cancels (transpose_cancel) and the bias Add sits right
after the Conv2D (conv_bias).

A Transpose moves below its only consumer when that consumer is elementwise: one input (Relu, Sigmoid,
Cast, ...), or two with the other a constant that broadcasts into the Transpose's output (the constant is
transposed back instead). The values are the same; only where the layout change happens moves.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import ORIGIN_PERM, Graph, Node
from ..ops import get_op
from ..ops.core.infer import infer_node
from ..ops.elementwise import BinaryOp, UnaryOp
from .fusion import transpose_cancel

MAX_ROUNDS = 64   # each round moves every movable transpose one op down


def _movable(t: Node) -> tuple[Node, int] | None:
    """(consumer, input index of the transposed value) if t can move below its only consumer."""
    y = t.outputs[0]
    if len(y.consumers) != 1:
        return None
    u, k = y.consumers[0]
    spec = get_op(u.op_type)
    if len(u.outputs) != 1 or u.outputs[0].desc.dtype not in get_op("TransposeD").dtypes:
        return None   # (t will transpose u's result)
    if isinstance(spec, UnaryOp) and len(u.inputs) == 1:
        return u, k
    if u.op_type == "PadV3D" and len(u.inputs) == 1 and u.attrs.get("paddings") is not None:
        return u, k      # a pad moves with its paddings permuted (TensorFlow's NHWC pad before a strided conv)
    if isinstance(spec, BinaryOp) and len(spec.inputs) == 2 and len(u.inputs) == 2:
        other = u.inputs[1 - k]
        if other is not None and other.is_const and u.outputs[0].desc.shape == y.desc.shape \
                and len(other.desc.shape) <= len(y.desc.shape):
            return u, k
        if other is not None and _twin(t, other) and u.outputs[0].desc.shape == y.desc.shape:
            return u, k
    return None


def _twin(t: Node, other) -> bool:
    """`other` is the output of another TransposeD with t's perm (a residual Add of two transposed tensors): the op
    reads both untransposed and its result is transposed once (the other keeps its transpose only while something
    else reads it)."""
    o = other.producer
    return o is not None and o is not t and o.op_type == "TransposeD" and \
        [int(p) for p in o.attrs["perm"]] == [int(p) for p in t.attrs["perm"]] and \
        o.inputs[0] is not None and o.inputs[0].desc.shape == t.inputs[0].desc.shape


def _untranspose_const(data: np.ndarray, perm: list[int]) -> np.ndarray:
    """c' with transpose(c', perm) == c under broadcasting: pad c to the rank on the left, apply the inverse."""
    rank = len(perm)
    padded = data.reshape((1,) * (rank - data.ndim) + data.shape)
    return np.ascontiguousarray(np.transpose(padded, np.argsort(perm)))


def sink_transposes(graph: Graph) -> int:
    """Move transposes below elementwise consumers; returns the number of moves."""
    moved = 0
    for _ in range(MAX_ROUNDS):
        step = 0
        for t in list(graph.nodes):
            if t.op_type != "TransposeD" or t.inputs[0] is None:
                continue
            found = _movable(t)
            if found is None:
                continue
            u, k = found
            perm = [int(p) for p in t.attrs["perm"]]
            x, y, z = t.inputs[0], t.outputs[0], u.outputs[0]
            if len(u.inputs) == 2 and u.inputs[1 - k].is_const:
                c = u.inputs[1 - k]
                graph.set_input(u, 1 - k, graph.add_const(graph.unique_name(f"{c.producer.name}_untransposed"),
                                                         _untranspose_const(c.data, perm)))
            elif len(u.inputs) == 2:           # its twin: the other operand untransposed too, the twin gone
                twin = u.inputs[1 - k].producer
                graph.set_input(u, 1 - k, twin.inputs[0])
                if not twin.outputs[0].consumers:
                    graph.remove_node(twin)
            if u.op_type == "PadV3D":        # transpose(x, p) padded by P == x padded by P[argsort(p)], transposed
                pads = [int(v) for v in u.attrs["paddings"]]
                inv = np.argsort(perm)
                u.attrs["paddings"] = [pads[2 * int(inv[j]) + e] for j in range(len(perm)) for e in (0, 1)]
            consumers = list(z.consumers)
            before = u.attrs.get(ORIGIN_PERM)  # u's output is now the framework's tensor untransposed (dumps)
            u.attrs[ORIGIN_PERM] = [perm[j] for j in before] if before else list(perm)
            graph.set_input(u, k, x)          # u now works on the untransposed layout
            graph.set_input(t, 0, z)          # and t transposes its result
            for node, i in consumers:
                graph.set_input(node, i, y)
            infer_node(u)
            infer_node(t)
            step += 1
        moved += step
        if not step:
            break
        graph.topo_sort()
    return moved


def cancel_transposes(graph: Graph) -> int:
    """The transpose_cancel pass: sink transposes through elementwise ops and cancel inverse pairs, until
    neither changes anything; returns the transposes removed."""
    before = sum(n.op_type == "TransposeD" for n in graph.nodes)
    while sink_transposes(graph) + transpose_cancel(graph):
        pass
    return before - sum(n.op_type == "TransposeD" for n in graph.nodes)
