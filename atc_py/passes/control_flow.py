"""Simplification of control flow before it is lowered.

* `select_branches` (switch `control_flow`): an If / Case whose predicate is a constant (after folding) is
  replaced by the nodes of the branch it selects.
* `unroll_loops` (switch `loop_unroll`): a While whose trip count is known at compile time and whose body is
  static is replaced by that many copies of its body when the copies cost less than the loop: each iteration
  of a lowered loop pays its cond subgraph, a label switch, stream activations, copies of the carried values
  and a jump (engines/control.py); a copy of the body pays nothing but its own tasks. The budget keeps the
  task list (and the .om) small: at most UNROLL_MAX_TRIPS iterations and UNROLL_MAX_TASKS body tasks in all.

Both recurse into subgraphs (inner loops first) and run before engines, partitioning and lowering.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Node, Value, all_graphs
from ..ops import get_op
from ..ops.control import SCAN_OUTPUTS, TRIP_COUNT, Case

UNROLL_MAX_TRIPS = 8
UNROLL_MAX_TASKS = 64


def clone_graph(sub: Graph, namespace: Graph, name: str) -> Graph:
    """A deep copy of `sub` (nested subgraphs too) with fresh node names in `namespace`."""
    new = Graph(namespace.unique_name(name), namespace=namespace)
    namespace._names.add(new.name)
    vmap: dict[int, Value] = {}
    for n in sub.nodes:
        c = _copy_node(new, n, [vmap.get(id(v)) if v is not None else None for v in n.inputs], n.name)
        for a, b in zip(n.outputs, c.outputs):
            vmap[id(a)] = b
    return new


def _copy_node(g: Graph, n: Node, inputs: list, base: str) -> Node:
    c = g.add_node(g.unique_name(base), n.op_type, inputs, [v.desc for v in n.outputs], dict(n.attrs))
    c.meta = dict(n.meta)
    if n.op_type == "Const":
        c.outputs[0].share_data(n.outputs[0])
    c.subgraphs = {k: clone_graph(s, g, s.name) for k, s in n.subgraphs.items()}
    return c


def inline(parent: Graph, sub: Graph, args: list[Value | None], tag: str) -> list[Value]:
    """Copy the nodes of `sub` into `parent`, its Data k bound to args[k]; returns its outputs' Values."""
    vmap: dict[int, Value | None] = {}
    for d in sub.data_nodes:
        k = int(d.attrs["index"])
        vmap[id(d.outputs[0])] = args[k] if k < len(args) else None
    for n in sub.nodes:
        if n.op_type in ("Data", "NetOutput"):
            continue
        c = _copy_node(parent, n, [vmap.get(id(v)) if v is not None else None for v in n.inputs], f"{tag}_{n.name}")
        for a, b in zip(n.outputs, c.outputs):
            vmap[id(a)] = b
    return [vmap[id(v)] for v in sub.net_output.inputs]


def _replace(graph: Graph, node: Node, results: list[Value]) -> None:
    for old, new in zip(node.outputs, results):
        graph.replace_all_uses(old, new)
    graph.detach(node)


def _branch_of(node: Node) -> Graph | None:
    pred = node.const_input(0)
    if pred is None:
        return None
    v = np.asarray(pred).reshape(-1)
    if v.size == 0:
        return None
    if node.op_type == "If":
        return node.subgraphs["then_branch" if bool(v[0]) else "else_branch"]
    branches = Case().branches(node)
    k = int(v[0])
    return branches[k if 0 <= k < len(branches) else len(branches) - 1]   # out of range: the last branch


def select_branches(graph: Graph) -> int:
    """If / Case with a constant predicate -> the selected branch's nodes. Returns how many were replaced."""
    done = 0
    for g in all_graphs(graph)[::-1]:          # innermost graphs first
        dead = []
        for node in list(g.nodes):
            if node.op_type not in ("If", "Case"):
                continue
            branch = _branch_of(node)
            if branch is None:
                continue
            _replace(g, node, inline(g, branch, node.inputs[1:], node.name))
            dead.append(node)
        if dead:
            g.remove_nodes(dead)
            g.topo_sort()
            done += len(dead)
    return done


def _task_count(g: Graph) -> int:
    n = 0
    for node in g.nodes:
        spec = get_op(node.op_type)
        n += 0 if spec.no_task or node.op_type == "Const" else 1
        n += sum(_task_count(s) for s in node.subgraphs.values())
    return n


def _static(g: Graph) -> bool:
    return all(v.desc.known for n in g.nodes for v in n.outputs) and \
        all(_static(s) for n in g.nodes for s in n.subgraphs.values())


def unroll_loops(graph: Graph) -> int:
    """While loops with a known trip count and a static body -> copies of the body, when within budget."""
    done = 0
    for g in all_graphs(graph)[::-1]:
        dead = []
        for node in list(g.nodes):
            trip = int(node.attrs.get(TRIP_COUNT, -1))
            if node.op_type != "While" or trip < 0 or node.attrs.get(SCAN_OUTPUTS):
                continue
            body = node.subgraphs["body"]
            if trip > UNROLL_MAX_TRIPS or trip * _task_count(body) > UNROLL_MAX_TASKS or not _static(body):
                continue
            carried = list(node.inputs)
            for k in range(trip):
                carried = inline(g, body, carried, f"{node.name}_iter{k}")
            _replace(g, node, carried)
            dead.append(node)
        if dead:
            g.remove_nodes(dead)
            g.topo_sort()
            done += len(dead)
    return done
