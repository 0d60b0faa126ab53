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
from typing import Callable

import numpy as np

from ..ir.graph import Graph, Node, Value, all_nodes
from ..om.chunks import Chunks, Deferred
from ..ops import get_op
from .memory_buffers import MEM_ALIGN, alias_src, align  # noqa: F401  (re-exported: the planner's units)
from .memory_greedy import concurrent_lower_bound, greedy_by_size, reusable_buffers
from .streams import StreamPlan

WEIGHTS_START_OFFSET = 512  # GE kWeightsStartOffset
FEATURE_MAP_BASE = 0x1_0000_0000   # logical base of the feature map (ModelDef attr task_gen_base_addr)
# logical base of the weights (ModelDef attr task_gen_weight_addr): past any feature map a device can hold (the
# largest SoC has 64 GiB), so a feature map beyond 4 GiB never overlaps them (om-run refuses an .om where it does)
WEIGHT_BASE = FEATURE_MAP_BASE + (64 << 30)


@dataclass
class MemoryPlan:
    fm_offset: dict[int, int] = field(default_factory=dict)       # id(Value) -> feature-map offset
    weight_offset: dict[int, int] = field(default_factory=dict)   # id(Value) -> weights offset
    workspace: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # node -> [(offset, size)]
    memory_size: int = 0
    weight_size: int = 0
    weights: "bytes | Chunks" = b""
    lower_bound: int = 0          # bytes some set of buffers that may be live together needs (512-aligned)
    workspace_size: int = 0       # peak workspace bytes of one op
    inplace: int = 0              # outputs written over their input
    inplace_of: dict = field(default_factory=dict)   # id(output) -> the input Value it overwrote
    external_views: dict = field(default_factory=dict)   # id(view) -> the external Value (subgraphs) it shares

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


def _raw(data) -> np.ndarray:
    """The constant's bytes as a flat uint8 array (a view when it is already contiguous: no copy)."""
    a = np.ascontiguousarray(data)
    if a.dtype == object:   # string constants: their bytes as numpy lays them out
        return np.frombuffer(a.tobytes(), np.uint8)
    return a.reshape(-1).view(np.uint8)


def plan_weights(graph: Graph, plan: MemoryPlan) -> None:
    """Identical constants (same bytes, dtype and shape) are stored once. Candidates are grouped by dtype,
    shape and a sample of their bytes, then compared byte for byte (memcmp speed, no hashing of big weights).
    Constants computed on host threads are not compared (the cse pass merged equal ones before they were
    folded). The blob is a Chunks of padding and the constants' own arrays: nothing is copied until the file is.
    A lazy constant (a weight left in its file, or computed from one) is a streamed part: read (or computed)
    when the file is written, and only then; its digest is taken while it is written."""
    blob = Chunks()
    offset = WEIGHTS_START_OFFSET
    seen: dict[tuple, list[tuple[Callable[[], np.ndarray], int]]] = {}
    for node in all_nodes(graph):      # subgraphs' constants too: one weights blob per model
        if node.op_type != "Const" or not node.outputs[0].consumers:
            continue
        v = node.outputs[0]
        if v.threaded:
            # computed on a host thread (const_jobs): placed without the identity check, which would wait for it;
            # its bytes join the blob when they arrive. Which constants these are does not depend on timing.
            plan.weight_offset[id(v)] = offset
            blob.append(bytes(offset - WEIGHTS_START_OFFSET - len(blob)))
            blob.append(Deferred(v.desc.nbytes, lambda v=v: _raw(v.data), streamed=v.lazy))
            offset = align(offset + max(v.desc.nbytes, 1))
            continue
        data = _raw(v.data)   # a lazy value: a view of its mapped file (only the samples below are read)
        key = (v.desc.dtype, v.desc.shape, data[:64].tobytes(), data[-64:].tobytes())
        same = next((off for other, off in seen.get(key, ()) if np.array_equal(other(), data)), None)
        if same is not None:
            plan.weight_offset[id(v)] = same
            continue
        plan.weight_offset[id(v)] = offset
        blob.append(bytes(offset - WEIGHTS_START_OFFSET - len(blob)))   # alignment padding
        if v.lazy:   # read again when compared or written: nothing of it is held meanwhile
            seen.setdefault(key, []).append((lambda v=v: _raw(v.data), offset))
            blob.append(Deferred(v.desc.nbytes, lambda v=v: _raw(v.data), streamed=True))
        else:
            seen.setdefault(key, []).append((lambda d=data: d, offset))
            blob.append(data)
        offset = align(offset + max(len(data), 1))
        del data
    # a model whose only constants are empty still addresses them at WEIGHTS_START_OFFSET: keep that much
    plan.weights = Chunks([bytes(WEIGHTS_START_OFFSET)] + blob.parts) if len(blob) or plan.weight_offset else b""
    plan.weight_size = len(plan.weights)
    if plan.weights and not plan.weights.streamed:
        plan.weights.start_digest()   # the .om checksum's biggest part, hashed while compiling goes on


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
                 reuse: bool, external: frozenset = frozenset()):
        """`external`: Values whose bytes belong to the enclosing graph (a subgraph's Data nodes and the
        copies into its parent's buffers): not allocated here (control_memory.py places them)."""
        self.g, self.plan, self.ws, self.sp, self.reuse = graph, plan, workspaces, streams, reuse
        self.external = external
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
        self.run_as = {n.name: n.attrs["_label_owner"] for n in graph.nodes if "_label_owner" in n.attrs}

    def hb(self, a: str, b: str) -> bool:
        # a control node's own copies (engines/labels.py) run at its place in its stream
        a, b = self.run_as.get(a, a), self.run_as.get(b, b)
        if self.sp is None or a not in self.sp.stream_of or b not in self.sp.stream_of:
            return self.order[a] <= self.order[b]  # one stream: task order is execution order
        return self.sp.happens_before(a, b)

    def analyse(self) -> None:
        for node in self.g.nodes:
            spec = get_op(node.op_type)
            for v in node.outputs:
                src = alias_src(spec, node, v)
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
            if id(v) not in self.external:
                self.plan.fm_offset[id(v)] = self._bump(align(max(v.desc.nbytes, 1)))
        for node in order:
            if node.op_type in ("Const", "Data", "NetOutput"):
                continue
            if node.name in self.task_nodes and self.reuse:
                self.release_ready(node.name)
            for v in node.outputs:
                r = self.root[id(v)]
                if id(v) in self.external:
                    continue
                if r is not v and id(r) in self.external:
                    self.plan.external_views[id(v)] = r
                    continue
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
            src = alias_src(spec, node, v)
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


def plan_memory(graph: Graph, workspaces: dict[str, list[int]], streams: StreamPlan | None = None,
                reuse: bool = True, weights: MemoryPlan | None = None, external: frozenset = frozenset()) -> MemoryPlan:
    """`weights`: a plan whose weights this graph's constants use (a subgraph: the model's); `external`: see
    _Planner."""
    plan = MemoryPlan()
    if weights is None:
        plan_weights(graph, plan)
    else:
        plan.weight_offset = weights.weight_offset
    _Planner(graph, plan, workspaces, streams, reuse, external).run()
    plan.lower_bound = lower_bound(graph, workspaces, plan.inplace_of)
    buffers = reusable_buffers(graph, plan, workspaces, streams) if reuse else None
    if buffers is not None:
        if streams is not None and streams.num_streams > 1:
            plan.lower_bound = max(plan.lower_bound, concurrent_lower_bound(len(graph.nodes), buffers))
        greedy_by_size(plan, workspaces, buffers, plan.lower_bound)
    return plan
