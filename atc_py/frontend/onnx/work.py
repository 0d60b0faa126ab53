"""The work an ONNX graph implies, counted without converting it: its subgraphs at every level (each becomes
an IR graph of its own) and the nodes of a body (what one unrolled iteration or SequenceMap element copies).
Both counts stop just past their limit, so counting a file that asks for 2^18 branches costs no more than
counting the limit."""
from __future__ import annotations

from ...common.limits import MAX_SUBGRAPHS
from ..import_budget import ImportBudget
from . import onnx_lite as onnx


def _owned(node: onnx.NodeProto) -> list:
    subs = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            subs.append(a.g)
        elif a.type == onnx.AttributeProto.GRAPHS:
            subs.extend(a.graphs)
    return subs


def count_subgraphs(g: onnx.GraphProto, limit: int) -> int:
    """Subgraphs g's nodes own at every level, counted up to limit + 1."""
    n = 0
    stack = [g]
    while stack:
        for node in stack.pop().node:
            for sub in _owned(node):
                n += 1
                if n > limit:
                    return n
                stack.append(sub)
    return n


def body_nodes(g: onnx.GraphProto, limit: int) -> int:
    """Nodes of g and of the subgraphs its nodes own, counted up to limit + 1."""
    n = 0
    stack = [g]
    while stack:
        graph = stack.pop()
        n += len(graph.node)
        if n > limit:
            return n
        for node in graph.node:
            stack.extend(_owned(node))
    return n


def check_work(g: onnx.GraphProto, path: str, budget: ImportBudget | None = None) -> None:
    """E10041 when the graph's subgraphs do not fit the budget (a fresh one: the file alone)."""
    budget = budget or ImportBudget(path)
    budget.plan_subgraphs(count_subgraphs(g, MAX_SUBGRAPHS - budget.subgraphs))
