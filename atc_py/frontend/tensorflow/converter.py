"""TensorFlow GraphDef -> IR Graph: Placeholder -> Data, Const -> Const, one adapter per op type, NoOp and
control inputs dropped (a frozen inference graph orders nothing that matters with them), outputs = the
nodes nobody consumes (unless --out_nodes), every unsupported op named in one E19010."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import AtcError
from ...ir.graph import Graph, TensorDesc, Value
from ...ops.base import OpError
from ...passes.infer import infer_node
from ...proto import tf_graph_pb2 as tf
from .adapters import TF_ADAPTERS, TfAdapterError
from .values import TfValueError, attr_value, dtype_name, shape_of, tensor_to_numpy

NO_OUTPUT_OPS = {"NoOp"}


def split_input(name: str) -> tuple[str, int, bool]:
    """'node' / 'node:k' / '^node' -> (node, k, is_control)."""
    if name.startswith("^"):
        return name[1:], 0, True
    node, _, k = name.partition(":")
    return node, int(k) if k else 0, False


class TfCtx:
    """What an adapter sees of one NodeDef and how it emits GE nodes."""

    def __init__(self, conv: "TfConverter", node: tf.NodeDef, name: str):
        self.conv, self.node, self.name = conv, node, name
        self.attrs = {k: attr_value(v) for k, v in node.attr.items()}
        self.data_inputs = [i for i in node.input if not i.startswith("^")]

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    @property
    def n_inputs(self) -> int:
        return len(self.data_inputs)

    def input(self, i: int) -> Value:
        return self.conv.tensor(self.data_inputs[i])

    def const(self, i: int) -> np.ndarray | None:
        v = self.input(i)
        return v.data if v.is_const else None

    def const_ints(self, i: int, what: str) -> list[int]:
        v = self.const(i)
        if v is None:
            raise TfAdapterError(f"{what} (input {i}) must be a constant")
        return [int(a) for a in np.asarray(v).reshape(-1)]

    def make_const(self, suffix: str, data) -> Value:
        return self.conv.graph.add_const(self.conv.graph.unique_name(f"{self.name}_{suffix}"), np.asarray(data))

    def emit(self, op_type: str, inputs: list[Value | None], attrs: dict | None = None, suffix: str = "",
             n_out: int = 1) -> list[Value]:
        name = self.name if not suffix else self.conv.graph.unique_name(f"{self.name}_{suffix}")
        node = self.conv.graph.add_node(name, op_type, inputs, [TensorDesc((), "float32")] * n_out, attrs or {})
        infer_node(node)
        return node.outputs


class TfConverter:
    def __init__(self, graph_def: tf.GraphDef, input_shapes: dict | None, input_format: str):
        self.gd = graph_def
        self.graph = Graph("graph")
        self.input_shapes = input_shapes or {}
        self.input_format = input_format or "NHWC"
        self.outputs: dict[str, list[Value]] = {}
        self.node_outputs: dict[str, list[str]] = {}
        self.values: dict[str, Value] = {}

    def tensor(self, ref: str) -> Value:
        node, k, _ = split_input(ref)
        outs = self.outputs.get(node)
        if outs is None:
            raise AtcError("E19999", message=f"input '{ref}' is used before it is produced or does not exist")
        if k >= len(outs):
            raise AtcError("E19999", message=f"input '{ref}': node {node} has {len(outs)} outputs")
        return outs[k]

    def check_supported(self) -> None:
        missing: dict[str, list[str]] = {}
        for n in self.gd.node:
            if n.op not in TF_ADAPTERS and n.op not in ("Placeholder", "Const", "NoOp"):
                missing.setdefault(n.op, []).append(n.name)
        if missing:
            items = [f"{op} (framework TensorFlow): {len(names)} node(s) {', '.join(names[:5])}"
                     + (f", ... (+{len(names) - 5} more)" if len(names) > 5 else "")
                     for op, names in sorted(missing.items())]
            raise AtcError("E19010", ops="; ".join(items))

    def ordered(self) -> list[tf.NodeDef]:
        """NodeDefs with every producer first (a GraphDef need not be sorted); a cycle is an error."""
        by_name = {n.name: n for n in self.gd.node}

        def deps(n):
            out = []
            for i in n.input:
                src = by_name.get(split_input(i)[0])
                if src is None:
                    raise AtcError("E19999", message=f"node {n.name}: input '{i}' does not exist")
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
                    raise AtcError("E19999", message=f"the graph has a cycle through {nxt.name}")
                elif nxt.name not in state:
                    state[nxt.name] = 1
                    stack.append((nxt, deps(nxt)))
        return order

    def convert(self) -> None:
        index = 0
        for n in self.ordered():
            name = self.graph.unique_name(n.name.replace("/", "_"))
            try:
                if n.op == "Placeholder":
                    self.placeholder(n, name, index)
                    index += 1
                    continue
                if n.op == "Const":
                    self.outputs[n.name] = [self.graph.add_const(name, tensor_to_numpy(n.attr["value"].tensor))]
                elif n.op in NO_OUTPUT_OPS:
                    self.outputs[n.name] = []
                else:
                    self.outputs[n.name] = list(TF_ADAPTERS[n.op](TfCtx(self, n, name)))
            except (TfAdapterError, TfValueError, OpError) as exc:
                raise AtcError("E19999", message=f"Node {n.name} ({n.op}): {exc}") from None
            self.node_outputs[n.name] = [f"{n.name}:{k}" for k in range(len(self.outputs[n.name]))]
            for k, v in enumerate(self.outputs[n.name]):
                self.values[f"{n.name}:{k}"] = v
        self.check_input_shapes(index)

    def placeholder(self, n: tf.NodeDef, name: str, index: int) -> None:
        dt = dtype_name(n.attr["dtype"].type)
        dims = shape_of(n.attr["shape"].shape) if "shape" in n.attr else None
        given = self.input_shapes.get(n.name, self.input_shapes.get(index))
        if given is not None:
            if dims is not None and len(given) != len(dims):
                raise AtcError("E10001", value=",".join(map(str, given)), parameter="--input_shape",
                               reason=f"input '{n.name}' has rank {len(dims)}, the shape given has rank {len(given)}")
            dims = list(given)
        if dims is None or any(d < 0 for d in dims):
            raise AtcError("E10001", value="NULL", parameter="--input_shape",
                           reason="The shapes of inputs contain -1 in the model. "
                                  "You may need to set input shape to specify its shape.")
        fmt = self.input_format if len(dims) == 4 else "ND"
        node = self.graph.add_node(name, "Data", out_descs=[TensorDesc(tuple(dims), dt, fmt, fmt)],
                                   attrs={"index": index}, out_names=[n.name])  # inputs are named after the op
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
        consumed = {split_input(i)[0] for n in self.gd.node for i in n.input}
        outs, names = [], []
        for n in self.gd.node:
            if n.name in consumed or n.op in NO_OUTPUT_OPS or n.op in ("Placeholder", "Const"):
                continue
            for k, v in enumerate(self.outputs[n.name]):
                outs.append(v)
                names.append(f"{n.name}:{k}")
        if not outs:
            raise AtcError("E19999", message="the graph has no output (every node is consumed)")
        self.graph.add_node("NetOutput", "NetOutput", outs, [], attrs={"output_names": names})


def convert_tf(graph_def: tf.GraphDef, input_shapes: dict | None = None, input_format: str = "NHWC"):
    conv = TfConverter(graph_def, input_shapes, input_format)
    conv.check_supported()
    conv.convert()
    conv.net_output()
    return conv.graph, {"node_outputs": conv.node_outputs, "values": conv.values}
