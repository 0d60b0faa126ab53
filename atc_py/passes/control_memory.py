"""Memory plan of a static model with lowered control flow (engines/labels.py).

Each subgraph is planned on its own (its tensors reuse bytes among themselves, in its task order: one
stream); its Data nodes and the copies into its parent's buffers are *external* (engines/labels.py pins
them). The subgraphs of one control node share one arena, the node's workspace in the enclosing plan: a
While's cond and body never hold tensors at the same time (each iteration's tensors die in it) and only one
branch of an If runs, so the arena is the largest of them. Then, top down, each arena is placed at its
workspace's offset and the pinned Values take their parents' addresses. Loop-carried buffers are the While's
outputs, aliased to its (copied-in) inputs in the enclosing plan: alive from before the loop to its last
reader after it, across all iterations.
"""
from __future__ import annotations

from ..ir.graph import Graph, Value
from .memory import MemoryPlan, align, plan_memory
from .streams import StreamPlan

PINNED = "_pinned_to"


def _external(sub: Graph) -> frozenset:
    ext = set()
    for n in sub.nodes:
        for v in n.outputs:
            if PINNED in n.meta:
                ext.add(id(v))
    return frozenset(ext)


def _by_graph(graph: Graph, workspaces: dict[str, list[int]]) -> dict[int, dict[str, list[int]]]:
    """The workspaces of each graph's own nodes (by id of the graph), each in the model-wide dict's order: a
    graph's plan looks at its own, so a model of thousands of subgraphs is planned in time linear in its nodes."""
    graph_of: dict[str, int] = {}
    stack = [graph]
    while stack:
        g = stack.pop()
        for n in g.nodes:
            graph_of[n.name] = id(g)
            stack.extend(n.subgraphs.values())
    out: dict[int, dict[str, list[int]]] = {}
    for name, sizes in workspaces.items():
        if name in graph_of:
            out.setdefault(graph_of[name], {})[name] = sizes
    return out


def _plan_sub(sub: Graph, by_graph: dict, weights: MemoryPlan, reuse: bool) -> MemoryPlan:
    arenas = _arenas(sub, by_graph, weights, reuse)
    ws = dict(by_graph.get(id(sub), {}))
    for name, (size, _) in arenas.items():
        ws[name] = [size]
    plan = plan_memory(sub, ws, None, reuse, weights=weights, external=_external(sub))
    _merge_arenas(plan, arenas)
    return plan


def _arenas(g: Graph, by_graph: dict, weights: MemoryPlan, reuse: bool) -> dict[str, tuple[int, list[MemoryPlan]]]:
    """Per control node of g: (arena bytes, its subgraphs' plans relative to the arena)."""
    out = {}
    for n in g.nodes:
        if not n.subgraphs:
            continue
        plans = [_plan_sub(s, by_graph, weights, reuse) for s in n.subgraphs.values()]
        out[n.name] = (align(max([p.memory_size for p in plans] + [1])), plans)
    return out


def _merge_arenas(plan: MemoryPlan, arenas: dict) -> None:
    """Place each control node's subgraph plans at the node's workspace offset, into `plan`."""
    for name, (_, plans) in arenas.items():
        base = plan.workspace[name][0][0]
        del plan.workspace[name]
        for p in plans:
            for k, off in p.fm_offset.items():
                plan.fm_offset[k] = base + off
            for node, spaces in p.workspace.items():
                plan.workspace[node] = [(base + off, size) for off, size in spaces]
            plan.external_views.update(p.external_views)
            plan.inplace += p.inplace
            plan.workspace_size = max(plan.workspace_size, p.workspace_size)


def _resolve_pins(graph: Graph, plan: MemoryPlan) -> None:
    """Top down: pinned Values take their parent Value's offset; views of them follow."""
    for n in graph.nodes:
        for v in n.outputs:
            pin = n.meta.get(PINNED)
            if pin:
                target: Value = pin[0]
                if id(target) in plan.fm_offset:
                    plan.fm_offset[id(v)] = plan.fm_offset[id(target)]
                elif id(target) in plan.weight_offset:
                    plan.weight_offset[id(v)] = plan.weight_offset[id(target)]
        for v in n.outputs:
            r = plan.external_views.get(id(v))
            if r is not None:
                if id(r) in plan.fm_offset:
                    plan.fm_offset[id(v)] = plan.fm_offset[id(r)]
                elif id(r) in plan.weight_offset:
                    plan.weight_offset[id(v)] = plan.weight_offset[id(r)]
        for s in n.subgraphs.values():
            _resolve_pins(s, plan)


def plan_model_memory(graph: Graph, workspaces: dict[str, list[int]], streams: StreamPlan | None,
                      reuse: bool) -> MemoryPlan:
    """plan_memory of the root graph with every control node's subgraphs placed in its arena."""
    if not any(n.subgraphs for n in graph.nodes):
        return plan_memory(graph, workspaces, streams, reuse)
    from .memory import plan_weights
    weights = MemoryPlan()
    plan_weights(graph, weights)
    by_graph = _by_graph(graph, workspaces)
    arenas = _arenas(graph, by_graph, weights, reuse)
    ws = dict(workspaces)
    for name, (size, _) in arenas.items():
        ws[name] = [size]
    plan = plan_memory(graph, ws, streams, reuse, weights=weights)
    plan.weights, plan.weight_size = weights.weights, weights.weight_size
    _merge_arenas(plan, arenas)
    _resolve_pins(graph, plan)
    return plan
