"""AscGraph <-> ge.proto.GraphDef, the way GE stores a graph-valued attribute (AttrDef.g / AttrDef.list.g).

One OpDef per node: `type` the AscIR type, `input` "producer:index", the type's attributes (`index`,
`dst_type`, `offset`, `value`) and `sched.axis` / `sched.loop_axis`; each output_desc (and, for the consumer's
own view of an edge, each input_desc) holds the tensor: dtype, `axis`, `repeats`, `strides`,
`vectorized_axis`, `vectorized_strides` and the memory placement `mem.*`. Graph attributes: `graph_type`,
`size_vars`, the axes as parallel lists (`axis_name`, `axis_size`, `axis_type`, `axis_from`,
`axis_split_peer`) and `tile_vars` / `tiling_key` of an ImplGraph. Sizes are expression strings (expr.py).

Reading trusts nothing: every field is type-checked and bounded before use, and the result is check()ed;
a problem is an AscGraphError naming the node and field.
"""
from __future__ import annotations

from ..ir.dtypes import dtype_by_name, dtype_from_proto
from ..proto import ge_ir_pb2 as ge
from . import ascir
from .expr import Expr, ExprError, as_expr, parse
from .graph import MAX_AXES, MAX_NODES, MAX_SIZE_VARS, AscGraph, AscGraphError, Mem, TensorAttr

LV = ge.AttrDef.ListValue
MAX_LIST = 256


# -- writing ----------------------------------------------------------------------------------------------------
def _ints(a: ge.AttrDef, xs) -> None:
    a.list.val_type = LV.VT_LIST_INT
    a.list.i.extend(int(x) for x in xs)


def _strs(a: ge.AttrDef, xs) -> None:
    a.list.val_type = LV.VT_LIST_STRING
    a.list.s.extend(str(x).encode() for x in xs)


def _tensor(td: ge.TensorDescriptor, t: TensorAttr) -> None:
    td.dtype = dtype_by_name(t.dtype).proto
    _ints(td.attr["axis"], t.axis)
    _strs(td.attr["repeats"], t.repeats)
    _strs(td.attr["strides"], t.strides)
    if t.vectorized_axis:
        _ints(td.attr["vectorized_axis"], t.vectorized_axis)
        _strs(td.attr["vectorized_strides"], t.vectorized_strides)
    m = t.mem
    if m is not None:
        for key in ("hardware", "position", "alloc_type"):
            td.attr[f"mem.{key}"].s = getattr(m, key).encode()
        for key in ("tensor_id", "reuse_id"):
            td.attr[f"mem.{key}"].i = getattr(m, key)
        td.attr["mem.size"].s = str(m.size).encode()
        if m.alloc_type == "Queue":
            td.attr["que.id"].i, td.attr["que.depth"].i, td.attr["que.buf_num"].i = m.que_id, m.que_depth, m.buf_num
        if m.alloc_type == "Buffer":
            td.attr["buf.id"].i = m.buf_id


def to_graph_def(g: AscGraph) -> ge.GraphDef:
    gd = ge.GraphDef(name=g.name)
    gd.attr["graph_type"].s = g.type.encode()
    _strs(gd.attr["size_vars"], g.size_vars)
    _strs(gd.attr["axis_name"], [a.name for a in g.axes])
    _strs(gd.attr["axis_size"], [a.size for a in g.axes])
    _strs(gd.attr["axis_type"], [a.type for a in g.axes])
    _ints(gd.attr["axis_split_peer"], [a.split_peer for a in g.axes])
    ll = gd.attr["axis_from"].list_list_int
    for a in g.axes:
        ll.list_list_i.add().list_i.extend(a.from_)
    if "tile_vars" in g.attrs:
        _strs(gd.attr["tile_vars"], g.attrs["tile_vars"])
    if "tiling_key" in g.attrs:
        gd.attr["tiling_key"].i = int(g.attrs["tiling_key"])
    for n in g.nodes:
        op = gd.op.add(name=n.name, type=n.type)
        op.input.extend(f"{src.name}:{k}" for src, k in n.inputs)
        for key in sorted(n.attrs):
            v, a = n.attrs[key], op.attr[key]
            kind = ascir.REGISTRY[n.type].attrs.get(key)
            if kind == "dtype":
                a.dt = dtype_by_name(v).cpp
            elif isinstance(v, Expr):
                a.s = str(v).encode()
            elif isinstance(v, bool) or not isinstance(v, (int, float, str)):
                raise AscGraphError(f"node {n.name!r}", key, f"{v!r} cannot be stored")
            elif isinstance(v, int):
                a.i = v
            elif isinstance(v, float):
                a.f = v
            else:
                a.s = v.encode()
        _ints(op.attr["sched.axis"], n.sched_axis)
        if n.loop_axis != -1:
            op.attr["sched.loop_axis"].i = n.loop_axis
        for view in n.in_views:
            if view is not None:
                _tensor(op.input_desc.add(), view)
        for t in n.outputs:
            _tensor(op.output_desc.add(), t)
    return gd


# -- reading ----------------------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, gd: ge.GraphDef):
        self.gd = gd
        self.where = f"graph {gd.name!r}"

    def fail(self, where: str, field_: str, reason: str):
        raise AscGraphError(where, field_, reason)

    def attr(self, attrs, key: str, kind: str, where: str, required: bool = True):
        if key not in attrs:
            if required:
                self.fail(where, key, "is missing")
            return None
        a = attrs[key]
        which = a.WhichOneof("value")
        if kind == "s":
            if which != "s" or len(a.s) > 1024:
                self.fail(where, key, "must be a string")
            try:
                return a.s.decode("utf-8")
            except UnicodeDecodeError:
                self.fail(where, key, "is not UTF-8")
        if kind == "i":
            if which != "i":
                self.fail(where, key, "must be an integer")
            return a.i
        if kind == "f":
            if which != "f":
                self.fail(where, key, "must be a float")
            return float(a.f)
        if kind == "dt":
            if which != "dt":
                self.fail(where, key, "must be a data type")
            return a.dt
        if which != "list" and not (which is None and kind in ("li", "ls")):
            self.fail(where, key, "must be a list")
        if kind == "li":
            if a.list.val_type not in (LV.VT_LIST_INT, LV.VT_LIST_NONE) or len(a.list.i) > MAX_LIST:
                self.fail(where, key, f"must be a list of at most {MAX_LIST} integers")
            return list(a.list.i)
        if kind == "ls":
            if a.list.val_type not in (LV.VT_LIST_STRING, LV.VT_LIST_NONE) or len(a.list.s) > MAX_LIST:
                self.fail(where, key, f"must be a list of at most {MAX_LIST} strings")
            try:
                return [s.decode("utf-8") for s in a.list.s]
            except UnicodeDecodeError:
                self.fail(where, key, "is not UTF-8")
        raise AssertionError(kind)

    def exprs(self, attrs, key: str, where: str, required: bool = True) -> list[Expr]:
        out = []
        for text in self.attr(attrs, key, "ls", where, required) or []:
            try:
                out.append(parse(text))
            except ExprError as exc:
                self.fail(where, key, str(exc))
        return out

    def int_id(self, v: int, where: str, field_: str) -> int:
        if not -1 <= v < 1 << 31:
            self.fail(where, field_, f"{v} is out of range")
        return v

    def tensor(self, td: ge.TensorDescriptor, where: str) -> TensorAttr:
        dt = dtype_from_proto(td.dtype)
        if dt is None or dt.name not in ascir.DTYPES:
            self.fail(where, "dtype", f"data type {td.dtype} is not one an AscGraph holds")
        a = td.attr
        t = TensorAttr(dt.name, self.attr(a, "axis", "li", where), self.exprs(a, "repeats", where),
                       self.exprs(a, "strides", where), self.attr(a, "vectorized_axis", "li", where, False) or [],
                       self.exprs(a, "vectorized_strides", where, False))
        if "mem.hardware" in a:
            m = Mem(self.attr(a, "mem.hardware", "s", where), self.attr(a, "mem.position", "s", where),
                    self.attr(a, "mem.alloc_type", "s", where),
                    self.int_id(self.attr(a, "mem.tensor_id", "i", where), where, "mem.tensor_id"),
                    self.int_id(self.attr(a, "mem.reuse_id", "i", where), where, "mem.reuse_id"))
            try:
                m.size = parse(self.attr(a, "mem.size", "s", where))
            except ExprError as exc:
                self.fail(where, "mem.size", str(exc))
            if m.alloc_type == "Queue":
                m.que_id = self.int_id(self.attr(a, "que.id", "i", where), where, "que.id")
                m.que_depth = self.int_id(self.attr(a, "que.depth", "i", where), where, "que.depth")
                m.buf_num = self.int_id(self.attr(a, "que.buf_num", "i", where), where, "que.buf_num")
            if m.alloc_type == "Buffer":
                m.buf_id = self.int_id(self.attr(a, "buf.id", "i", where), where, "buf.id")
            t.mem = m
        return t

    def read(self) -> AscGraph:
        gd = self.gd
        w = self.where
        if len(gd.op) > MAX_NODES:
            self.fail(w, "op", f"{len(gd.op)} nodes (limit {MAX_NODES})")
        g = AscGraph(gd.name, self.attr(gd.attr, "graph_type", "s", w))
        names = self.attr(gd.attr, "size_vars", "ls", w)
        if len(names) > MAX_SIZE_VARS:
            self.fail(w, "size_vars", f"{len(names)} size variables (limit {MAX_SIZE_VARS})")
        g.size_vars = names
        an, asz = self.attr(gd.attr, "axis_name", "ls", w), self.exprs(gd.attr, "axis_size", w)
        at, peer = self.attr(gd.attr, "axis_type", "ls", w), self.attr(gd.attr, "axis_split_peer", "li", w)
        if "axis_from" not in gd.attr or gd.attr["axis_from"].WhichOneof("value") not in ("list_list_int", None):
            self.fail(w, "axis_from", "must be a list of integer lists")
        frm = [list(x.list_i) for x in gd.attr["axis_from"].list_list_int.list_list_i]
        if len(an) > MAX_AXES or not len(an) == len(asz) == len(at) == len(peer) == len(frm):
            self.fail(w, "axis", f"axis_name, axis_size, axis_type, axis_split_peer, axis_from must have one entry "
                      f"per axis (at most {MAX_AXES})")
        for k in range(len(an)):
            if len(frm[k]) > MAX_AXES:
                self.fail(w, "axis_from", f"axis {an[k]!r} comes from {len(frm[k])} axes")
            g.create_axis(an[k], asz[k], at[k], tuple(frm[k]), self.int_id(peer[k], w, "axis_split_peer"))
        tv = self.attr(gd.attr, "tile_vars", "ls", w, False)
        if tv is not None:
            g.attrs["tile_vars"] = tv
        tk = self.attr(gd.attr, "tiling_key", "i", w, False)
        if tk is not None:
            g.attrs["tiling_key"] = tk
        by_name = {}
        for op in gd.op:
            where = f"node {op.name!r} ({op.type})"
            ir = ascir.get_ir(op.type)
            if ir is None:
                self.fail(where, "type", f"{op.type!r} is not an AscIR type")
            if op.name in by_name:
                self.fail(w, "name", f"node name {op.name!r} is used twice")
            inputs = []
            for i, ref in enumerate(op.input):
                name, sep, k = ref.rpartition(":")
                if not sep or name not in by_name or not k.isdigit() or len(k) > 6:
                    self.fail(where, f"input {i}", f"{ref[:80]!r} does not name an output of an earlier node")
                inputs.append((by_name[name], int(k)))
            attrs = {}
            for key, kind in ir.attrs.items():
                if kind == "int":
                    attrs[key] = self.attr(op.attr, key, "i", where)
                elif kind == "float":
                    attrs[key] = self.attr(op.attr, key, "f", where)
                elif kind == "str":
                    attrs[key] = self.attr(op.attr, key, "s", where)
                elif kind == "expr":
                    try:
                        attrs[key] = as_expr(self.attr(op.attr, key, "s", where))
                    except ExprError as exc:
                        self.fail(where, key, str(exc))
                else:
                    d = [x for x in ascir.DTYPES if dtype_by_name(x).cpp == self.attr(op.attr, key, "dt", where)]
                    if not d:
                        self.fail(where, key, "is not a data type an AscGraph holds")
                    attrs[key] = d[0]
            sched = self.attr(op.attr, "sched.axis", "li", where)
            node = g.add_node(op.type, op.name, inputs, attrs, sched,
                              [self.tensor(td, f"{where} output {k}") for k, td in enumerate(op.output_desc)])
            loop = self.attr(op.attr, "sched.loop_axis", "i", where, False)
            node.loop_axis = -1 if loop is None else self.int_id(loop, where, "sched.loop_axis")
            if op.input_desc:
                if len(op.input_desc) != len(inputs):
                    self.fail(where, "input_desc", f"{len(op.input_desc)} input views for {len(inputs)} inputs")
                node.in_views = [self.tensor(td, f"{where} input {k}") for k, td in enumerate(op.input_desc)]
            by_name[op.name] = node
        return g


def from_graph_def(gd: ge.GraphDef) -> AscGraph:
    """Decode and check an AscGraph read from a file."""
    g = _Reader(gd).read()
    g.check()
    return g
