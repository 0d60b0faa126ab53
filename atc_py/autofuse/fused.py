"""FusedAscBackend's graph: a ComputeGraph of AscBackend nodes, run one after another in one kernel.

Nodes: Data (index: the FusedAscBackend input it reads), AscBackend members (each with its own HintGraph and
ImplGraphs) and Output (index). A member input is a Data or an output of an earlier member, read with the
member's own shape (a reshape between two members costs nothing: the bytes are the same). Stored as a
GraphDef in the node's `fused_graph` attribute (AttrDef.g), members as OpDefs holding their graphs the way
an AscBackend node does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..proto import ge_ir_pb2 as ge
from .graph import AscGraph, AscGraphError
from .serialize import from_graph_def

MAX_MEMBERS = 64
Ref = tuple[int, int]      # (member index or -1 for a fused input, output / input index)


@dataclass
class Member:
    name: str
    hint: AscGraph
    impl: AscGraph
    inputs: list[Ref]
    in_shapes: list[tuple[int, ...]] = field(default_factory=list)   # its inputs as it reads them


@dataclass
class FusedGraph:
    name: str
    n_inputs: int
    members: list[Member]
    outputs: list[Ref]

    def to_graph_def(self) -> ge.GraphDef:
        gd = ge.GraphDef(name=self.name)
        for k in range(self.n_inputs):
            op = gd.op.add(name=f"data{k}", type="Data")
            op.attr["index"].i = k
        names = {}
        for j, m in enumerate(self.members):
            names[j] = m.name
            op = gd.op.add(name=m.name, type="AscBackend")
            op.input.extend(self._ref(r) for r in m.inputs)
            for shape, (src, k) in zip(m.in_shapes, m.inputs):
                td = op.input_desc.add()
                td.shape.dim.extend(shape)
            op.attr["ascgraph"].g.CopyFrom(m.hint.to_graph_def())
            op.attr["ascgraph_impl"].g.CopyFrom(m.impl.to_graph_def())
        for k, r in enumerate(self.outputs):
            op = gd.op.add(name=f"output{k}", type="Output", input=[self._ref(r)])
            op.attr["index"].i = k
        return gd

    def _ref(self, r: Ref) -> str:
        return f"data{r[1]}:0" if r[0] < 0 else f"{self.members[r[0]].name}:{r[1]}"


def from_fused_def(gd: ge.GraphDef) -> FusedGraph:
    """Decode and check a FusedAscBackend graph read from a file."""
    where = f"fused graph {gd.name!r}"
    datas, members, outputs = {}, [], {}
    index_of: dict[str, int] = {}
    if len(gd.op) > 2 * MAX_MEMBERS + 256:
        raise AscGraphError(where, "op", f"{len(gd.op)} nodes")
    for op in gd.op:
        w = f"node {op.name!r} ({op.type})"
        if op.name in index_of or op.name in datas:
            raise AscGraphError(where, "name", f"node name {op.name!r} is used twice")
        if op.type in ("Data", "Output"):
            a = op.attr.get("index") if "index" in op.attr else None
            if a is None or a.WhichOneof("value") != "i" or not 0 <= a.i < 4096:
                raise AscGraphError(w, "index", "needs an integer index")
            if op.type == "Data":
                if op.input:
                    raise AscGraphError(w, "input", "a Data has no inputs")
                datas[op.name] = a.i
            else:
                if len(op.input) != 1 or a.i in outputs:
                    raise AscGraphError(w, "input", "an Output has one input and a unique index")
                outputs[a.i] = _ref(op.input[0], datas, index_of, w, 0)
            continue
        if op.type != "AscBackend":
            raise AscGraphError(w, "type", "a fused graph holds Data, AscBackend and Output nodes")
        if len(members) >= MAX_MEMBERS:
            raise AscGraphError(where, "op", f"more than {MAX_MEMBERS} AscBackend nodes")
        for key in ("ascgraph", "ascgraph_impl"):
            if key not in op.attr or op.attr[key].WhichOneof("value") != "g":
                raise AscGraphError(w, key, "must be a graph")
        hint = from_graph_def(op.attr["ascgraph"].g)
        impl = from_graph_def(op.attr["ascgraph_impl"].g)
        refs = [_ref(s, datas, index_of, w, i) for i, s in enumerate(op.input)]
        if len(op.input_desc) != len(refs):
            raise AscGraphError(w, "input_desc", "one shape per input")
        shapes = []
        for td in op.input_desc:
            if len(td.shape.dim) > 32 or any(not 0 <= d < 1 << 31 for d in td.shape.dim):
                raise AscGraphError(w, "input_desc", "shape out of range")
            shapes.append(tuple(td.shape.dim))
        index_of[op.name] = len(members)
        members.append(Member(op.name, hint, impl, refs, shapes))
    if sorted(datas.values()) != list(range(len(datas))):
        raise AscGraphError(where, "Data.index", "indices are not 0..n-1")
    if sorted(outputs) != list(range(len(outputs))) or not outputs or not members:
        raise AscGraphError(where, "Output.index", "needs members and outputs with indices 0..n-1")
    return FusedGraph(gd.name, len(datas), members, [outputs[k] for k in range(len(outputs))])


def _ref(text: str, datas: dict, index_of: dict, where: str, i: int) -> Ref:
    name, sep, k = text.rpartition(":")
    if sep and name in datas and k == "0":
        return (-1, datas[name])
    if sep and name in index_of and k.isdigit() and len(k) <= 4:
        return (index_of[name], int(k))
    raise AscGraphError(where, f"input {i}", f"{text[:80]!r} names no Data or earlier AscBackend output")
