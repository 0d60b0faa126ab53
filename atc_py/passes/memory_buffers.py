"""The feature-map buffers the re-planners work on: tensors folded into the buffer that owns their bytes
(views and in-place chains share their root's) and workspaces, with topological first/last use and the task
nodes that touch them."""
from __future__ import annotations

from ..ir.graph import Graph, Value
from ..ops import get_op

MEM_ALIGN = 512            # GE MEM_ALIGN_SIZE
OUTPUT_MARK = "<model output>"   # a pseudo user of graph outputs: the host reads them after the model ends


def alias_src(spec, node, v) -> Value | None:
    """The input Value whose bytes output `v` of `node` shares (views, While's carried values), or None."""
    k = spec.alias_input(node, v.index)
    return node.inputs[k] if k is not None and k < len(node.inputs) else None


def align(n: int, a: int = MEM_ALIGN) -> int:
    return -(-n // a) * a


def collect_buffers(graph: Graph, plan, workspaces: dict[str, list[int]]):
    """Reusable buffers (tensors after folding views and in-place chains into their root, and workspaces):
    items (size, first, last, key, users) with topological first/last uses, and bufs (root -> its values)."""
    order = {n.name: k for k, n in enumerate(graph.nodes)}
    end = len(graph.nodes)
    root: dict[int, Value] = {}
    bufs: dict[int, list] = {}            # id(root) -> [first, last, size, values]
    users: dict[int, set] = {}            # id(root) -> task nodes writing or reading it
    dedicated_in = {id(n.outputs[0]) for n in graph.data_nodes}
    for node in graph.nodes:
        spec = get_op(node.op_type)
        i = order[node.name]
        for v in node.outputs:
            src = alias_src(spec, node, v)
            if id(v) in plan.inplace_of:
                src = plan.inplace_of[id(v)]
            r = root.get(id(src), src) if src is not None else v
            root[id(v)] = r
            if id(r) in bufs:
                bufs[id(r)][3].append(v)
                bufs[id(r)][1] = max(bufs[id(r)][1], i)
                if not spec.no_task:
                    users[id(r)].add(node.name)
            elif r is v and id(v) in plan.fm_offset and id(v) not in dedicated_in:
                bufs[id(v)] = [i, i, align(max(v.desc.nbytes, 1)), [v]]
                users[id(v)] = {node.name}
        for v in node.inputs:
            if v is not None and id(root.get(id(v), v)) in bufs:
                bufs[id(root.get(id(v), v))][1] = end if node.op_type == "NetOutput" else max(
                    bufs[id(root.get(id(v), v))][1], i)
                if not spec.no_task and node.op_type != "NetOutput":
                    users[id(root.get(id(v), v))].add(node.name)
    net_roots = {id(root.get(id(v), v)) for v in graph.net_output.inputs}
    items = [(b[2], b[0], b[1], ("t", k), frozenset(users[k]) | ({OUTPUT_MARK} if k in net_roots else frozenset()))
             for k, b in bufs.items()]
    for name, sizes in workspaces.items():
        if name in order:
            items += [(align(max(sz, 1)), order[name], order[name], ("w", name, j), frozenset([name]))
                      for j, sz in enumerate(sizes)]
    return items, bufs, order
