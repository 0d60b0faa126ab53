"""GE's dynamic-shape partition (dynamic_shape_partition.cc, MergeClustersNormal), on our IR.

Runs only when some node is unknown (unknown shape or `_force_unknown_shape`). One cluster per node, then:
(1) every unknown cluster absorbs all clusters on paths from its unknown inputs (sandwiched known
clusters go unknown); (2) known clusters merge with known inputs when that makes no cycle; (3) constants
are gathered; (4) known clusters with fewer than `static_model_ops_lower_limit` nodes turn unknown;
(5) adjacent unknown clusters merge when acyclic. Each known/unknown cluster becomes a subgraph called
through a PartitionedCall node of the root graph. Constants are copied into the subgraphs that use them
(GE keeps them in an `_input` subgraph; copying keeps each sub-model self-contained).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..common.limits import DEFAULT_LOWER_LIMIT
from ..ir.dtypes import STRING
from ..ir.graph import Graph, Node, Value
from .tiling_sink import FORCE_UNKNOWN_SHAPE

DATA, NETOUTPUT, INPUT, KNOWN, UNKNOWN = "DATA", "NETOUTPUT", "INPUT", "KNOWN", "UNKNOWN"
IS_UNKNOWN_SHAPE = "_is_unknown_shape"


class Cluster:
    def __init__(self, cid: int, kind: str, node: Node, rank: int):
        self.id, self.kind = cid, kind
        self.nodes = [node]
        self.min = self.max = rank
        self.ins: set[Cluster] = set()
        self.outs: set[Cluster] = set()

    def __repr__(self) -> str:
        return f"Cluster({self.id},{self.kind},{[n.name for n in self.nodes]})"

    def __lt__(self, other: "Cluster") -> bool:
        return (self.min, self.id) < (other.min, other.id)

    @property
    def compute_nodes(self) -> int:
        return sum(1 for n in self.nodes if n.op_type != "Const")


def is_unknown_node(node: Node) -> bool:
    """Unknown shape, forced unknown, or string-typed: string tensors (GE StringHeads + bytes) stay with the
    host executor, which hands their values from node to node (om-run models no StringHead memory)."""
    if node.attrs.get(FORCE_UNKNOWN_SHAPE) or node.attrs.get(IS_UNKNOWN_SHAPE):
        return True
    if any(not v.desc.known or v.desc.dtype == STRING for v in list(node.inputs) + node.outputs if v is not None):
        return True
    # a control node whose subgraphs hold anything dynamic (a shape, a value-dependent shape) runs in the host
    # executor as a whole, iteration by iteration (GE: an unknown subgraph makes its parent unknown)
    return any(_dynamic_inside(n) for s in node.subgraphs.values() for n in s.nodes)


def _dynamic_inside(node: Node) -> bool:
    from ..ops import get_op
    spec = get_op(node.op_type)
    if is_unknown_node(node):
        return True
    return any(i < len(node.inputs) and node.inputs[i] is not None and not node.inputs[i].is_const
               for i in spec.infer_depend)


class Partitioner:
    def __init__(self, graph: Graph, lower_limit: int):
        self.graph = graph
        self.limit = lower_limit
        self.of: dict[int, Cluster] = {}

    def init_clusters(self, unknown: set[int]) -> list[Cluster]:
        clusters = []
        for rank, node in enumerate(self.graph.nodes):
            if node.op_type == "Data":
                kind = DATA
            elif node.op_type == "NetOutput":
                kind = NETOUTPUT
            elif id(node) in unknown:
                kind = UNKNOWN
            elif node.op_type == "Const":
                kind = INPUT
            else:
                kind = KNOWN
            c = Cluster(rank, kind, node, rank)
            clusters.append(c)
            self.of[id(node)] = c
        for node in self.graph.nodes:
            preds = [v.producer for v in node.inputs if v is not None and v.producer is not None] + node.control_inputs
            for p in preds:
                a, b = self.of[id(p)], self.of[id(node)]
                if a is not b:
                    a.outs.add(b)
                    b.ins.add(a)
        return clusters

    def merge(self, into: Cluster, other: Cluster) -> None:
        if into is other:
            return
        into.nodes.extend(other.nodes)
        into.min, into.max = min(into.min, other.min), max(into.max, other.max)
        for c in other.ins:
            c.outs.discard(other)
            if c is not into:
                c.outs.add(into)
                into.ins.add(c)
        for c in other.outs:
            c.ins.discard(other)
            if c is not into:
                c.ins.add(into)
                into.outs.add(c)
        into.ins.discard(into)
        into.outs.discard(into)
        for n in other.nodes:
            self.of[id(n)] = into
        other.nodes, other.ins, other.outs = [], set(), set()
        if other.kind == UNKNOWN:
            into.kind = UNKNOWN

    def merge_all_path_from(self, into: Cluster, src: Cluster) -> None:
        fwd, q = {src}, deque([src])
        while q:
            for o in q.popleft().outs:
                if o not in fwd and o.min < into.max:
                    fwd.add(o)
                    q.append(o)
        bwd, q = {into}, deque([into])
        while q:
            for i in q.popleft().ins:
                if i not in bwd and i.max > src.min:
                    bwd.add(i)
                    q.append(i)
        for c in sorted((fwd & bwd) - {into}):
            self.merge(into, c)

    def creates_cycle(self, into: Cluster, src: Cluster) -> bool:
        """Merging src into `into` is cyclic if src reaches `into` through another cluster."""
        seen, q = set(), deque(o for o in src.outs if o is not into)
        while q:
            c = q.popleft()
            if c is into:
                return True
            if c in seen:
                continue
            seen.add(c)
            q.extend(c.outs)
        return False

    def try_merge(self, kind: str) -> None:
        changed = True
        while changed:
            changed = False
            for c in sorted(x for x in set(self.of.values()) if x.kind == kind and x.nodes):
                for i in sorted(x for x in c.ins if x.kind == kind):
                    if not self.creates_cycle(c, i):
                        self.merge(c, i)
                        changed = True

    def run(self) -> list[Cluster] | None:
        unknown = {id(n) for n in self.graph.nodes if is_unknown_node(n)}
        if not unknown and self.limit != -1:
            return None  # -1 short-cuts to "whole graph unknown" even when every node is known
        for n in self.graph.nodes:  # an unknown node's direct constants go with it
            if id(n) in unknown:
                for v in n.inputs:
                    if v is not None and v.is_const and len(v.consumers) == 1:
                        unknown.add(id(v.producer))
        if self.limit == -1:
            unknown |= {id(n) for n in self.graph.nodes if n.op_type not in ("Data", "NetOutput", "Const")}
        self.init_clusters(unknown)
        for c in sorted(set(self.of.values())):
            if c.kind == UNKNOWN and c.nodes:
                for i in sorted(x for x in list(c.ins) if x.kind == UNKNOWN):
                    if i.nodes:
                        self.merge_all_path_from(c, i)
        self.try_merge(KNOWN)
        inputs = sorted(c for c in set(self.of.values()) if c.kind == INPUT and c.nodes)
        for c in inputs[1:]:
            self.merge(inputs[0], c)
        for c in set(self.of.values()):
            if c.kind == KNOWN and c.compute_nodes < max(self.limit, 0):
                c.kind = UNKNOWN
        self.try_merge(UNKNOWN)
        return sorted(c for c in set(self.of.values()) if c.kind in (KNOWN, UNKNOWN) and c.nodes)


@dataclass
class Subgraph:
    name: str
    graph: Graph
    known: bool
    call: Node               # the PartitionedCall node in the root graph


@dataclass
class PartitionResult:
    root: Graph
    subgraphs: list[Subgraph] = field(default_factory=list)


def _copy_node(sub: Graph, node: Node, inputs: list[Value | None]) -> Node:
    new = sub.add_node(node.name, node.op_type, inputs, [v.desc for v in node.outputs], dict(node.attrs),
                       out_names=[v.name for v in node.outputs])
    new.meta = dict(node.meta)
    new.subgraphs = node.subgraphs     # each node is copied once: its subgraphs move with it
    if node.op_type == "Const":
        new.outputs[0].share_data(node.outputs[0])
    return new


def build_partition(graph: Graph, clusters: list[Cluster]) -> PartitionResult:
    root = Graph(graph.name)
    rmap: dict[int, Value] = {}
    for n in graph.data_nodes:
        rn = _copy_node(root, n, [])
        rmap[id(n.outputs[0])] = rn.outputs[0]
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    result = PartitionResult(root)
    known_k = unknown_k = 0
    for k, c in enumerate(_topo_clusters(clusters)):
        members = {id(n) for n in c.nodes}
        nodes = sorted(c.nodes, key=lambda n: order[id(n)])
        known = c.kind == KNOWN
        name = f"{graph.name}_sub_{k}_{'know' if known else 'unknow'}"
        sub = Graph(name)
        smap: dict[int, Value] = {}
        boundary: list[Value] = []
        for n in nodes:
            ins = []
            for v in n.inputs:
                if v is None:
                    ins.append(None)
                elif id(v.producer) in members:
                    ins.append(smap[id(v)])
                elif v.is_const:
                    if id(v) not in smap:
                        smap[id(v)] = _copy_node(sub, v.producer, []).outputs[0]
                    ins.append(smap[id(v)])
                else:
                    if id(v) not in smap:
                        d = sub.add_node(sub.unique_name(f"{name}_data_{len(boundary)}"), "Data", out_descs=[v.desc],
                                         attrs={"index": len(boundary), "_parent_node_index": len(boundary)},
                                         out_names=[v.name])
                        smap[id(v)] = d.outputs[0]
                        boundary.append(v)
                    ins.append(smap[id(v)])
            new = _copy_node(sub, n, ins)
            for ov, nv in zip(n.outputs, new.outputs):
                smap[id(ov)] = nv
        outs = [v for n in nodes for v in n.outputs
                if any(id(cn) not in members for cn, _ in v.consumers)]
        sub.add_node("NetOutput", "NetOutput", [smap[id(v)] for v in outs], [],
                     attrs={"output_names": [v.name for v in outs]})
        call = root.add_node(f"PartitionedCall_{k}", "PartitionedCall", [rmap[id(v)] for v in boundary],
                             [v.desc for v in outs], {"f": name, IS_UNKNOWN_SHAPE: not known},
                             out_names=[v.name for v in outs])
        for ov, rv in zip(outs, call.outputs):
            rmap[id(ov)] = rv
        result.subgraphs.append(Subgraph(name, sub, known, call))
        known_k += known
        unknown_k += not known
    net = graph.net_output
    outs = []
    for v in net.inputs:
        if id(v) not in rmap and v.is_const:  # an output that is a constant: keep it in the root
            rmap[id(v)] = _copy_node(root, v.producer, []).outputs[0]
        outs.append(rmap[id(v)])
    root.add_node("NetOutput", "NetOutput", outs, [], dict(net.attrs))
    return result


def _topo_clusters(clusters: list[Cluster]) -> list[Cluster]:
    live = set(clusters)
    indeg = {c: len([i for i in c.ins if i in live]) for c in clusters}
    ready = sorted(c for c in clusters if indeg[c] == 0)
    out = []
    while ready:
        c = ready.pop(0)
        out.append(c)
        for o in sorted(c.outs):
            if o in live:
                indeg[o] -= 1
                if indeg[o] == 0:
                    ready.append(o)
                    ready.sort()
    return out


def partition(graph: Graph, lower_limit: int = DEFAULT_LOWER_LIMIT) -> PartitionResult | None:
    clusters = Partitioner(graph, lower_limit).run()
    return None if clusters is None else build_partition(graph, clusters)

