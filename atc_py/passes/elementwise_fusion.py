"""Chains of elementwise ops become one FusedElementwise kernel (ops/fused_elementwise.py): one task, and the
intermediates never go through device memory. Runs per static model after partitioning (the pipeline's
fuse_static), so dtypes are final and --static_model_ops_lower_limit counted the graph's own ops.

A node joins its consumer's group when its output has that one consumer, is not a graph output, has the
group's shape (no broadcast growth inside the chain), both ops pass fusable() (they compute with the base
elementwise kernels) and they carry the same compiler attributes. Every member but the group's last feeds
only the group, so a group is a convex piece of the graph; its other inputs become the fused node's inputs.
FusedElementwise is not written in place over an input (the memory planner's in-place families exclude it).
"""
from __future__ import annotations

import json

from ..ir.graph import Graph, Node
from ..ops import get_op
from ..ops.elementwise import BinaryOp, UnaryOp
from .infer import infer_node

ARITHMETIC = {"Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum"}


def fusable(node: Node) -> bool:
    """Elementwise with the base kernel's compute (op fn over the flat blocks), known shape, plain inputs."""
    spec = get_op(node.op_type)
    epilogue = {k for k, v in node.attrs.items() if k.startswith("fused_") and v}
    if node.control_inputs or len(node.outputs) != 1 or not node.outputs[0].desc.known or \
            epilogue - ({"fused_relu"} if node.op_type == "Add" else set()):
        return False
    if isinstance(spec, UnaryOp):
        return type(spec).compute is UnaryOp.compute and len(node.inputs) == 1 and node.inputs[0] is not None
    # ARITHMETIC ops compute fn(a, b) into the output dtype (Add's own compute only adds a fused Relu, excluded)
    return node.op_type in ARITHMETIC and isinstance(spec, BinaryOp) and len(node.inputs) == 2 and \
        all(v is not None for v in node.inputs)


def _private(node: Node) -> dict:
    """Compiler attributes (_precision_mode, _super_kernel_scope, ...): a group's members share them."""
    return {k: v for k, v in node.attrs.items() if k.startswith("_")}


def _sink_of(node: Node) -> Node | None:
    """The consumer node joins, or None."""
    out = node.outputs[0]
    if len(out.consumers) != 1:
        return None
    user, _ = out.consumers[0]
    if user.op_type == "NetOutput" or not fusable(user) or user.outputs[0].desc.shape != out.desc.shape or \
            _private(user) != _private(node):
        return None
    return user


def fuse_elementwise(graph: Graph) -> int:
    """Returns the number of ops folded into fused kernels (members minus one per group)."""
    graph.topo_sort()
    last_of: dict[int, Node] = {}        # member -> its group's last node
    groups: dict[int, list[Node]] = {}   # last node -> its members
    for node in reversed(graph.nodes):   # consumers first: a node joins the group of the consumer it feeds
        if not fusable(node):
            continue
        sink = _sink_of(node)            # fusable and later in topological order: already placed
        last = last_of[id(sink)] if sink is not None else node
        last_of[id(node)] = last
        groups.setdefault(id(last), []).append(node)
    fused = 0
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    dead: list[Node] = []
    for nodes in groups.values():
        if len(nodes) < 2:
            continue
        nodes.sort(key=lambda n: order[id(n)])
        last = nodes[-1]
        result: dict[int, int] = {}      # member -> the step holding its result
        inputs, steps, dtypes = [], [], []
        for n in nodes:
            refs = []
            for v in n.inputs:
                if v.producer is not None and id(v.producer) in result:
                    refs.append(-result[id(v.producer)] - 1)
                else:
                    if not any(v is x for x in inputs):
                        inputs.append(v)
                    refs.append(next(k for k, x in enumerate(inputs) if x is v))
            steps.append([n.op_type, refs])
            dtypes.append(n.outputs[0].desc.dtype)
            if n.attrs.get("fused_relu"):   # an Add with its Relu epilogue (relu_fusion): two steps
                steps.append(["Relu", [-len(steps)]])
                dtypes.append(n.outputs[0].desc.dtype)
            result[id(n)] = len(steps) - 1
        attrs = {**_private(last), "program": json.dumps(steps), "step_dtypes": dtypes}
        new = graph.add_node(graph.unique_name(f"{last.name}_fused"), "FusedElementwise", inputs,
                             [last.outputs[0].desc], attrs)
        infer_node(new)
        new.meta = dict(last.meta)   # engine and core type (AI Core vector), as its members had
        graph.replace_all_uses(last.outputs[0], new.outputs[0])
        for n in nodes:
            graph.detach(n)
        dead.extend(nodes)
        fused += len(nodes) - 1
    graph.remove_nodes(dead)
    graph.topo_sort()
    return fused
