"""Structural checks of an ONNX model before any adapter sees it (the file is untrusted).

Opsets (one per domain, a version the installed onnx defines), tensors (known dtype, non-negative dims, a
size below limits.MAX_CONST_BYTES, data that matches the shape), graph inputs (a tensor type, valid dims),
wiring (every tensor produced once, every input produced somewhere, no cycle; nodes are put in topological
order, as onnxruntime does), graph outputs produced, and node attributes against the op's ONNX schema
(type, required ones present). Each failure names the node, tensor or field: E16005 for duplicate opsets,
E13014 for an attribute, E10041 for the rest of the file's structure.
"""
from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Container

from ...common.errors import AtcError
from ...common.limits import MAX_CONST_BYTES, MAX_RANK
from . import onnx_lite as onnx
from .boundary import problem as structured_input_problem
from .onnx_lite import TensorProto

DOMAIN_ALIASES = {"ai.onnx": ""}
_BITS = {TensorProto.INT4: 4, TensorProto.UINT4: 4, getattr(TensorProto, "FLOAT4E2M1", -1): 4,
         getattr(TensorProto, "INT2", -2): 2, getattr(TensorProto, "UINT2", -3): 2}
_TYPED = {TensorProto.FLOAT: "float_data", TensorProto.DOUBLE: "double_data", TensorProto.INT64: "int64_data",
          TensorProto.INT32: "int32_data", TensorProto.INT16: "int32_data", TensorProto.INT8: "int32_data",
          TensorProto.UINT8: "int32_data", TensorProto.UINT16: "int32_data", TensorProto.BOOL: "int32_data",
          TensorProto.FLOAT16: "int32_data", TensorProto.BFLOAT16: "int32_data", TensorProto.UINT32: "uint64_data",
          TensorProto.UINT64: "uint64_data", TensorProto.STRING: "string_data"}


ONNX_TYPE = {"float32": "float", "float64": "double", "float16": "float16", "bfloat16": "bfloat16", "bool": "bool",
             "string": "string", **{f"{k}{b}": f"{k}{b}" for k in ("int", "uint") for b in (8, 16, 32, 64)},
             "int4": "int4", "int2": "int2", "uint2": "uint2", "float8_e4m3fn": "float8e4m3fn",
             "float8_e5m2": "float8e5m2", "float8_e8m0fnu": "float8e8m0", "float4_e2m1fn": "float4e2m1"}


@functools.lru_cache(maxsize=4096)
def schema_for(op_type: str, domain: str, opset: int):
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None


def input_type_problem(schema, dtypes: list[str | None]) -> str | None:
    """Whether the inputs' dtypes satisfy the schema's type constraints: each input's own set, and one type per
    type parameter (T) across the inputs that share it. None if they do, else what is wrong."""
    if schema is None:
        return None
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    bound: dict[str, str] = {}
    formals = list(schema.inputs)
    for i, dt in enumerate(dtypes):
        if dt is None or not formals:
            continue
        f = formals[min(i, len(formals) - 1)]
        if i >= len(formals) and f.option != onnx.defs.OpSchema.FormalParameterOption.Variadic:
            continue
        name = ONNX_TYPE.get(dt)
        if name is None:
            continue
        t = f"tensor({name})"
        if f.type_str in allowed and t not in allowed[f.type_str]:
            return f"input {i} ({f.name}) is {dt}; {schema.name}-{schema.since_version} accepts " + \
                ", ".join(sorted(x[7:-1] for x in allowed[f.type_str] if x.startswith("tensor(")))
        if f.type_str in allowed and f.is_homogeneous:
            if bound.setdefault(f.type_str, t) != t:
                return f"input {i} ({f.name}) is {dt}, but another input of type {f.type_str} is {bound[f.type_str][7:-1]}"
    return None


class ModelChecks:
    def __init__(self, model: onnx.ModelProto, path: str, lazy: set[str]):
        self.model, self.path, self.lazy = model, path, lazy
        self._schemas: dict = {}

    def fail(self, reason: str) -> AtcError:
        return AtcError("E10041", path=self.path, reason=reason)

    # -- opsets -----------------------------------------------------------------------------------------
    def opsets(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.model.opset_import:
            d = DOMAIN_ALIASES.get(o.domain, o.domain)
            if d in out:
                n = sum(1 for x in self.model.opset_import if DOMAIN_ALIASES.get(x.domain, x.domain) == d)
                raise AtcError("E16005", domain_version_size=n)
            out[d] = o.version
        newest = onnx.defs.onnx_opset_version()
        if "" in out and not 1 <= out[""] <= newest:
            raise self.fail(f"the model imports opset {out['']} of the default domain; onnx "
                            f"{onnx.__version__} defines 1..{newest}")
        return out

    # -- tensors --------------------------------------------------------------------------------------------
    def tensor(self, t: TensorProto, where: str) -> None:
        if t.data_type == TensorProto.UNDEFINED or t.data_type not in TensorProto.DataType.values():
            raise self.fail(f"{where} has data type {t.data_type}, which ONNX does not define")
        if len(t.dims) > MAX_RANK:
            raise self.fail(f"{where} has {len(t.dims)} dimensions (limit {MAX_RANK})")
        if any(d < 0 for d in t.dims):
            raise self.fail(f"{where} has a negative dimension in {list(t.dims)}")
        n = math.prod(t.dims)
        bits = _BITS.get(t.data_type)
        itemsize = 16 if t.data_type == TensorProto.STRING else (
            onnx.itemsize(t.data_type) if bits is None else 1)
        nbytes = (n * bits + 7) // 8 if bits else n * itemsize
        if nbytes > MAX_CONST_BYTES:
            raise self.fail(f"{where} of shape {list(t.dims)} would need more than {MAX_CONST_BYTES} bytes")
        if t.name in self.lazy or t.data_location == TensorProto.EXTERNAL:
            return
        if t.HasField("raw_data"):
            if t.data_type == TensorProto.STRING:
                raise self.fail(f"{where} is a string tensor with raw_data (strings are stored in string_data)")
            if len(t.raw_data) != nbytes:
                raise self.fail(f"{where} of shape {list(t.dims)} has {len(t.raw_data)} bytes of raw_data; its "
                                f"dtype needs {nbytes}")
            return
        field = _TYPED.get(t.data_type)
        if field is not None and bits is None:
            got = len(getattr(t, field))
            if got != n and not (got == 0 and n == 0):
                raise self.fail(f"{where} of shape {list(t.dims)} holds {got} values in {field}; it needs {n}")

    # -- attributes against the schema ---------------------------------------------------------------------------
    def schema(self, op_type: str, domain: str, opset: int | None):
        return schema_for(op_type, domain, opset) if opset else None

    def attributes(self, n: onnx.NodeProto, name: str, opsets: dict[str, int]) -> None:
        domain = DOMAIN_ALIASES.get(n.domain, n.domain)
        seen = set()
        for a in n.attribute:
            if a.name in seen:
                raise AtcError("E13014", value=a.name, parameter=a.name, opname=name, reason="the attribute is given twice")
            seen.add(a.name)
            if a.type == onnx.AttributeProto.UNDEFINED and not a.ref_attr_name:
                raise AtcError("E13014", value="UNDEFINED", parameter=a.name, opname=name,
                               reason="the attribute has no type")
            if a.type == onnx.AttributeProto.TENSOR:
                self.tensor(a.t, f"attribute {a.name} of node {name}")
        s = self.schema(n.op_type, domain, opsets.get(domain))
        if s is None:
            return
        n_in = len(n.input)
        while n_in and not n.input[n_in - 1]:
            n_in -= 1
        if not s.min_input <= n_in <= s.max_input:
            raise AtcError("E14001", value=f"{n_in} inputs", opname=name, optype=n.op_type,
                           reason=f"{n.op_type}-{s.since_version} takes {s.min_input}..{s.max_input} inputs")
        if not s.min_output <= len(n.output) <= s.max_output:
            raise AtcError("E14001", value=f"{len(n.output)} outputs", opname=name, optype=n.op_type,
                           reason=f"{n.op_type}-{s.since_version} has {s.min_output}..{s.max_output} outputs")
        for a in n.attribute:
            decl = s.attributes.get(a.name)
            if decl is not None and int(decl.type) != a.type and not a.ref_attr_name:
                raise AtcError("E13014", value=onnx.AttributeProto.AttributeType.Name(a.type)
                               if a.type in onnx.AttributeProto.AttributeType.values() else str(a.type),
                               parameter=a.name, opname=name,
                               reason=f"{n.op_type}-{s.since_version} declares {a.name} as "
                                      f"{onnx.AttributeProto.AttributeType.Name(int(decl.type))}")
        for key, decl in s.attributes.items():
            if decl.required and key not in seen:
                raise AtcError("E13014", value="(missing)", parameter=key, opname=name,
                               reason=f"{n.op_type}-{s.since_version} requires the attribute {key}")

    # -- the graph -----------------------------------------------------------------------------------------------
    def graph_inputs(self) -> None:
        for inp in self.model.graph.input:
            if not inp.type.HasField("tensor_type"):
                if inp.name in {t.name for t in self.model.graph.initializer}:
                    continue
                why = structured_input_problem(inp)
                if why:
                    raise self.fail(why)
                continue
            for d in inp.type.tensor_type.shape.dim:
                if d.HasField("dim_value") and d.dim_value < 0:
                    raise self.fail(f"graph input '{inp.name}' has a negative dimension {d.dim_value}")
            if len(inp.type.tensor_type.shape.dim) > MAX_RANK:
                raise self.fail(f"graph input '{inp.name}' has more than {MAX_RANK} dimensions")

    def order(self, opsets: dict[str, int], g: onnx.GraphProto | None = None,
              outer: Container[str] = frozenset()) -> list[int]:
        """Node indices in a topological order (file order among ready nodes); checks the wiring. For a
        subgraph `g`, `outer` are the names it may read from enclosing scopes (asked name by name: the scopes
        of an unrolled loop grow with every iteration, and are never copied)."""
        g = self.model.graph if g is None else g
        producer: dict[str, int] = {}     # the graph's own names (an outer name is produced at -1 too)

        def known(name: str) -> bool:
            return name in producer or name in outer
        for t in g.initializer:
            if t.name in producer and t.name not in outer:
                raise self.fail(f"initializer '{t.name}' is defined twice")
            producer[t.name] = -1
        for inp in g.input:
            if producer.get(inp.name, -1) != -1:
                raise self.fail(f"graph input '{inp.name}' is declared twice")
            producer.setdefault(inp.name, -1)
        local = {t.name for t in g.initializer} | {i.name for i in g.input}
        names: set[str] = set()
        for k, n in enumerate(g.node):
            label = n.name or f"{n.op_type}_{k}"
            if not n.op_type:
                raise self.fail(f"node {k} ({label}) has no op_type")
            if n.name and n.name in names:
                raise AtcError("E13009", opname=n.name)
            names.add(n.name)
            self.attributes(n, label, opsets)
            for o in n.output:
                if not o:
                    continue
                if known(o) and (o not in outer or o in local):
                    other = producer.get(o, -1)
                    who = "a graph input or initializer" if other == -1 else \
                        f"node {g.node[other].name or g.node[other].op_type + '_' + str(other)}"
                    raise self.fail(f"tensor '{o}' is written by node {label} and by {who}: each tensor has one "
                                    "producer")
                producer[o] = k
        users: list[list[int]] = [[] for _ in g.node]
        indeg = [0] * len(g.node)
        for k, n in enumerate(g.node):
            deps = set()
            for i in n.input:
                if not i:
                    continue
                if not known(i):
                    raise self.fail(f"input '{i}' of node {n.name or n.op_type + '_' + str(k)} is not produced by "
                                    "any node, graph input or initializer")
                if producer.get(i, -1) >= 0:
                    deps.add(producer[i])
            indeg[k] = len(deps)
            for d in deps:
                users[d].append(k)
        ready = [k for k in range(len(g.node)) if indeg[k] == 0]
        heapq.heapify(ready)
        out: list[int] = []
        while ready:
            k = heapq.heappop(ready)
            out.append(k)
            for u in users[k]:
                indeg[u] -= 1
                if indeg[u] == 0:
                    heapq.heappush(ready, u)
        if len(out) != len(g.node):
            stuck = [g.node[k].name or f"{g.node[k].op_type}_{k}" for k in range(len(g.node)) if indeg[k] > 0][:5]
            raise self.fail(f"the graph has a cycle through node(s) {', '.join(stuck)}")
        for o in g.output:
            if not known(o.name):
                raise self.fail(f"graph output '{o.name}' is not produced by any node, input or initializer")
        return out


def check_text(model: onnx.ModelProto, path: str) -> None:
    """Every name is text: protobuf hands a string field with invalid UTF-8 over as bytes (ONNX is proto2)."""
    g = model.graph

    def need(x, what: str) -> None:
        if not isinstance(x, str) or "\0" in x:
            raise AtcError("E10041", path=path, reason=f"{what} {x!r} is not valid UTF-8 text")
    for o in model.opset_import:
        need(o.domain, "opset domain")
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        need(vi.name, "graph value name")
    for t in g.initializer:
        need(t.name, "initializer name")
    for n in g.node:
        for x in (n.name, n.op_type, n.domain, *n.input, *n.output):
            need(x, f"a name of node {n.name!r}")
        for a in n.attribute:
            need(a.name, f"an attribute name of node {n.name!r}")


def check_body(g: onnx.GraphProto, path: str, outer: Container[str], opsets: dict[str, int]) -> list[int]:
    """A subgraph's structure (initializers, wiring with the names of enclosing scopes, attributes): its nodes'
    indices in a topological order. A body may shadow an outer name with its own."""
    c = ModelChecks(onnx.ModelProto(), path, set())
    for t in g.initializer:
        c.tensor(t, f"initializer '{t.name}' of subgraph {g.name!r}")
    return c.order(opsets, g, outer)


def check_model(model: onnx.ModelProto, path: str, lazy: set[str] | None = None) -> list[int]:
    """Check the model; returns its nodes' indices in topological order."""
    c = ModelChecks(model, path, lazy or set())
    if not model.HasField("graph"):
        raise AtcError("E16004")
    check_text(model, path)
    if not model.graph.output:
        raise AtcError("E16001", value="output")
    opsets = c.opsets()
    for t in model.graph.initializer:
        c.tensor(t, f"initializer '{t.name}'")
    c.graph_inputs()
    return c.order(opsets)
