"""AscGraph: a DAG of AscIR nodes nested in loops over graph-level axes.

* Size variables (`s0, s1, ...`) are graph attributes; every size is a symbolic expression over them, so
  one graph serves every shape.
* Axes (`z0, z1, ...`) have an id (their index), a name, a size expression, a type (ORIGINAL, or the
  BLOCK/TILE outer/inner and MERGED axes auto schedule derives) and the axes they come `from`.
* Nodes are AscIR instances (ascir.py): attributes of their type (`index`, `dst_type`, ...), `sched.axis`
  (the loop nest they run in, outermost first) and per output a TensorAttr: dtype, `axis`, `repeats` and
  `stride` (plus, in an ImplGraph, the vectorized axes and where the tensor lives: GM or a UB queue/buffer).
  The two ends of an edge must agree; usually only the producer's output attributes exist and the consumer
  reads them, but a file (or a test) may give a consumer its own view, which check() compares.
* HintGraph (what fusion builds: computation only) and ImplGraph (after auto schedule) share these fields
  with the same meaning. Data outputs and Output inputs are the graph's contract with the outside: an
  ImplGraph must keep them exactly as its HintGraph has them (check_contract).

check() raises AscGraphError naming the node and the field; it is what both the compiler (on every graph
it builds) and om-run (on every graph it reads) run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from . import ascir
from .expr import ONE, ZERO, Expr, ExprError, Sym, as_expr, product

HINT, IMPL = "HintGraph", "ImplGraph"
ORIGINAL, BLOCK_OUT, BLOCK_IN, TILE_OUT, TILE_IN, MERGED = (
    "ORIGINAL", "BLOCK_OUT", "BLOCK_IN", "TILE_OUT", "TILE_IN", "MERGED")
AXIS_TYPES = (ORIGINAL, BLOCK_OUT, BLOCK_IN, TILE_OUT, TILE_IN, MERGED)
GM, UB = "GM", "UB"
POSITIONS = ("GM", "VECIN", "VECCALC", "VECOUT")
ALLOC_TYPES = ("Global", "Queue", "Buffer")

MAX_NODES = 4096
MAX_AXES = 64
MAX_SIZE_VARS = 64
MAX_NAME = 128


class AscGraphError(ValueError):
    """A graph that breaks a rule: `where` names the node (or the graph) and the field."""

    def __init__(self, where: str, field_: str, reason: str):
        self.where, self.field, self.reason = where, field_, reason
        super().__init__(f"{where} field {field_}: {reason}")


@dataclass
class Axis:
    id: int
    name: str
    size: Expr
    type: str = ORIGINAL
    from_: tuple[int, ...] = ()
    split_peer: int = -1


@dataclass
class Mem:
    """Where a tensor lives: GM (global memory: graph inputs/outputs, workspace) or a UB queue/buffer."""
    hardware: str = GM
    position: str = "GM"
    alloc_type: str = "Global"
    tensor_id: int = -1
    reuse_id: int = -1
    size: Expr = ZERO            # bytes of one buffer of it (per UB buffer; 0 in GM)
    que_id: int = -1
    que_depth: int = 0
    buf_num: int = 0
    buf_id: int = -1


@dataclass
class TensorAttr:
    dtype: str
    axis: list[int]
    repeats: list[Expr]
    strides: list[Expr]
    vectorized_axis: list[int] = field(default_factory=list)
    vectorized_strides: list[Expr] = field(default_factory=list)
    mem: Mem | None = None

    def view(self) -> tuple:
        """What the two ends of an edge must agree on."""
        return (self.dtype, tuple(self.axis), tuple(self.repeats), tuple(self.strides))


@dataclass
class AscNode:
    name: str
    type: str
    attrs: dict[str, Any] = field(default_factory=dict)
    sched_axis: list[int] = field(default_factory=list)
    loop_axis: int = -1
    inputs: list[tuple["AscNode", int]] = field(default_factory=list)
    outputs: list[TensorAttr] = field(default_factory=list)
    in_views: list[TensorAttr | None] = field(default_factory=list)   # a consumer's own view of an edge

    @property
    def ir(self) -> ascir.IrDef:
        return ascir.REGISTRY[self.type]

    @property
    def y(self) -> TensorAttr:
        return self.outputs[0]

    def input_attr(self, i: int) -> TensorAttr:
        src, k = self.inputs[i]
        return src.outputs[k]

    def __repr__(self) -> str:
        return f"AscNode({self.name}: {self.type})"


def _copy_tensor(t: TensorAttr) -> TensorAttr:
    m = t.mem
    return TensorAttr(t.dtype, list(t.axis), list(t.repeats), list(t.strides), list(t.vectorized_axis),
                      list(t.vectorized_strides), None if m is None else Mem(**vars(m)))


def contiguous_strides(repeats: list[Expr]) -> list[Expr]:
    """Row-major strides of a dense tensor; a repeat of 1 gets stride 0 (it does not advance)."""
    return list(_strides(tuple(repeats)))


@lru_cache(maxsize=4096)
def _strides(repeats: tuple[Expr, ...]) -> tuple[Expr, ...]:
    out: list[Expr] = []
    acc: Expr = ONE
    for r in reversed(repeats):
        out.append(ZERO if r == 1 else acc)
        if r != 1:
            acc = acc * r
    return tuple(out[::-1])


class AscGraph:
    def __init__(self, name: str, type_: str = HINT):
        self.name = name
        self.type = type_
        self.size_vars: list[str] = []
        self.axes: list[Axis] = []
        self.nodes: list[AscNode] = []
        self.attrs: dict[str, Any] = {}      # graph attributes beyond the structure (tiling vars, tiling key)
        self._by_name: dict[str, AscNode] = {}

    # -- construction (the names of CANN's AscGraph API) --------------------------------------------------
    def create_size_var(self, name: str) -> Sym:
        if name in self.size_vars:
            raise AscGraphError(f"graph {self.name!r}", "size_vars", f"size variable {name} is defined twice")
        s = Sym(name)
        self.size_vars.append(name)
        return s

    def create_axis(self, name: str, size, type_: str = ORIGINAL, from_: tuple[int, ...] = (),
                    split_peer: int = -1) -> Axis:
        ax = Axis(len(self.axes), name, as_expr(size), type_, tuple(from_), split_peer)
        self.axes.append(ax)
        return ax

    def add_node(self, type_: str, name: str, inputs: list[tuple[AscNode, int]] | None = None,
                 attrs: dict | None = None, sched_axis: list[int] | None = None,
                 outputs: list[TensorAttr] | None = None) -> AscNode:
        if name in self._by_name:
            raise AscGraphError(f"graph {self.name!r}", "name", f"node name {name!r} is used twice")
        node = AscNode(name, type_, dict(attrs or {}), list(sched_axis or []), -1, list(inputs or []),
                       list(outputs or []))
        node.in_views = [None] * len(node.inputs)
        self.nodes.append(node)
        self._by_name[name] = node
        return node

    def node(self, name: str) -> AscNode | None:
        return self._by_name.get(name)

    def axis(self, name: str) -> Axis | None:
        return next((a for a in self.axes if a.name == name), None)

    def tensor(self, dtype: str, axes: list[int], repeats: list, strides: list | None = None) -> TensorAttr:
        reps = [as_expr(r) for r in repeats]
        return TensorAttr(dtype, list(axes), reps, [as_expr(s) for s in strides] if strides is not None
                          else contiguous_strides(reps))

    # -- queries ------------------------------------------------------------------------------------------
    def of_kind(self, kind: str) -> list[AscNode]:
        return [n for n in self.nodes if n.type in ascir.REGISTRY and ascir.REGISTRY[n.type].kind == kind]

    @property
    def data_nodes(self) -> list[AscNode]:
        return sorted(self.of_kind(ascir.DATA), key=lambda n: n.attrs.get("index", 0))

    @property
    def output_nodes(self) -> list[AscNode]:
        return sorted(self.of_kind(ascir.OUTPUT), key=lambda n: n.attrs.get("index", 0))

    def consumers(self) -> dict[int, list[tuple[AscNode, int]]]:
        """id(producer) -> [(consumer, input index)]."""
        out: dict[int, list] = {}
        for n in self.nodes:
            for i, (src, _) in enumerate(n.inputs):
                out.setdefault(id(src), []).append((n, i))
        return out

    # -- validation, storage, dump -------------------------------------------------------------------------
    def check(self) -> None:
        Checker(self).run()

    def clone(self) -> "AscGraph":
        """A copy whose tensors and attributes can change without touching this graph (expressions are
        immutable and shared)."""
        g = AscGraph(self.name, self.type)
        g.size_vars = list(self.size_vars)
        g.axes = [Axis(a.id, a.name, a.size, a.type, a.from_, a.split_peer) for a in self.axes]
        g.attrs = {k: list(v) if isinstance(v, list) else v for k, v in self.attrs.items()}
        copies: dict[int, AscNode] = {}
        for n in self.nodes:
            c = g.add_node(n.type, n.name, [(copies[id(src)], k) for src, k in n.inputs], n.attrs, n.sched_axis,
                           [_copy_tensor(t) for t in n.outputs])
            c.loop_axis = n.loop_axis
            c.in_views = [_copy_tensor(t) if t is not None else None for t in n.in_views]
            copies[id(n)] = c
        return g

    def freeze(self) -> "AscGraph":
        """Promise that the graph no longer changes (the fusion pass's finished graphs): its GraphDef is then
        built once, however often the .om writer and the kernel cache ask for it."""
        self._frozen_gd = None
        self.frozen = True
        return self

    def to_graph_def(self):
        """The graph as GE stores a graph attribute (AttrDef.g): see serialize.py."""
        from .serialize import to_graph_def
        if not getattr(self, "frozen", False):
            return to_graph_def(self)
        if self._frozen_gd is None:
            self._frozen_gd = to_graph_def(self)
        return self._frozen_gd

    def dump(self) -> str:
        from .dump import dump
        return dump(self)


def _fmt(xs) -> str:
    return "[" + ", ".join(str(x) for x in xs) + "]"


class Checker:
    """The AscGraph's validity rules, one method per level (graph, axes, node, edge, compute type)."""

    def __init__(self, g: AscGraph):
        self.g = g
        self.gwhere = f"graph {g.name!r}"

    def fail(self, where: str, field_: str, reason: str):
        raise AscGraphError(where, field_, reason)

    def run(self) -> None:
        g = self.g
        if g.type not in (HINT, IMPL):
            self.fail(self.gwhere, "graph_type", f"{g.type!r} is neither {HINT} nor {IMPL}")
        if len(g.size_vars) > MAX_SIZE_VARS or len(g.axes) > MAX_AXES or len(g.nodes) > MAX_NODES:
            self.fail(self.gwhere, "size", f"{len(g.size_vars)} size variables, {len(g.axes)} axes, {len(g.nodes)} "
                      f"nodes (limits {MAX_SIZE_VARS}, {MAX_AXES}, {MAX_NODES})")
        self.vars = set(g.size_vars)
        if len(self.vars) != len(g.size_vars):
            self.fail(self.gwhere, "size_vars", f"{_fmt(g.size_vars)} repeat a name")
        for v in g.size_vars:
            try:
                Sym(v)
            except ExprError as exc:
                self.fail(self.gwhere, "size_vars", str(exc))
        self.check_axes()
        names: set[str] = set()
        self.seen: set[int] = set()
        for node in g.nodes:
            if node.name in names:
                self.fail(self.gwhere, "name", f"node name {node.name!r} is used twice")
            names.add(node.name)
            self.check_node(node)
            self.seen.add(id(node))
        self.check_io()

    def check_expr(self, where: str, field_: str, e) -> None:
        if not isinstance(e, Expr):
            self.fail(where, field_, f"{e!r} is not a size expression")
        unknown = e.symbols() - self.vars
        if unknown:
            self.fail(where, field_, f"{e} uses {', '.join(sorted(unknown))}, which the graph does not define "
                      f"(size variables {_fmt(self.g.size_vars)})")

    def check_axes(self) -> None:
        seen: set[str] = set()
        for k, ax in enumerate(self.g.axes):
            where = f"{self.gwhere} axis {ax.name!r}"
            if ax.id != k:
                self.fail(where, "id", f"axis id {ax.id} at position {k}")
            if ax.name in seen or not ax.name or len(ax.name) > MAX_NAME:
                self.fail(where, "name", "axis names must be unique and non-empty")
            seen.add(ax.name)
            self.check_expr(where, "size", ax.size)
            if ax.type not in AXIS_TYPES:
                self.fail(where, "type", f"{ax.type!r} is not one of {', '.join(AXIS_TYPES)}")
            for f in ax.from_:
                if not 0 <= f < k:
                    self.fail(where, "from", f"axis id {f} is not an earlier axis")
            if ax.type != ORIGINAL and not ax.from_:
                self.fail(where, "from", f"a {ax.type} axis must name the axes it comes from")
            if ax.split_peer != -1 and not 0 <= ax.split_peer < len(self.g.axes):
                self.fail(where, "split_peer", f"axis id {ax.split_peer} is not defined")

    def axis_ids(self, where: str, field_: str, ids) -> None:
        for a in ids:
            if not isinstance(a, int) or isinstance(a, bool) or not 0 <= a < len(self.g.axes):
                self.fail(where, field_, f"axis {a!r} is not defined (the graph has {len(self.g.axes)} axes: "
                          f"{_fmt(x.name for x in self.g.axes)})")

    def check_tensor(self, where: str, t: TensorAttr) -> None:
        if not isinstance(t, TensorAttr):
            self.fail(where, "tensor", "missing tensor attributes")
        if t.dtype not in ascir.DTYPES:
            self.fail(where, "dtype", f"{t.dtype!r} is not one of {', '.join(ascir.DTYPES)}")
        self.axis_ids(where, "axis", t.axis)
        if len(set(t.axis)) != len(t.axis):
            self.fail(where, "axis", f"{_fmt(t.axis)} names an axis twice")
        if len(t.repeats) != len(t.axis):
            self.fail(where, "repeats", f"{len(t.repeats)} repeats for {len(t.axis)} axes")
        if len(t.strides) != len(t.axis):
            self.fail(where, "stride", f"{len(t.strides)} strides for {len(t.axis)} axes")
        for r in t.repeats:
            self.check_expr(where, "repeats", r)
        for s in t.strides:
            self.check_expr(where, "stride", s)
        for a, r in zip(t.axis, t.repeats):
            if r != 1 and r != self.g.axes[a].size:
                self.fail(where, "repeats", f"repeat {r} on axis {self.g.axes[a].name} is neither 1 nor its size "
                          f"{self.g.axes[a].size}")
        self.axis_ids(where, "vectorized_axis", t.vectorized_axis)
        if not set(t.vectorized_axis) <= set(t.axis):
            self.fail(where, "vectorized_axis", "vectorized axes must be axes of the tensor")
        if len(t.vectorized_strides) != len(t.vectorized_axis):
            self.fail(where, "vectorized_strides", f"{len(t.vectorized_strides)} strides for "
                      f"{len(t.vectorized_axis)} vectorized axes")
        for s in t.vectorized_strides:
            self.check_expr(where, "vectorized_strides", s)
        if t.mem is not None:
            m = t.mem
            if m.hardware not in (GM, UB) or m.position not in POSITIONS or m.alloc_type not in ALLOC_TYPES:
                self.fail(where, "mem", f"hardware {m.hardware!r}, position {m.position!r}, alloc type "
                          f"{m.alloc_type!r} are not all known")
            if (m.hardware == GM) != (m.position == "GM"):
                self.fail(where, "mem", f"position {m.position} does not belong to {m.hardware}")
            self.check_expr(where, "mem.size", m.size)
            if m.alloc_type == "Queue" and not (m.que_id >= 0 and 1 <= m.que_depth <= 8 and 1 <= m.buf_num <= 2):
                self.fail(where, "que", f"queue id {m.que_id}, depth {m.que_depth}, buf_num {m.buf_num}: a queue "
                          "needs an id >= 0, a depth in [1, 8] and one or two buffers")
            if m.alloc_type == "Buffer" and m.buf_id < 0:
                self.fail(where, "buf", f"buffer id {m.buf_id}")

    def check_node(self, node: AscNode) -> None:
        where = f"node {node.name!r} ({node.type})"
        if not node.name or len(node.name) > MAX_NAME:
            self.fail(where, "name", "a node needs a name of at most 128 characters")
        ir = ascir.get_ir(node.type)
        if ir is None:
            self.fail(where, "type", f"{node.type!r} is not an AscIR type")
        self.axis_ids(where, "sched.axis", node.sched_axis)
        if node.loop_axis != -1 and node.loop_axis not in node.sched_axis:
            self.fail(where, "sched.loop_axis", f"axis {node.loop_axis} is not in sched.axis")
        # attributes
        for key, kind in ir.attrs.items():
            if key not in node.attrs:
                self.fail(where, key, f"{node.type} requires attribute {key}")
            v = node.attrs[key]
            ok = {"int": isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                  "expr": isinstance(v, Expr), "dtype": v in ascir.DTYPES, "str": isinstance(v, str),
                  "float": isinstance(v, float)}[kind]
            if not ok:
                self.fail(where, key, f"{v!r} is not a valid {kind}")
            if kind == "expr":
                self.check_expr(where, key, v)
        if node.type == "Scalar":
            try:
                float(node.attrs["value"])
            except ValueError:
                self.fail(where, "value", f"{node.attrs['value']!r} is not a number")
        # inputs: earlier nodes, outputs that exist, views that agree
        if len(node.inputs) != len(ir.inputs):
            self.fail(where, "inputs", f"{len(node.inputs)} inputs; {node.type} takes {len(ir.inputs)}")
        if len(node.in_views) != len(node.inputs):
            self.fail(where, "inputs", "input views do not match the inputs")
        for i, (src, k) in enumerate(node.inputs):
            if id(src) not in self.seen:
                self.fail(where, f"input {i}", f"comes from {src.name!r}, which is not an earlier node of the graph")
            if not 0 <= k < len(src.outputs):
                self.fail(where, f"input {i}", f"reads output {k} of {src.name!r}, which has {len(src.outputs)}")
            view = node.in_views[i]
            if view is not None:
                self.check_tensor(f"{where} input {i}", view)
                mine, theirs = view.view(), src.outputs[k].view()
                for name, a, b in zip(("dtype", "axis", "repeats", "stride"), mine, theirs):
                    if a != b:
                        self.fail(where, f"input {i} {name}", f"{_fmt(a) if name != 'dtype' else a} disagrees "
                                  f"with output {k} of {src.name!r} ({_fmt(b) if name != 'dtype' else b})")
        if len(node.outputs) != 1:
            self.fail(where, "outputs", f"{len(node.outputs)} outputs; {node.type} has one")
        for k, t in enumerate(node.outputs):
            self.check_tensor(f"{where} output {k}", t)
        self.check_semantics(node, ir, where)

    def check_semantics(self, node: AscNode, ir: ascir.IrDef, where: str) -> None:
        y = node.y
        ins = [node.input_attr(i) for i in range(len(node.inputs))]
        kind = ir.kind
        loops = set(node.sched_axis)
        if kind not in (ascir.DATA, ascir.OUTPUT, ascir.SCALAR) and not loops:
            self.fail(where, "sched.axis", "a computing node needs the loop nest it runs in")
        if kind not in (ascir.DATA, ascir.OUTPUT, ascir.STORE):
            for a, r in zip(y.axis, y.repeats):
                if r != 1 and a not in loops:
                    self.fail(where, "sched.axis", f"output axis {self.g.axes[a].name} is not a loop of the node")
        if kind == ascir.OUTPUT:
            if y.view() != ins[0].view():
                self.fail(where, "y", "an Output's tensor must be the tensor it receives")
            if self.g.type == HINT and node.inputs and node.inputs[0][0].type != "Store":
                self.fail(where, "x", "an Output must receive a Store")
        elif kind == ascir.LOAD:
            if node.inputs[0][0].type != "Data":
                self.fail(where, "x", "a Load reads a Data node")
            self.same_dtype(where, y, ins[0])
            self.gm_view(where, ins[0], y, "input")
        elif kind == ascir.STORE:
            self.same_dtype(where, y, ins[0])
            self.gm_view(where, y, ins[0], "output")
        elif kind == ascir.ELEWISE:
            for i, t in enumerate(ins):
                scalar = all(r == 1 for r in t.repeats)
                if not scalar and (t.axis != y.axis or t.repeats != y.repeats):
                    self.fail(where, f"input {i} repeats", f"{_fmt(t.repeats)} over {self._names(t.axis)} differ from "
                              f"the output's {_fmt(y.repeats)} over {self._names(y.axis)}: broadcast it first")
            want = ir.out_dtype or (ins[1].dtype if node.type == "Where" else ins[0].dtype)
            if y.dtype != want:
                self.fail(where, "dtype", f"output dtype {y.dtype}, {node.type} of these inputs gives {want}")
        elif kind == ascir.CAST:
            if y.dtype != node.attrs["dst_type"]:
                self.fail(where, "dst_type", f"dst_type {node.attrs['dst_type']} but the output is {y.dtype}")
            self.same_shape(where, y, ins[0])
        elif kind == ascir.BROADCAST:
            self.same_dtype(where, y, ins[0])
            if ins[0].axis != y.axis:
                self.fail(where, "axis", "a Broadcast keeps its input's axes")
            grown = [a for a, ri, ro in zip(y.axis, ins[0].repeats, y.repeats) if ri != ro]
            for a, ri, ro in zip(y.axis, ins[0].repeats, y.repeats):
                if ri != ro and ri != 1:
                    self.fail(where, "repeats", f"axis {self.g.axes[a].name} goes from {ri} to {ro}; a Broadcast only "
                              "grows repeats of 1")
            if not grown:
                self.fail(where, "repeats", f"{_fmt(y.repeats)} equal the input's: nothing is broadcast")
        elif kind == ascir.REDUCE:
            self.same_dtype(where, y, ins[0])
            if ins[0].axis != y.axis:
                self.fail(where, "axis", "a reduction keeps its input's axes (reduced ones get repeat 1)")
            reduced = [a for a, ri, ro in zip(y.axis, ins[0].repeats, y.repeats) if ri != ro]
            for a, ri, ro in zip(y.axis, ins[0].repeats, y.repeats):
                if ri != ro and ro != 1:
                    self.fail(where, "repeats", f"axis {self.g.axes[a].name} goes from {ri} to {ro}; a reduction "
                              "leaves repeat 1 on the axes it reduces")
            if not reduced:
                self.fail(where, "repeats", "no axis is reduced")
        elif kind == ascir.SCALAR:
            if any(r != 1 for r in y.repeats):
                self.fail(where, "repeats", "a Scalar has repeat 1 on every axis")

    def _names(self, ids) -> str:
        return _fmt(self.g.axes[a].name for a in ids)

    def same_dtype(self, where, a: TensorAttr, b: TensorAttr) -> None:
        if a.dtype != b.dtype:
            self.fail(where, "dtype", f"{a.dtype} differs from its input's {b.dtype}")

    def same_shape(self, where, a: TensorAttr, b: TensorAttr) -> None:
        if a.axis != b.axis or a.repeats != b.repeats:
            self.fail(where, "repeats", f"{_fmt(a.repeats)} differ from the input's {_fmt(b.repeats)}")

    def origins(self, axes) -> set[int]:
        """The axes and every axis they were split or merged from."""
        out, todo = set(), list(axes)
        while todo:
            a = todo.pop()
            if a not in out:
                out.add(a)
                todo.extend(self.g.axes[a].from_)
        return out

    def gm_view(self, where: str, gm: TensorAttr, local: TensorAttr, side: str) -> None:
        """A GM tensor (Data output, Store output) lists the axes of its own dims in order; the on-chip side
        lists every axis it iterates. Each GM axis must be an axis of the local tensor with the same repeat
        (in an ImplGraph: an axis the local tensor's split or merged axes come from)."""
        if self.g.type == IMPL:
            origin = self.origins(a for a, r in zip(local.axis, local.repeats) if r != 1)
            for a, r in zip(gm.axis, gm.repeats):
                if r != 1 and a not in origin:
                    self.fail(where, f"{side} axis", f"GM axis {self.g.axes[a].name} is not iterated on chip")
            return
        pos = {a: k for k, a in enumerate(local.axis)}
        last = -1
        for a, r in zip(gm.axis, gm.repeats):
            if a not in pos and r != 1:
                self.fail(where, f"{side} axis", f"GM axis {self.g.axes[a].name} is not an axis of the on-chip tensor")
            if a in pos:
                if pos[a] < last:
                    self.fail(where, f"{side} axis", "GM axes must keep the on-chip order")
                last = pos[a]
                if local.repeats[pos[a]] != r:
                    self.fail(where, f"{side} repeats", f"axis {self.g.axes[a].name}: GM repeat {r}, on-chip "
                              f"{local.repeats[pos[a]]}")

    def check_io(self) -> None:
        for kind in (ascir.DATA, ascir.OUTPUT):
            nodes = self.g.of_kind(kind)
            idx = sorted(n.attrs["index"] for n in nodes)
            if idx != list(range(len(nodes))):
                self.fail(self.gwhere, f"{kind}.index", f"indices {idx} are not 0..{len(nodes) - 1}")
        if not self.g.of_kind(ascir.OUTPUT):
            self.fail(self.gwhere, "Output", "the graph has no Output")


def check_contract(hint: AscGraph, impl: AscGraph) -> None:
    """An ImplGraph keeps its HintGraph's Data outputs and Output inputs: same nodes, same index, same
    tensors (dtype, axes by name, repeats, strides)."""
    where = f"graph {impl.name!r}"
    if impl.type != IMPL:
        raise AscGraphError(where, "graph_type", f"{impl.type} where an {IMPL} is needed")

    def sig(g: AscGraph, n: AscNode, t: TensorAttr):
        return (n.attrs.get("index"), t.dtype, tuple(g.axes[a].name for a in t.axis), tuple(t.repeats),
                tuple(t.strides))
    for kind, side in ((ascir.DATA, "output"), (ascir.OUTPUT, "input")):
        hs, ims = hint.of_kind(kind), impl.of_kind(kind)
        if [n.name for n in hs] != [n.name for n in ims]:
            raise AscGraphError(where, kind, f"{kind} nodes {[n.name for n in ims]} are not the HintGraph's "
                                f"{[n.name for n in hs]}")
        for h, m in zip(hs, ims):
            th = h.y if kind == ascir.DATA else h.input_attr(0)
            tm = m.y if kind == ascir.DATA else m.input_attr(0)
            if sig(hint, h, th) != sig(impl, m, tm):
                raise AscGraphError(f"node {m.name!r} ({m.type})", side, "the graph's contract was modified: "
                                    f"{sig(impl, m, tm)[1:]} instead of {sig(hint, h, th)[1:]}")


def full_rank_size(g: AscGraph, t: TensorAttr) -> Expr:
    """Elements of a dense tensor: the product of its repeats."""
    return product(t.repeats)
