"""The work a TensorFlow graph implies through its function library, counted without converting anything.

A function is named, not held: every If / While / Case that names it converts its own copy into a subgraph,
and every PartitionedCall inlines its own copy, so a library of 18 small functions each naming the next twice
asks for 2^18 copies. Counted per function once (memoized, the library walked without recursion), capped just
past the limits, this takes time linear in the file whatever the copies would number."""
from __future__ import annotations

from ...proto import tf_graph_pb2 as tf
from ..import_budget import COUNT_CAP as _CAP

CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")   # inlined: the callee's nodes join the caller's graph


def _refs(nodes) -> list[tuple[str, bool]]:
    """(function name, inlined?) for each function the nodes' attributes name."""
    out = []
    for n in nodes:
        call = n.op in CALL_OPS
        for a in n.attr.values():
            kind = a.WhichOneof("value")
            if kind == "func":
                out.append((a.func.name, call))
            elif kind == "list":
                out.extend((f.name, call) for f in a.list.func)
    return out


def library_work(gd: tf.GraphDef) -> tuple[int, int]:
    """(subgraphs the graph's control flow converts, nodes converted beyond those the file holds), when every
    function is converted once per reference. A function that reaches itself counts nothing for the cycle
    (the converter refuses the recursion by its depth)."""
    lib = {f.signature.name: f for f in gd.library.function}
    done: dict[str, tuple[int, int]] = {}      # function -> (subgraphs, nodes) of one copy, its callees' copies in
    on_path: set[str] = set()

    def total(refs) -> tuple[int, int]:
        subs = nodes = 0
        for name, call in refs:
            s, k = done.get(name, (0, 0))
            subs = min(_CAP, subs + s + (0 if call else 1))
            nodes = min(_CAP, nodes + k)
        return subs, nodes

    for start in lib:
        if start in done:
            continue
        stack = [(start, _refs(lib[start].node_def), 0)]
        on_path.add(start)
        while stack:
            name, refs, k = stack[-1]
            while k < len(refs) and (refs[k][0] in done or refs[k][0] in on_path or refs[k][0] not in lib):
                k += 1
            if k < len(refs):
                stack[-1] = (name, refs, k + 1)
                callee = refs[k][0]
                on_path.add(callee)
                stack.append((callee, _refs(lib[callee].node_def), 0))
                continue
            stack.pop()
            on_path.discard(name)
            subs, nodes = total(refs)
            done[name] = (subs, min(_CAP, nodes + len(lib[name].node_def)))
    subs, nodes = total(_refs(gd.node))
    held = len(gd.node) + sum(len(f.node_def) for f in lib.values())
    return subs, _CAP if nodes >= _CAP else max(0, nodes + len(gd.node) - held)
