"""ONNX ModelProto -> IR Graph: Data/Const nodes, adapters per op, NetOutput; all unsupported ops in one error."""
from __future__ import annotations

from ...common.errors import AtcError
from ...common.limits import DEFAULT_FOLD_SIZE_LIMIT
from ...ir.dtypes import dtype_from_onnx, no_ascend_type
from ...ir.file_tensor import FileTensor
from ...ir.graph import Graph, TensorDesc, Value
from ...ops.core.base import OpError
from ...ops.core.infer import infer_node
from ...options.shapes import shape_range_attr
from ...platform.soc import SocSpec, load_soc
from ..import_budget import ImportBudget
from ..node_errors import converting
from ..value_fold import fold_at_import
from . import boundary  # noqa: F401
from . import onnx_lite as onnx
from .adapter import ADAPTERS, AdapterError, NodeCtx
from .checks import check_model, input_type_problem, schema_for
from .work import check_work

DOMAIN_ALIASES = {"ai.onnx": ""}
DEFAULT_SOC = "Ascend910B1"   # the SoC values are computed with when the caller gives none (numbers do not depend on it)


def _domain_name(d: str) -> str:
    return d or "ai.onnx"


class OnnxConverter:
    def __init__(self, model: onnx.ModelProto, input_shapes: dict | None, soc: SocSpec | None = None):
        self.model = model
        self.gproto = model.graph          # the graph being converted (a subgraph converter sets a body)
        self.soc = soc or load_soc(DEFAULT_SOC)
        self.graph = Graph(model.graph.name or "graph")
        self.opsets = {DOMAIN_ALIASES.get(o.domain, o.domain): o.version for o in model.opset_import}
        self.values: dict[str, Value] = {}
        self.initializers = {t.name: t for t in model.graph.initializer}
        self.fold_limit = DEFAULT_FOLD_SIZE_LIMIT
        self.weights: dict = {}   # initializer name -> array, when the loader has it (load_onnx_lazy)
        self.input_shapes = input_shapes or {}
        self.node_outputs: dict[str, list[str]] = {}   # onnx node name -> its output tensor names
        self.budget = ImportBudget(model.graph.name)   # what converting may copy (import_budget.py)

    # -- values ----------------------------------------------------------------------------------
    def value(self, name: str) -> Value:
        if name in self.values:
            return self.values[name]
        if name in self.initializers:
            data = self.weights.get(name)
            if isinstance(data, FileTensor):   # left in its file: read when a pass or the writer needs it
                v = self.graph.add_lazy_const(self.graph.unique_name(_safe(name)),
                                              TensorDesc(data.shape, data.dtype), data.load)
                self.values[name] = v
                return v
            if data is None:
                unsupported_type(self.initializers[name].data_type, f"initializer '{name}'")
                data = onnx.to_array(self.initializers[name])
            v = self.graph.add_const(self.graph.unique_name(_safe(name)), data)
            self.values[name] = v
            return v
        raise AtcError("E19999", message=f"tensor '{name}' is used before it is produced (graph not topologically sorted?)")

    def emit(self, name: str, op_type: str, inputs, attrs, n_out: int) -> list[Value]:
        """Add a GE node and infer it; when its values can be known now (value_fold), Consts instead."""
        node = self.graph.add_node(name, op_type, inputs, [TensorDesc((), "float32")] * n_out, attrs)
        infer_node(node)
        return fold_at_import(self.graph, node, self.soc) or node.outputs

    # -- whole graph -----------------------------------------------------------------------------
    def check_supported(self) -> None:
        """Every op without an adapter, in the graph and in every subgraph its nodes own, in one E19010."""
        missing: dict[tuple, list[str]] = {}
        for n, label in _all_nodes(self.gproto):
            domain = DOMAIN_ALIASES.get(n.domain, n.domain)
            opset = self.opsets.get(domain)
            cls = ADAPTERS.get((domain, n.op_type))
            if cls is not None and opset is not None and cls.supports(opset):
                continue
            if cls is None:
                why = "no adapter"
            elif opset is None:
                why = "domain not imported"
            else:
                why = f"supported opsets {cls.versions()[0]}-{cls.last_opset}"
            key = (n.op_type, _domain_name(domain), opset, why)
            missing.setdefault(key, []).append(label)
        if missing:
            items = [f"{t} (domain {d}, opset {o}, {why}): {len(names)} node(s) {_names(names)}"
                     for (t, d, o, why), names in sorted(missing.items(), key=lambda kv: kv[0][0])]
            raise AtcError("E19010", ops="; ".join(items))

    def inputs(self) -> None:
        index = 0
        for inp in self.model.graph.input:
            if inp.name in self.initializers:
                continue  # old-style models list initializers as inputs
            if boundary.kind(inp) in boundary.STRUCTURED:    # sequences, optionals: their tensors are inputs
                v, n = boundary.structured_input(self, inp, index)
            else:
                key = inp.name if inp.name in self.input_shapes else index
                v, n = self.tensor_input(inp.name, inp.type.tensor_type, key, index), 1
            self.values[inp.name] = v
            index += n

    def tensor_input(self, name: str, tt: onnx.TypeProto.Tensor, key, index: int) -> Value:
        """The Data node of model input `index` named `name`, its shape from --input_shape[key] or the model."""
        unsupported_type(tt.elem_type, f"input '{name}'")
        dt = dtype_from_onnx(tt.elem_type)
        if dt is None:
            raise AtcError("E10041", path=self.model.graph.name,
                           reason=f"input '{name}' has an unsupported element type {tt.elem_type}")
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim] \
            if tt.HasField("shape") else [-1]   # no shape at all: unknown rank, not a scalar
        shape = self.input_shapes.get(key)
        if shape is not None:
            if len(shape) != len(dims) and tt.HasField("shape"):
                raise AtcError("E10001", value=",".join(map(str, shape)), parameter="--input_shape",
                               reason=f"input '{name}' has rank {len(dims)}, the shape given has rank {len(shape)}")
            dims = list(shape)
        attrs = {"index": index, **shape_range_attr(self.input_shapes, key)}
        if any(d < 0 for d in dims) and "_shape_range" not in attrs:
            raise AtcError("E10001", value="NULL", parameter="--input_shape",
                           reason="The shapes of inputs contain -1 in the model. "
                                  "You may need to set input shape to specify its shape.")
        fmt = "NCHW" if len(dims) == 4 else "ND"
        node = self.graph.add_node(_safe(name), "Data", out_descs=[TensorDesc(tuple(dims), dt.name, fmt, fmt)],
                                   attrs=attrs, out_names=[name])
        return node.outputs[0]

    def nodes(self, order: list[int]) -> None:
        for k in order:
            n = self.gproto.node[k]
            domain = DOMAIN_ALIASES.get(n.domain, n.domain)
            cls = ADAPTERS[(domain, n.op_type)]
            impl = cls.impl_for(self.opsets[domain])
            name = self.graph.unique_name(_safe(n.name or f"{n.op_type}_{k}"))
            ctx = None
            with converting(n.name or name, n.op_type, (AdapterError, OpError), lambda: _node_args(ctx) if ctx else "-"):
                ctx = NodeCtx(self, n, name)
                problem = input_type_problem(schema_for(n.op_type, domain, self.opsets[domain]),
                                             [_dtype_of(ctx.input(i)) for i in range(ctx.n_inputs)])
                if problem:
                    raise AdapterError(problem)
                outs = impl(ctx)
            self.node_outputs[n.name or name] = list(n.output)
            for out_name, v in zip(n.output, outs):
                if out_name:
                    self.values[out_name] = v

    def outputs(self) -> None:
        pairs = [p for o in self.gproto.output for p in boundary.output_leaves(o.name, self.value(o.name))]
        self.graph.add_node(self.graph.unique_name("NetOutput"), "NetOutput", [v for _, v in pairs], [],
                            attrs={"output_names": [n for n, _ in pairs]})


def _all_nodes(g: onnx.GraphProto, prefix: str = ""):
    """(node, label) of a graph and of the subgraphs its nodes own (If branches, Loop/Scan bodies), labels
    naming the owner: 'loop_1/body/add_3'."""
    for k, n in enumerate(g.node):
        label = prefix + (n.name or f"{n.op_type}_{k}")
        yield n, label
        for a in n.attribute:
            subs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs) \
                if a.type == onnx.AttributeProto.GRAPHS else []
            for sub in subs:
                yield from _all_nodes(sub, f"{label}/{a.name}/")


def unsupported_type(onnx_type: int, what: str) -> None:
    """E10055 for a tensor of an ONNX type Ascend has no DataType for (UINT4, the FNUZ float8s, complex)."""
    name = no_ascend_type(onnx_type)
    if name is not None:
        raise AtcError("E10055", reason=f"{what} is {name}: GE's DataType enum has no {name}, so an Ascend "
                                        "model cannot hold it")


def _dtype_of(v) -> str | None:
    """A tensor input's dtype (sequences and other non-tensor values: None, not checked here)."""
    desc = getattr(v, "desc", None)
    return desc.dtype if desc is not None else None


def _node_args(ctx: NodeCtx) -> str:
    """The ONNX node's inputs (dtype and shape where known) and attributes, for an E14001."""
    ins = []
    for i in range(ctx.n_inputs):
        name = ctx.node.input[i]
        v = ctx.conv.values.get(name) if name else None
        desc = getattr(v, "desc", None)
        ins.append(f"{desc.dtype}{list(desc.shape)}" if desc is not None else (name or "-"))
    attrs = ", ".join(f"{k}={v!r}" for k, v in sorted(ctx.attrs.items()) if not hasattr(v, "shape"))
    text = f"inputs ({', '.join(ins)})" + (f" attrs ({attrs})" if attrs else "")
    return text if len(text) <= 240 else text[:237] + "..."


def _names(names: list[str], shown: int = 5) -> str:
    more = f", ... (+{len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _safe(name: str) -> str:
    return name.replace("/", "_").replace(":", "_") or "node"


def convert_onnx(model: onnx.ModelProto, input_shapes: dict | None = None,
                 weights: dict | None = None, path: str = "",
                 fold_limit: int = DEFAULT_FOLD_SIZE_LIMIT, soc: SocSpec | None = None,
                 budget: ImportBudget | None = None) -> tuple[Graph, dict]:
    """Returns the graph and the map ONNX node name -> output tensor names (for --out_nodes). `weights`:
    initializer arrays the loader already has (load_onnx_lazy), by name. `budget`: the build's, when several
    conversions share one (gears)."""
    budget = budget or ImportBudget(path)
    budget.path = budget.path or path or model.graph.name
    if model.HasField("graph"):
        check_work(model.graph, budget.path, budget)
    order = check_model(model, path or model.graph.name, set(weights or {}))
    conv = OnnxConverter(model, input_shapes, soc)
    conv.budget = budget
    conv.weights = weights or {}
    conv.fold_limit = fold_limit
    conv.check_supported()
    inputs = [i.name for i in model.graph.input if i.name not in conv.initializers]
    structured = {i.name for i in model.graph.input if boundary.kind(i) in boundary.STRUCTURED}
    produced = {o for n in model.graph.node for o in n.output} | {n.name for n in model.graph.node} | \
        set(conv.initializers)
    for key in conv.input_shapes:
        if isinstance(key, str) and key not in inputs and not boundary.is_own_key(key, structured):
            code = "E10017" if key in produced else "E10016"
            raise AtcError(code, opname=key, parameter="input_shape")
        if isinstance(key, int) and key >= len(inputs):
            raise AtcError("E10002", value=str(key), reason=f"the model has {len(inputs)} inputs",
                           sample='"input_name1:n1,c1,h1,w1;input_name2:n2,c2,h2,w2"')
    conv.inputs()
    conv.nodes(order)
    conv.outputs()
    return conv.graph, {"node_outputs": conv.node_outputs, "values": conv.values}
