"""Stream assignment for a static graph: independent branches run on separate streams; EVENT_RECORD /
EVENT_WAIT only where data flows across streams and the order is not already implied.

A task node continues the stream of a task predecessor whose stream it would extend (the predecessor is
that stream's tail; the graph inputs count as the first tail of stream 0, so the first source node takes
stream 0 and other sources branch); otherwise it opens a new stream (up to MAX_STREAMS, then the stream that was idle
longest). Collectives (the HCCL engine) run on a stream of their own that no other task continues, as GE's
IndependentStreamPass gives an independent engine one (compiler/graph/build/stream/logical_stream_allocator.cc):
events join it to the compute streams where data crosses, so compute that does not need a collective's result
overlaps it. Each node gets a vector clock (one entry per stream): x happens before y iff
clock[x][stream x] <= clock[y][stream x]. The memory planner uses that to decide which tensors may share
bytes; the task generator uses the event plan.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.graph import Graph, Node
from ..ops import get_op
from ..ops.core.base import HCCL

MAX_STREAMS = 8   # compute streams per model (assumed limit; GE caps parallelism well below normal_stream_num)


@dataclass
class StreamPlan:
    stream_of: dict[str, int] = field(default_factory=dict)
    clock: dict[str, tuple[int, ...]] = field(default_factory=dict)
    waits: dict[str, list[int]] = field(default_factory=dict)     # node -> events waited before it
    records: dict[str, list[int]] = field(default_factory=dict)   # node -> events recorded after it
    num_streams: int = 1
    num_events: int = 0

    def happens_before(self, a: str, b: str) -> bool:
        """a's task completes before b's starts (a == b counts as before)."""
        if a == b:
            return True
        s = self.stream_of[a]
        ca, cb = self.clock[a], self.clock[b]
        return s < len(cb) and ca[s] <= cb[s]


def task_producers(node: Node) -> list[Node]:
    """The task nodes whose outputs `node` reads, looking through view ops (Reshape, Flatten)."""
    out, seen = [], set()
    stack = [v.producer for v in node.inputs if v is not None and v.producer is not None]
    while stack:
        p = stack.pop(0)
        if id(p) in seen:
            continue
        seen.add(id(p))
        spec = get_op(p.op_type)
        if p.op_type in ("Data", "Const"):
            continue
        if spec.no_task or "_label_owner" in p.attrs:   # views; a control node's own copies run in its region
            stack += [v.producer for v in p.inputs if v is not None and v.producer is not None]
            continue
        out.append(p)
    return out


SUPER_KERNEL_SCOPE = "_super_kernel_scope"
INPUTS = "<graph inputs>"   # a virtual predecessor of the source nodes, at the tail of stream 0


def assign_streams(graph: Graph, single_stream: bool = False, forced: dict[str, int] | None = None) -> StreamPlan:
    """Members of one `_super_kernel_scope` (consecutive task nodes) share the stream of the first member.
    `forced` (tests) pins nodes to streams; the events and clocks follow from it the same way. With one stream
    (--enable_single_stream) the collectives share it too."""
    plan = StreamPlan()
    hccl_stream: int | None = None       # the collectives' stream, opened at the first one
    # a control node is one task here (its subgraphs' tasks run on its stream); the switch it owns too
    tasks = [n for n in graph.nodes if not get_op(n.op_type).no_task and "_label_owner" not in n.attrs]
    prev_scope, prev_name = None, None
    tail: dict[int, str] = {}            # stream -> its last node
    last_used: dict[int, int] = {}       # stream -> topo index of its tail
    count: dict[int, int] = {}           # stream -> tasks on it
    view: dict[int, list[int]] = {}      # stream -> its current vector clock
    for k, n in enumerate(tasks):
        preds = task_producers(n)
        chosen = 0 if single_stream else (forced or {}).get(n.name)
        collective = get_op(n.op_type).engine == HCCL
        if chosen is None and collective:
            if hccl_stream is None and len(tail) < MAX_STREAMS:
                hccl_stream = len(tail)
            chosen = hccl_stream
        scope = n.attrs.get(SUPER_KERNEL_SCOPE)
        if chosen is None and scope and scope == prev_scope and plan.stream_of[prev_name] != hccl_stream:
            chosen = plan.stream_of[prev_name]
        prev_scope, prev_name = scope, n.name
        if chosen is None:
            for p in preds:
                s = plan.stream_of[p.name]
                if tail.get(s) == p.name and s != hccl_stream:
                    chosen = s
                    break
        if chosen is None and not preds and tail.get(0, INPUTS) == INPUTS and hccl_stream != 0:
            chosen = 0       # the first source continues the graph inputs on stream 0; later ones branch
        if chosen is None:
            if not tail:
                chosen = 0
            elif len(tail) < MAX_STREAMS:
                chosen = len(tail)
            else:
                chosen = min((s for s in tail if s != hccl_stream), key=lambda s: last_used[s])
        width = max(len(tail) + 1, chosen + 1, max(tail, default=0) + 1)
        vc = list(view.get(chosen, []))
        vc += [0] * max(0, width - len(vc))
        waits = []
        for p in preds:
            s = plan.stream_of[p.name]
            pc = plan.clock[p.name]
            if s != chosen and (s >= len(vc) or vc[s] < pc[s]):
                ev = plan.num_events
                plan.num_events += 1
                plan.records.setdefault(p.name, []).append(ev)
                waits.append(ev)
                vc = [max(a, b) for a, b in zip(vc + [0] * (len(pc) - len(vc)), list(pc) + [0] * (len(vc) - len(pc)))]
        count[chosen] = count.get(chosen, 0) + 1
        vc[chosen] = count[chosen]
        plan.stream_of[n.name] = chosen
        plan.clock[n.name] = tuple(vc)
        if waits:
            plan.waits[n.name] = waits
        view[chosen] = vc
        tail[chosen] = n.name
        last_used[chosen] = k
    plan.num_streams = max(1, max(tail, default=0) + 1)
    width = plan.num_streams
    plan.clock = {k: tuple(v) + (0,) * (width - len(v)) for k, v in plan.clock.items()}
    return plan
