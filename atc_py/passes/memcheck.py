"""Checks a memory plan against the stream plan: two tensors may share bytes only if every task touching
one happens before the task that first writes the other. Used by tests (property tests on random DAGs)."""
from __future__ import annotations

from ..ir.graph import Graph
from ..ops import get_op
from .memory import MemoryPlan, align
from .memory_buffers import alias_src
from .streams import StreamPlan


def tensor_users(graph: Graph) -> dict[int, tuple[str, list[str], int, int]]:
    """id(root value) -> (writer task, reader tasks, offset placeholder, size): views fold into their root."""
    root, info = {}, {}
    for node in graph.nodes:
        spec = get_op(node.op_type)
        for v in node.outputs:
            src = alias_src(spec, node, v)
            r = root.get(id(src), src) if src is not None else v
            root[id(v)] = r
            if r is v and not spec.no_task:
                info[id(v)] = [node.name, [], v]
        if not spec.no_task:
            for v in node.inputs:
                if v is not None and id(root.get(id(v), v)) in info:
                    info[id(root.get(id(v), v))][1].append(node.name)
    return info


def conflicts(graph: Graph, plan: MemoryPlan, streams: StreamPlan | None) -> list[str]:
    order = {n.name: k for k, n in enumerate(graph.nodes)}

    def hb(a: str, b: str) -> bool:
        if streams is None:
            return order[a] <= order[b]
        return streams.happens_before(a, b)

    info = tensor_users(graph)
    roots = {}
    for node in graph.nodes:
        spec = get_op(node.op_type)
        for v in node.outputs:
            src = alias_src(spec, node, v)
            roots[id(v)] = roots.get(id(src), src) if src is not None else v
    outputs = {id(roots.get(id(v), v)) for v in graph.net_output.inputs}
    outputs |= {id(v) for v in graph.net_output.inputs}

    def rid_is_output(v) -> bool:
        """A graph output is read by the host after the model: no tensor may reuse its bytes afterwards.
        (An in-place output's donor shares its bytes by design and is checked through `inplace`.)"""
        return id(v) in outputs

    items = []
    for rid, (writer, readers, v) in info.items():
        if rid in plan.fm_offset:
            off = plan.fm_offset[rid]
            items.append((off, off + align(max(v.desc.nbytes, 1)), writer, readers, v))
    found = []
    items.sort(key=lambda x: x[0])
    for i, (lo1, hi1, w1, r1, v1) in enumerate(items):
        for lo2, hi2, w2, r2, v2 in items[i + 1:]:
            if lo2 >= hi1:
                break
            if w1 == w2:
                continue
            users1, users2 = [w1] + r1, [w2] + r2
            out1, out2 = rid_is_output(v1), rid_is_output(v2)
            first_then_second = not out1 and all(u != w2 and hb(u, w2) for u in users1)
            second_then_first = not out2 and all(u != w1 and hb(u, w1) for u in users2)
            inplace = (w2 in r1 and all(u == w2 or hb(u, w2) for u in users1)) or \
                      (w1 in r2 and all(u == w1 or hb(u, w1) for u in users2))
            if not (first_then_second or second_then_first or inplace):
                found.append(f"{v1.name} [{lo1}, {hi1}) and {v2.name} [{lo2}, {hi2}) share bytes but may be live together")
    return found

