"""Identity removal and dead-node removal."""
from __future__ import annotations

from ..ir.graph import Graph
from ..ops import get_op


def _pure(op_type: str) -> bool:
    spec = get_op(op_type)
    return spec is None or spec.pure


def remove_identities(graph: Graph) -> int:
    """Bypass Identity nodes, except one that would connect a graph input straight to the output."""
    gone = []
    for node in list(graph.nodes):
        if node.op_type != "Identity" or node.inputs[0] is None:
            continue
        src, out = node.inputs[0], node.outputs[0]
        feeds_output = any(c.op_type == "NetOutput" for c, _ in out.consumers)
        if feeds_output and src.producer is not None and src.producer.op_type in ("Data", "Const"):
            continue  # the model output must be a tensor of its own
        graph.replace_all_uses(out, src)
        graph.detach(node)
        gone.append(node)
    graph.remove_nodes(gone)
    return len(gone)


def remove_dead_nodes(graph: Graph) -> int:
    """Remove nodes nothing reaches NetOutput through (graph inputs stay: they are the model's interface; so do
    ops that are not pure functions of their inputs, and what they read: a collective, an HcomSend with no output,
    must run on every rank of its group)."""
    live = set()
    stack = [graph.net_output] + [n for n in graph.nodes if not _pure(n.op_type)]
    while stack:
        n = stack.pop()
        if id(n) in live:
            continue
        live.add(id(n))
        stack.extend(v.producer for v in n.inputs if v is not None and v.producer is not None)
        stack.extend(n.control_inputs)
    dead = [n for n in graph.nodes if id(n) not in live and n.op_type != "Data"]
    graph.remove_nodes(dead[::-1])
    return len(dead)
