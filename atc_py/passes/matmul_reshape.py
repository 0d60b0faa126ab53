"""batch_matmul_reshape: a BatchMatMulV2 of a 3-D x1 [B, M, K] and a 2-D weight whose M is small becomes one 2-D
product of [B*M, K], as CANN's FE graph fusion BatchMatMulV2ReshapeFusionPass does it (canndev
ops/built-in/fusion_pass/graph_fusion/ai_core/batch_matmul_v2_reshape_fusion_pass.cc).

Why: on the FRACTAL_NZ SoCs every batch's M is padded to a whole 16-row fractal, so a sequence-first Linear
([S, batch, K] at batch 1: M = 1) would do 16x the cube work and move 16x the bytes it needs; folded, the B*M rows
share fractals. The pass's two cases, with its constants: the product feeds an Add of a 1-D operand (its bias)
that has one consumer, possibly through a second Add of a same-shape operand (a residual), with B >= 50 and
M <= 32 (its "elemwise fusion" scenario; the Swish chain it also accepts is not matched here); or B >= 4096 and
M <= 64 (its "big batch" scenario). Shapes must be static and x1 not transposed. x1 gets a Reshape to
[B*M, K], the product and the Adds work on [B*M, N] (a residual operand reshaped too), and a Reshape after the
last of them gives the [B, M, N] the graph had."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Node, TensorDesc, Value

ELEMWISE_MIN_BATCH, ELEMWISE_MAX_M = 50, 32      # kBatchMinValue, kMaxValue
BIG_BATCH_MIN_BATCH, BIG_BATCH_MAX_M = 4096, 64  # kBigBatchBatchDim, kBigBatchMDim


def _single_consumer(v: Value) -> Node | None:
    return v.consumers[0][0] if len(v.consumers) == 1 else None


def _adds_after(mm: Node) -> list[Node] | None:
    """The Adds the elementwise scenario carries along: [bias add] or [bias add, residual add]; None if no match."""
    add = _single_consumer(mm.outputs[0])
    if add is None or add.op_type != "Add" or len(add.outputs[0].consumers) != 1:
        return None
    if not any(v is not None and len(v.desc.shape) == 1 for v in add.inputs):
        return None
    nxt = _single_consumer(add.outputs[0])
    if nxt is not None and nxt.op_type == "Add" and len(nxt.outputs[0].consumers) == 1:
        others = [v for v in nxt.inputs if v is not add.outputs[0]]
        if len(others) == 1 and others[0] is not None and others[0].desc.shape == mm.outputs[0].desc.shape:
            return [add, nxt]
    return [add]


def _reshape(graph: Graph, v: Value, shape: tuple[int, ...], base: str) -> Value:
    target = graph.add_const(graph.unique_name(f"{base}_shape"), np.array(shape, np.int64))
    node = graph.add_node(graph.unique_name(base), "Reshape", [v, target],
                          [TensorDesc(shape, v.desc.dtype, "ND", v.desc.origin_format)], {"allowzero": 0})
    return node.outputs[0]


def _static(*vs: Value) -> bool:
    return all(v is not None and all(d > 0 for d in v.desc.shape) for v in vs)


def batch_matmul_reshape(graph: Graph) -> int:
    changed = 0
    for mm in list(graph.nodes):
        if mm.op_type != "BatchMatMulV2" or len(mm.inputs) < 2 or mm.attrs.get("adj_x1"):
            continue
        x1, x2 = mm.inputs[0], mm.inputs[1]
        if not _static(x1, x2) or len(x1.desc.shape) != 3 or len(x2.desc.shape) != 2:
            continue
        b, m, k = x1.desc.shape
        adds = _adds_after(mm) if b >= ELEMWISE_MIN_BATCH and m <= ELEMWISE_MAX_M else None
        if adds is None and not (b >= BIG_BATCH_MIN_BATCH and m <= BIG_BATCH_MAX_M):
            continue
        out = mm.outputs[0]
        shape3 = tuple(out.desc.shape)
        rows = (b * m, shape3[-1])
        graph.set_input(mm, 0, _reshape(graph, x1, (b * m, k), f"{mm.name}_cann_Reshape_x1"))
        out.desc = TensorDesc(rows, out.desc.dtype, out.desc.format, out.desc.origin_format)
        last = mm
        for add in adds or []:
            for i, v in enumerate(add.inputs):
                if v is not None and v is not last.outputs[0] and len(v.desc.shape) > 1:
                    graph.set_input(add, i, _reshape(graph, v, rows, f"{add.name}_cann_Reshape_in{i}"))
            y = add.outputs[0]
            y.desc = TensorDesc(rows, y.desc.dtype, y.desc.format, y.desc.origin_format)
            last = add
        y = last.outputs[0]
        consumers = list(y.consumers)
        back = _reshape(graph, y, shape3, f"{last.name}_cann_Reshape_out")
        for node, i in consumers:
            graph.set_input(node, i, back)
        changed += 1
    if changed:
        graph.topo_sort()
    return changed
