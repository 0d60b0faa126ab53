"""Memory plan: weights (deduplicated, 512-aligned) and feature-map offsets with lifetime reuse.

Feature map: graph inputs and outputs get ranges of their own (the runtime can zero-copy them); every
other tensor gets a range from a best-fit free list and gives it back once all its readers happen before
the node being planned (per the stream plan's vector clocks, so tensors whose tasks may run concurrently
never share bytes). Elementwise ops may write in place over an input they are the last reader of.
Workspaces are taken for their node and released after it. View ops (Reshape, Flatten) share their
input's range. `reuse=False` (--disable_reuse_memory=1) gives every tensor its own range.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from ..ir.graph import Graph, Node, Value
from ..ops import get_op
from .streams import StreamPlan

MEM_ALIGN = 512            # GE MEM_ALIGN_SIZE
WEIGHTS_START_OFFSET = 512  # GE kWeightsStartOffset
FEATURE_MAP_BASE = 0x1_0000_0000   # logical base of the feature map (ModelDef attr task_gen_base_addr)
WEIGHT_BASE = 0x2_0000_0000        # logical base of the weights (ModelDef attr task_gen_weight_addr)


def align(n: int, a: int = MEM_ALIGN) -> int:
    return -(-n // a) * a


@dataclass
class MemoryPlan:
    fm_offset: dict[int, int] = field(default_factory=dict)       # id(Value) -> feature-map offset
    weight_offset: dict[int, int] = field(default_factory=dict)   # id(Value) -> weights offset
    workspace: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # node -> [(offset, size)]
    memory_size: int = 0
    weight_size: int = 0
    weights: bytes = b""
    lower_bound: int = 0          # bytes some set of buffers that may be live together needs (512-aligned)
    workspace_size: int = 0       # peak workspace bytes of one op
    inplace: int = 0              # outputs written over their input
    inplace_of: dict = field(default_factory=dict)   # id(output) -> the input Value it overwrote

    def has(self, v: Value) -> bool:
        return id(v) in self.weight_offset or id(v) in self.fm_offset

    def address(self, v: Value) -> int:
        if id(v) in self.weight_offset:
            return WEIGHT_BASE + self.weight_offset[id(v)]
        return FEATURE_MAP_BASE + self.fm_offset[id(v)]

    def workspace_addresses(self, node_name: str) -> list[int]:
        return [FEATURE_MAP_BASE + off for off, _ in self.workspace.get(node_name, [])]

    def is_weight(self, v: Value) -> bool:
        return id(v) in self.weight_offset


def plan_weights(graph: Graph, plan: MemoryPlan) -> None:
    """Identical constants (same bytes, dtype and shape) are stored once. Candidates are grouped by dtype,
    shape and a sample of their bytes, then compared byte for byte (memcmp speed, no hashing of big weights)."""
    blob = bytearray()
    offset = WEIGHTS_START_OFFSET
    seen: dict[tuple, list[tuple[bytes, int]]] = {}
    for node in graph.nodes:
        if node.op_type != "Const" or not node.outputs[0].consumers:
            continue
        v = node.outputs[0]
        data = np.asarray(v.data, order="C").tobytes()
        key = (v.desc.dtype, v.desc.shape, data[:64], data[-64:])
        same = next((off for other, off in seen.get(key, ()) if other == data), None)
        if same is not None:
            plan.weight_offset[id(v)] = same
            continue
        plan.weight_offset[id(v)] = offset
        seen.setdefault(key, []).append((data, offset))
        blob.extend(b"\0" * (offset - WEIGHTS_START_OFFSET - len(blob)))
        blob.extend(data)
        offset = align(offset + max(len(data), 1))
    plan.weights = bytes(b"\0" * WEIGHTS_START_OFFSET + blob) if blob else b""
    plan.weight_size = len(plan.weights)


def plan_weights_only(graph: Graph) -> MemoryPlan:
    """For graphs the host executor runs (unknown subgraphs): weights are placed, activations are not."""
    plan = MemoryPlan()
    plan_weights(graph, plan)
    return plan


class FreeList:
    """Best-fit allocator over [0, top). Each free block remembers the tasks that used its bytes last; a
    node may take bytes only if all of them happen before it (`usable`). Blocks are not merged when freed
    (that would mix their users); adjacent usable blocks are combined when allocating."""

    def __init__(self):
        self.offsets: list[int] = []
        self.blocks: dict[int, tuple[int, frozenset]] = {}   # offset -> (size, last users)
        self.top = 0

    def _runs(self, usable):
        """Maximal runs of adjacent usable free blocks: (start, size, [block offsets])."""
        run_start, run_size, members = None, 0, []
        for off in self.offsets:
            size, users = self.blocks[off]
            if usable(users) and run_start is not None and run_start + run_size == off:
                run_size += size
                members.append(off)
                continue
            if run_start is not None:
                yield run_start, run_size, members
            run_start, run_size, members = (off, size, [off]) if usable(users) else (None, 0, [])
        if run_start is not None:
            yield run_start, run_size, members

    def alloc(self, size: int, usable=lambda users: True) -> int:
        best, at_top = None, None
        for run in self._runs(usable):
            if run[0] + run[1] == self.top:
                at_top = run
            if run[1] >= size and (best is None or run[1] < best[1]):
                best = run
                if run[1] == size:
                    break
        if best is None and at_top is not None:   # grow the free run at the top
            best = at_top
            self.top = at_top[0] + size
        if best is None:
            off = self.top
            self.top += size
            return off
        start, _, members = best
        used = 0
        for off in members:
            bsize, users = self.blocks.pop(off)
            self.offsets.remove(off)
            if used + bsize > size and start + used < start + size:
                keep = used + bsize - size
                if keep > 0 and off + bsize <= self.top:
                    self._insert(off + bsize - keep, keep, users)
            used += bsize
            if used >= size:
                break
        return start

    def _insert(self, off: int, size: int, users: frozenset) -> None:
        i = bisect.bisect_left(self.offsets, off)
        self.offsets.insert(i, off)
        self.blocks[off] = (size, users)

    def free(self, off: int, size: int, users: frozenset = frozenset()) -> None:
        i = bisect.bisect_left(self.offsets, off)
        if i > 0:   # merge with the previous block only when its users are the same
            prev = self.offsets[i - 1]
            psize, pusers = self.blocks[prev]
            if prev + psize == off and pusers == users:
                self.blocks[prev] = (psize + size, users)
                return
        self._insert(off, size, users)


INPLACE_FAMILIES = ("UnaryOp", "BinaryOp")


def _inplace_ok(node: Node) -> bool:
    spec = get_op(node.op_type)
    return any(c.__name__ in INPLACE_FAMILIES for c in type(spec).__mro__) and len(node.outputs) == 1


class _Planner:
    def __init__(self, graph: Graph, plan: MemoryPlan, workspaces: dict[str, list[int]], streams: StreamPlan | None,
                 reuse: bool):
        self.g, self.plan, self.ws, self.sp, self.reuse = graph, plan, workspaces, streams, reuse
        self.free = FreeList()
        self.root: dict[int, Value] = {}           # id(Value) -> the value that owns its bytes
        self.readers: dict[int, list[str]] = {}    # id(root) -> task nodes reading it (through views)
        self.owner: dict[int, str] = {}            # id(root) -> producer task node
        self.size: dict[int, int] = {}
        self.pending: list[tuple[list[str], int, int, int | None]] = []   # (nodes, offset, size, root id)
        self.dedicated: set[int] = set()
        self.task_nodes = {n.name for n in graph.nodes if not get_op(n.op_type).no_task}
        self.order = {n.name: k for k, n in enumerate(graph.nodes)}
        self.outputs_at_end: list[Value] = []
        self.aliases_of_outputs: dict[int, list[Value]] = {}

    def hb(self, a: str, b: str) -> bool:
        if self.sp is None or a not in self.sp.stream_of or b not in self.sp.stream_of:
            return self.order[a] <= self.order[b]  # one stream: task order is execution order
        return self.sp.happens_before(a, b)

    def analyse(self) -> None:
        for node in self.g.nodes:
            spec = get_op(node.op_type)
            for v in node.outputs:
                src = node.inputs[0] if spec.no_task and node.op_type not in ("Data", "Const") and node.inputs else None
                self.root[id(v)] = self.root.get(id(src), src) if src is not None else v
            for v in node.inputs:
                if v is not None and node.name in self.task_nodes:
                    self.readers.setdefault(id(self.root.get(id(v), v)), []).append(node.name)
        for n in self.g.nodes:
            if n.op_type == "Data":
                self.dedicated.add(id(n.outputs[0]))
        for v in self.g.net_output.inputs:
            self.dedicated.add(id(self.root.get(id(v), v)))

    def release_ready(self, node: str) -> None:
        """Tensors all of whose users are planned go to the free list, tagged with those users."""
        keep = []
        here = self.order[node]
        for nodes, off, size, rid in self.pending:
            if all(self.order[r] < here for r in nodes):
                self.free.free(off, size, frozenset(nodes))
            else:
                keep.append((nodes, off, size, rid))
        self.pending = keep

    def alloc(self, size: int, node: str) -> int:
        if not self.reuse:
            return self._bump(size)
        # strictly before: a node never gets the bytes of a tensor it uses (in place is explicit)
        return self.free.alloc(size, lambda users: all(u != node and self.hb(u, node) for u in users))

    def _bump(self, size: int) -> int:
        off = self.free.top
        self.free.top += size
        return off

    def run(self) -> None:
        self.analyse()
        order = [n for n in self.g.nodes]
        # graph inputs first, each in a range of its own
        for n in self.g.data_nodes:
            v = n.outputs[0]
            self.plan.fm_offset[id(v)] = self._bump(align(max(v.desc.nbytes, 1)))
        for node in order:
            if node.op_type in ("Const", "Data", "NetOutput"):
                continue
            if node.name in self.task_nodes and self.reuse:
                self.release_ready(node.name)
            for v in node.outputs:
                r = self.root[id(v)]
                if r is not v:   # a view: share the input's bytes
                    if any(o is r for o in self.outputs_at_end):
                        self.aliases_of_outputs.setdefault(id(r), []).append(v)
                    elif id(r) in self.plan.fm_offset:
                        self.plan.fm_offset[id(v)] = self.plan.fm_offset[id(r)]
                    elif id(r) in self.plan.weight_offset:
                        self.plan.weight_offset[id(v)] = self.plan.weight_offset[id(r)]
                    continue
                size = align(max(v.desc.nbytes, 1))
                self.size[id(v)] = size
                donor = self.inplace_donor(node, v, size) if self.reuse else None
                if donor is not None:
                    self.plan.fm_offset[id(v)] = self.plan.fm_offset[id(donor)]
                    self.plan.inplace += 1
                    self.plan.inplace_of[id(v)] = donor
                elif id(v) in self.dedicated:
                    self.outputs_at_end.append(v)   # graph outputs: a range of their own after the arena
                    continue
                else:
                    self.plan.fm_offset[id(v)] = self.alloc(size, node.name)
                if id(v) not in self.dedicated:
                    readers = self.readers.get(id(v), [])
                    self.pending.append(([node.name] + readers, self.plan.fm_offset[id(v)], size, id(v)))
            ws = []
            for size in self.ws.get(node.name, []):
                a = align(max(size, 1))
                off = self.alloc(a, node.name)
                ws.append((off, size))
                self.pending.append(([node.name], off, a, None))
            if ws:
                self.plan.workspace[node.name] = ws
                self.plan.workspace_size = max(self.plan.workspace_size, sum(align(s) for _, s in ws))
        for v in self.outputs_at_end:
            self.plan.fm_offset[id(v)] = self._bump(align(max(v.desc.nbytes, 1)))
            for other in self.aliases_of_outputs.get(id(v), []):
                self.plan.fm_offset[id(other)] = self.plan.fm_offset[id(v)]
        self.plan.memory_size = self.free.top

    def inplace_donor(self, node: Node, out: Value, size: int) -> Value | None:
        if not _inplace_ok(node) or id(out) in self.dedicated:
            return None
        for v in node.inputs:
            if v is None or v.is_const or v.producer is None:
                continue
            r = self.root.get(id(v), v)
            if r is not v or id(r) in self.dedicated or id(r) not in self.plan.fm_offset:
                continue
            if self.size.get(id(r)) != size or v.desc.dtype != out.desc.dtype:
                continue
            readers = self.readers.get(id(r), [])
            if all(x == node.name or self.hb(x, node.name) for x in readers):
                # take over the donor's pending release (its bytes now belong to the output)
                self.pending = [p for p in self.pending if p[3] != id(r)]
                return r
        return None


def lower_bound(graph: Graph, workspaces: dict[str, list[int]], inplace_of: dict | None = None) -> int:
    """Peak of simultaneously live bytes (512-aligned sizes) in topological order, counting an in-place
    output as the buffer it overwrote: no plan with the same in-place choices can use less."""
    inplace_of = inplace_of or {}
    order = {n.name: k for k, n in enumerate(graph.nodes)}
    root: dict[int, Value] = {}
    last: dict[int, int] = {}
    first: dict[int, int] = {}
    size: dict[int, int] = {}
    end = len(graph.nodes)
    for node in graph.nodes:
        spec = get_op(node.op_type)
        for v in node.outputs:
            src = node.inputs[0] if spec.no_task and node.op_type not in ("Data", "Const") and node.inputs else None
            if id(v) in inplace_of:
                src = inplace_of[id(v)]
            r = root.get(id(src), src) if src is not None else v
            root[id(v)] = r
            if r is v and node.op_type != "Const" and not (src is not None and src.is_const):
                first[id(v)] = 0 if node.op_type == "Data" else order[node.name]
                size[id(v)] = align(max(v.desc.nbytes, 1))
                last[id(v)] = first[id(v)]
        for v in list(node.inputs) + (node.outputs if node.op_type != "NetOutput" else []):
            if v is not None:
                r = root.get(id(v), v)
                if id(r) in last:
                    last[id(r)] = end if node.op_type == "NetOutput" else max(last[id(r)], order[node.name])
    for n in graph.data_nodes:
        last[id(n.outputs[0])] = end
    events = [0] * (end + 2)
    for k, f in first.items():
        events[f] += size[k]
        events[last[k] + 1] -= size[k]
    peak, cur = 0, 0
    for i, node in enumerate(graph.nodes):
        cur += events[i]
        peak = max(peak, cur + sum(align(max(s, 1)) for s in workspaces.get(node.name, [])))
    return peak


OUTPUT_MARK = "<model output>"   # a pseudo user of graph outputs: the host reads them after the model ends
GREEDY_MAX_BUFFERS = 4000   # greedy-by-size is quadratic in the worst case; bigger graphs keep the free-list plan


def collect_buffers(graph: Graph, plan: MemoryPlan, workspaces: dict[str, list[int]]):
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
            src = node.inputs[0] if spec.no_task and node.op_type not in ("Data", "Const") and node.inputs else None
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


def conflict_test(streams: StreamPlan | None):
    """conflict(f1, l1, u1, f2, l2, u2): may the two buffers be live together? One stream: topological
    intervals overlap. Several streams: unless every user of one happens strictly before every user of the
    other (vector clocks); a graph output (OUTPUT_MARK) is read after the model, so nothing comes after it."""
    multi = streams is not None and streams.num_streams > 1

    def apart(u1: frozenset, u2: frozenset) -> bool:
        if OUTPUT_MARK in u1:
            return False
        u2 = u2 - {OUTPUT_MARK}
        return all(a not in u2 and all(streams.happens_before(a, b) for b in u2) for a in u1)

    def conflict(f1, l1, u1, f2, l2, u2) -> bool:
        if not multi:
            return f1 <= l2 and l1 >= f2
        return (f1 <= l2 and l1 >= f2) or not (apart(u1, u2) or apart(u2, u1))
    return conflict, multi


def _place(items, base: int, conflict) -> tuple[int, dict]:
    placed: list[tuple] = []   # (offset, size, first, last, users)
    where: dict = {}
    for size, first, last, key, us in items:
        busy = sorted((o, o + sz) for o, sz, f, l, u in placed if conflict(f, l, u, first, last, us))
        off = base
        for lo, hi in busy:
            if lo - off >= size:
                break
            off = max(off, hi)
        placed.append((off, size, first, last, us))
        where[key] = off
    return max([o + sz for o, sz, _, _, _ in placed] + [base]), where


def greedy_by_size(graph: Graph, plan: MemoryPlan, workspaces: dict[str, list[int]],
                   streams: StreamPlan | None = None) -> bool:
    """Re-plan of the reusable buffers (TFLite's greedy-by-size): biggest first, each at the lowest offset
    not used by a buffer it may be live together with (conflict_test). Keeps the free-list plan's in-place
    choices and the dedicated input ranges. Returns False (and changes nothing) if it would not be smaller."""
    items, bufs, order = collect_buffers(graph, plan, workspaces)
    conflict, multi = conflict_test(streams)
    if len(items) > (GREEDY_MAX_BUFFERS // 8 if multi else GREEDY_MAX_BUFFERS):
        return False
    base = sum(align(max(n.outputs[0].desc.nbytes, 1)) for n in graph.data_nodes)
    top, where = None, {}
    # two orders (biggest first; ties by first use, or by the longest lifetime): keep the smaller layout
    for order_key in (lambda x: (-x[0], x[1]), lambda x: (-x[0], x[1] - x[2], x[1])):
        t, w = _place(sorted(items, key=order_key), base, conflict)
        if top is None or t < top:
            top, where = t, w
    if top >= plan.memory_size:
        return False
    for k, b in bufs.items():
        for v in b[3]:
            plan.fm_offset[id(v)] = where[("t", k)]
    for name, sizes in workspaces.items():
        if name in order and sizes:
            plan.workspace[name] = [(where[("w", name, j)], sz) for j, sz in enumerate(sizes)]
    plan.memory_size = top
    return True


CLIQUE_SEEDS = 16


def concurrent_lower_bound(graph: Graph, plan: MemoryPlan, workspaces: dict[str, list[int]],
                           streams: StreamPlan) -> int:
    """With several streams, buffers that may be live together must not share bytes, so the size of any set
    of pairwise-conflicting buffers is a lower bound. Start from the buffers live at each topological step
    (pairwise conflicting) and grow the set greedily with buffers that conflict with all of them."""
    items, _, order = collect_buffers(graph, plan, workspaces)
    conflict, _ = conflict_test(streams)
    if len(items) > GREEDY_MAX_BUFFERS // 8:
        return 0
    inputs = sum(align(max(n.outputs[0].desc.nbytes, 1)) for n in graph.data_nodes)
    by_size = sorted(items, key=lambda x: -x[0])
    best = 0
    # seed cliques at the steps with the most live bytes (any clique is a valid bound; the best seeds suffice)
    live = [(sum(it[0] for it in items if it[1] <= i <= it[2]), i) for i in range(len(graph.nodes))]
    for _, i in sorted(live, reverse=True)[:CLIQUE_SEEDS]:
        clique = [it for it in items if it[1] <= i <= it[2]]
        members = {id(it) for it in clique}
        for it in by_size:
            if id(it) not in members and all(conflict(c[1], c[2], c[4], it[1], it[2], it[4]) for c in clique):
                clique.append(it)
                members.add(id(it))
        best = max(best, inputs + sum(c[0] for c in clique))
    return best


def plan_memory(graph: Graph, workspaces: dict[str, list[int]], streams: StreamPlan | None = None,
                reuse: bool = True) -> MemoryPlan:
    plan = MemoryPlan()
    plan_weights(graph, plan)
    _Planner(graph, plan, workspaces, streams, reuse).run()
    if reuse:
        greedy_by_size(graph, plan, workspaces, streams)
    plan.lower_bound = lower_bound(graph, workspaces, plan.inplace_of)
    if reuse and streams is not None and streams.num_streams > 1:
        plan.lower_bound = max(plan.lower_bound, concurrent_lower_bound(graph, plan, workspaces, streams))
    return plan
