"""TensorFlow GraphDef -> IR Graph: Placeholder -> Data, Const -> Const, one adapter per op type, NoOp and
control inputs dropped (a frozen inference graph orders nothing that matters with them), outputs = the
nodes nobody consumes (unless --out_nodes), every unsupported op named in one E19010."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...common.errors import AtcError
from ...ir.graph import Graph, TensorDesc, Value
from ...ops.core.base import OpError
from ...ops.core.infer import infer_node
from ...options.shapes import shape_range_attr
from ...platform.soc import SocSpec, load_soc
from ...proto import tf_graph_pb2 as tf
from ..import_budget import ImportBudget
from ..node_errors import converting
from ..value_fold import fold_at_import
from . import functions, tensor_array  # noqa: F401  (registers the control-flow, library-call, TensorArray adapters)
from .adapters import TF_ADAPTERS, TfAdapterError
from .functionalize import functionalize
from .functions import resolve_function_ref
from .values import TfValueError, attr_value, dtype_name, shape_of, tensor_to_numpy
from .work import library_work

NO_OUTPUT_OPS = {"NoOp"}
# ops that only end something (TensorArrayCloseV3 frees an array): a control edge into one orders the close
# after its source, it does not consume the source, so the source can still be a model output
SINK_OPS = {"TensorArrayCloseV3"}
# the AttrValue kind of each attribute the adapters read (TensorFlow's op registry declares them so)
ATTR_KINDS = {**{k: "i" for k in ("num_split", "axis", "begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                  "shrink_axis_mask", "N", "rank_size", "root_rank", "sr_tag", "dest_rank",
                                  "src_rank", "fusion", "fusion_id")},
              **{k: "f" for k in ("alpha", "epsilon")},
              **{k: "b" for k in ("keep_dims", "is_training", "transpose_a", "transpose_b", "adj_x", "adj_y",
                                  "exclusive", "reverse", "align_corners", "half_pixel_centers", "sorted")},
              **{k: "s" for k in ("mode", "data_format", "padding", "equation", "group", "reduction")},
              "shape": "shape",
              **{k: "type" for k in ("out_type", "output_type", "DstT", "SrcT", "T", "dtype", "Tidx",
                                     "index_type")},
              **{k: "list_i" for k in ("squeeze_dims", "explicit_paddings", "strides", "dilations", "ksize")}}
ATTR_NAMES = {"i": "an int", "f": "a float", "b": "a bool", "s": "a string", "type": "a dtype",
              "list_i": "a list of ints", "shape": "a shape"}


def split_input(name: str) -> tuple[str, int, bool]:
    """'node' / 'node:k' / '^node' -> (node, k, is_control); a malformed reference is an E12009."""
    if name.startswith("^"):
        return name[1:], 0, True
    node, sep, k = name.rpartition(":")
    if not sep:
        return name, 0, False
    if not node or not k.isdigit() or len(k) > 6:
        raise AtcError("E12009", input=name, opname="?")
    return node, int(k), False


class TfCtx:
    """What an adapter sees of one NodeDef and how it emits GE nodes."""

    def __init__(self, conv: "TfConverter", node: tf.NodeDef, name: str):
        self.conv, self.node, self.name = conv, node, name
        self.attrs = {k: attr_value(v) for k, v in node.attr.items()}
        self.data_inputs = [i for i in node.input if not i.startswith("^")]

    def attr(self, key: str, default: Any = None) -> Any:
        """An attribute's value, checked against the kind TensorFlow gives that attribute (ATTR_KINDS)."""
        if key in self.node.attr and key in ATTR_KINDS:
            a = self.node.attr[key]
            kind, want = a.WhichOneof("value"), ATTR_KINDS[key]
            ok = kind == want if want != "list_i" else (kind == "list" and not (
                len(a.list.s) or len(a.list.f) or len(a.list.b) or len(a.list.type) or len(a.list.shape)))
            if not ok:
                raise TfAdapterError(f"attribute {key} is a {kind or 'empty value'}; TensorFlow gives it as "
                                     f"{ATTR_NAMES[want]}")
        return self.attrs.get(key, default)

    @property
    def n_inputs(self) -> int:
        return len(self.data_inputs)

    def input(self, i: int) -> Value:
        if i >= len(self.data_inputs):
            raise TfAdapterError(f"{self.node.op} needs input {i}; the node has {len(self.data_inputs)} input(s)")
        return self.conv.tensor(self.data_inputs[i])

    def const(self, i: int) -> np.ndarray | None:
        v = self.input(i)
        return v.data if v.is_const else None

    def const_ints(self, i: int, what: str) -> list[int]:
        v = self.const(i)
        if v is None:
            raise TfAdapterError(f"{what} (input {i}) must be a constant")
        v = np.asarray(v)
        if v.dtype.kind not in "iu":
            raise TfAdapterError(f"{what} (input {i}) must be integers, got {v.dtype}")
        return [int(a) for a in v.reshape(-1)]

    def make_const(self, suffix: str, data) -> Value:
        return self.conv.graph.add_const(self.conv.graph.unique_name(f"{self.name}_{suffix}"), np.asarray(data))

    def emit(self, op_type: str, inputs: list[Value | None], attrs: dict | None = None, suffix: str = "",
             n_out: int = 1) -> list[Value]:
        name = self.name if not suffix else self.conv.graph.unique_name(f"{self.name}_{suffix}")
        node = self.conv.graph.add_node(name, op_type, inputs, [TensorDesc((), "float32")] * n_out, attrs or {})
        infer_node(node)
        return fold_at_import(self.conv.graph, node, self.conv.soc) or node.outputs


def _node_args(conv: "TfConverter", n: tf.NodeDef) -> str:
    """The NodeDef's inputs (dtype and shape where known) and attributes, for an E14001."""
    ins = []
    for i in n.input:
        if i.startswith("^"):
            continue
        try:
            v = conv.tensor(i)
            ins.append(f"{v.desc.dtype}{list(v.desc.shape)}")
        except AtcError:
            ins.append(i)
    attrs = ", ".join(f"{k}={n.attr[k].WhichOneof('value')}" for k in sorted(n.attr))
    text = f"inputs ({', '.join(ins)})" + (f" attrs ({attrs})" if attrs else "")
    return text if len(text) <= 240 else text[:237] + "..."


class TfConverter:
    def __init__(self, graph_def: tf.GraphDef, input_shapes: dict | None, input_format: str, path: str = "",
                 soc: SocSpec | None = None):
        self.gd = graph_def
        self.soc = soc or load_soc("Ascend910B1")
        self.path = path or "graph"
        self.current = ""
        self.graph = Graph("graph")
        self.input_shapes = input_shapes or {}
        self.input_format = input_format or "NHWC"
        self.outputs: dict[str, list[Value]] = {}
        self.node_outputs: dict[str, list[str]] = {}
        self.values: dict[str, Value] = {}
        self.budget = ImportBudget(self.path)   # what converting may copy (import_budget.py)

    def split(self, ref: str) -> tuple[str, int, bool]:
        """An input reference: 'node:k' in a GraphDef, 'node:out_arg:k' or an argument in a function body."""
        if getattr(self, "function", None) is not None and not ref.startswith("^"):
            node, k = resolve_function_ref(self, ref)
            return node, k, False
        return split_input(ref)

    def tensor(self, ref: str) -> Value:
        node, k, _ = self.split(ref)
        outs = self.outputs.get(node)
        if outs is None:
            raise AtcError("E12009", input=ref, opname=self.current)
        if k >= len(outs):
            raise AtcError("E14001", value=ref, opname=self.current, optype="-",
                           reason=f"it reads output {k} of node {node}, which has {len(outs)} output(s)")
        return outs[k]

    def check_supported(self) -> None:
        """Every op without an adapter, in the graph and in its library functions, in one E19010."""
        missing: dict[str, list[str]] = {}
        nodes = [(n, n.name) for n in self.gd.node] + [(n, f"{f.signature.name}/{n.name}")
                                                        for f in self.gd.library.function for n in f.node_def]
        for n, label in nodes:
            if n.op not in TF_ADAPTERS and n.op not in ("Placeholder", "Const", "NoOp"):
                missing.setdefault(n.op, []).append(label)
        if missing:
            items = [f"{op} (framework TensorFlow): {len(names)} node(s) {', '.join(names[:5])}"
                     + (f", ... (+{len(names) - 5} more)" if len(names) > 5 else "")
                     for op, names in sorted(missing.items())]
            raise AtcError("E19010", ops="; ".join(items))

    def ordered(self) -> list[tf.NodeDef]:
        """NodeDefs with every producer first (a GraphDef need not be sorted); a cycle is an error."""
        by_name = {n.name: n for n in self.gd.node}

        if len(by_name) != len(self.gd.node):
            seen: set[str] = set()
            for n in self.gd.node:
                if n.name in seen:
                    raise AtcError("E13009", opname=n.name)
                seen.add(n.name)

        def deps(n):
            out = []
            for i in n.input:
                try:
                    name = self.split(i)[0]
                except AtcError:
                    raise AtcError("E12009", input=i, opname=n.name) from None
                src = by_name.get(name)
                if src is None:
                    if name in self.outputs:     # a function argument (bound before the body converts)
                        continue
                    raise AtcError("E12009", input=i, opname=n.name)
                out.append(src)
            return iter(out)
        order, state = [], {}
        for root in self.gd.node:
            if root.name in state:
                continue
            state[root.name] = 1
            stack = [(root, deps(root))]
            while stack:
                n, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    stack.pop()
                    state[n.name] = 2
                    order.append(n)
                elif state.get(nxt.name) == 1:
                    raise AtcError("E10041", path=self.path, reason=f"the graph has a cycle through node {nxt.name} "
                                                                    "(control flow is not supported yet)")
                elif nxt.name not in state:
                    state[nxt.name] = 1
                    stack.append((nxt, deps(nxt)))
        return order

    def convert(self) -> None:
        index = 0
        unused = self.unused_placeholders()
        for n in self.ordered():
            name = self.graph.unique_name(n.name.replace("/", "_"))
            self.current = n.name
            if n.name in unused:
                continue
            if n.op == "Placeholder":
                with converting(n.name, n.op, (TfAdapterError, TfValueError, OpError), lambda: _node_args(self, n)):
                    self.placeholder(n, name, index)
                index += 1
                continue
            with converting(n.name, n.op, (TfAdapterError, TfValueError, OpError), lambda: _node_args(self, n)):
                if n.op == "Const":
                    self.outputs[n.name] = [self.graph.add_const(name, tensor_to_numpy(n.attr["value"].tensor))]
                elif n.op in NO_OUTPUT_OPS:
                    self.outputs[n.name] = []
                else:
                    self.outputs[n.name] = list(TF_ADAPTERS[n.op](TfCtx(self, n, name)))
            self.node_outputs[n.name] = [f"{n.name}:{k}" for k in range(len(self.outputs[n.name]))]
            for k, v in enumerate(self.outputs[n.name]):
                self.values[f"{n.name}:{k}"] = v
        self.check_input_shapes(index)

    def unused_placeholders(self) -> set[str]:
        """Placeholders nothing reads: not model inputs. TensorFlow's control-flow lowering leaves some behind
        (unused_control_flow_input*), dropped silently; any other (a training flag, an input the outputs do not
        need) is named in a warning."""
        consumed = {self.split(i)[0] for n in self.gd.node for i in n.input}
        unused = [n.name for n in self.gd.node if n.op == "Placeholder" and n.name not in consumed]
        for name in unused:
            if not name.startswith("unused_control_flow_input"):
                self.graph.warnings.append(f"Placeholder {name} has no consumer: it is not made a model input")
        return set(unused)

    def placeholder(self, n: tf.NodeDef, name: str, index: int) -> None:
        dt = dtype_name(n.attr["dtype"].type)
        dims = shape_of(n.attr["shape"].shape) if "shape" in n.attr else None
        key = n.name if n.name in self.input_shapes else index
        given = self.input_shapes.get(key)
        if given is not None:
            if dims is not None and len(given) != len(dims):
                raise AtcError("E10001", value=",".join(map(str, given)), parameter="--input_shape",
                               reason=f"input '{n.name}' has rank {len(dims)}, the shape given has rank {len(given)}")
            dims = list(given)
        ranged = shape_range_attr(self.input_shapes, key)
        if dims is None or (any(d < 0 for d in dims) and not ranged):
            raise AtcError("E10001", value="NULL", parameter="--input_shape",
                           reason="The shapes of inputs contain -1 in the model. "
                                  "You may need to set input shape to specify its shape.")
        fmt = self.input_format if len(dims) == 4 else "ND"
        node = self.graph.add_node(name, "Data", out_descs=[TensorDesc(tuple(dims), dt, fmt, fmt)],
                                   attrs={"index": index, **ranged}, out_names=[n.name])  # inputs are named after the op
        self.outputs[n.name] = node.outputs
        self.values[f"{n.name}:0"] = node.outputs[0]
        self.node_outputs[n.name] = [f"{n.name}:0"]

    def check_input_shapes(self, n_inputs: int) -> None:
        placeholders = [n.name for n in self.gd.node if n.op == "Placeholder"]
        names = {n.name for n in self.gd.node}
        for key in self.input_shapes:
            if isinstance(key, str) and key not in placeholders:
                raise AtcError("E10017" if key in names else "E10016", opname=key, parameter="input_shape")
            if isinstance(key, int) and key >= n_inputs:
                raise AtcError("E10002", value=str(key), reason=f"the model has {n_inputs} inputs",
                               sample='"input_name1:n1,c1,h1,w1;input_name2:n2,c2,h2,w2"')

    def net_output(self) -> None:
        consumed = {split_input(i)[0] for n in self.gd.node for i in n.input
                    if not (n.op in SINK_OPS and i.startswith("^"))}
        outs, names = [], []
        for n in self.gd.node:
            if n.name in consumed or n.op in NO_OUTPUT_OPS or n.op in ("Placeholder", "Const") \
                    or n.name not in self.outputs:
                continue
            for k, v in enumerate(self.outputs[n.name]):
                outs.append(v)
                names.append(f"{n.name}:{k}")
        if not outs:
            raise AtcError("E16001", value="output")
        self.graph.add_node("NetOutput", "NetOutput", outs, [], attrs={"output_names": names})


def convert_tf(graph_def: tf.GraphDef, input_shapes: dict | None = None, input_format: str = "NHWC", path: str = "",
               soc: SocSpec | None = None, budget: ImportBudget | None = None):
    """`budget`: the build's, when several conversions share one (gears)."""
    graph_def = functionalize(graph_def, path or "graph")     # v1 loops -> While + library functions
    budget = budget or ImportBudget(path)
    budget.path = budget.path or path or "graph"
    subgraphs, copied = library_work(graph_def)
    budget.plan_subgraphs(subgraphs)
    problem = budget.copy_problem(copied, "converting a copy of each library function per If, While, Case or call "
                                          "that names it")
    if problem:
        raise budget.too_complex(problem)
    budget.copied += copied
    conv = TfConverter(graph_def, input_shapes, input_format, path, soc)
    conv.budget = budget
    conv.check_supported()
    conv.convert()
    conv.net_output()
    return conv.graph, {"node_outputs": conv.node_outputs, "values": conv.values}
