"""Converting an ONNX subgraph (If branch, Loop / Scan / SequenceMap body) into an IR subgraph.

The body's own inputs are bound to Values the caller made in the subgraph (its Data nodes, or values it computed
out of those: a Scan input's row); a name the body reads from an enclosing scope is *captured*: an outer
constant is copied in, anything else becomes a further Data node of the subgraph (index `capture_base`,
`capture_base + 1`, ...) and the control node passes the outer value as that input. IR subgraphs are thus
closed: every pass can work on one graph at a time.
"""
from __future__ import annotations

from ...ir.graph import Graph, TensorDesc, Value
from . import onnx_lite as onnx
from .checks import check_body
from .converter import OnnxConverter, _safe
from .structured import is_structured, leaves, rebuild


class BodyConverter(OnnxConverter):
    def __init__(self, parent: OnnxConverter, gproto: onnx.GraphProto, graph: Graph, bindings: dict[str, Value],
                 capture_base: int):
        # share the model-level state of the enclosing converter; own values, graph and initializers
        self.__dict__.update({k: v for k, v in parent.__dict__.items()
                              if k in ("model", "soc", "opsets", "weights", "input_shapes", "fold_limit", "budget")})
        self.parent = parent
        self.gproto = gproto
        self.graph = graph
        self.values: dict[str, Value] = dict(bindings)
        self.initializers = {t.name: t for t in gproto.initializer}
        self.node_outputs = parent.node_outputs
        self.capture_base = capture_base
        self.captured: list[Value] = []          # outer Values, in the order of their Data indices
        self._capture_data: dict[int, Value] = {}

    def value(self, name: str):
        if name in self.values or name in self.initializers:
            return super().value(name)
        outer = self.parent.value(name)          # the enclosing scope (which may capture it in turn)
        if getattr(self, "inline_mode", False):
            self.values[name] = outer
            return outer
        # a sequence or optional is captured tensor by tensor (its structure is known when compiling)
        v = rebuild(outer, iter([self._capture(t, name) for t in leaves(outer)])) if is_structured(outer) \
            else self._capture(outer, name)
        self.values[name] = v
        return v

    def _capture(self, outer: Value, name: str) -> Value:
        if outer.is_const and outer.data is not None:
            return self.graph.add_const(self.graph.unique_name(_safe(name)), outer.data)
        v = self._capture_data.get(id(outer))
        if v is None:
            d = outer.desc
            node = self.graph.add_node(self.graph.unique_name(f"{self.graph.name}_{_safe(name)}"), "Data",
                                       out_descs=[TensorDesc(d.shape, d.dtype, d.format, d.origin_format)],
                                       attrs={"index": self.capture_base + len(self.captured)})
            v = node.outputs[0]
            self._capture_data[id(outer)] = v
            self.captured.append(outer)
        return v

    @classmethod
    def inline(cls, parent: OnnxConverter, gproto: onnx.GraphProto, bindings: dict | None = None) -> list:
        """Convert a body straight into the parent's graph (a branch chosen at import, a SequenceMap element,
        an unrolled loop iteration): outer names are the parent's values themselves; `bindings` gives the
        body's inputs."""
        conv = cls(parent, gproto, parent.graph, dict(bindings or {}), 0)
        conv.inline_mode = True
        return conv.run()

    def run(self) -> list[Value]:
        """Convert the body's nodes; returns the Values of its outputs (in order)."""
        order = check_body(self.gproto, self.model.graph.name, _OuterNames(self.values, self.parent),
                           {DOMAIN: v for DOMAIN, v in self.opsets.items()})
        self.nodes(order)
        return [self.value(o.name) for o in self.gproto.output]


class _OuterNames:
    """Every name a body may read from the scopes around it (its bindings, then each enclosing converter's
    values and initializers, then the model's inputs), asked one name at a time: an unrolled loop converts its
    body once per iteration into a scope that grows each time, so copying the scopes' names would make
    importing the model quadratic."""

    def __init__(self, bindings: dict, parent: OnnxConverter) -> None:
        self.bindings, self.parent = bindings, parent

    def __contains__(self, name: object) -> bool:
        if name in self.bindings:
            return True
        conv = self.parent
        while isinstance(conv, BodyConverter):
            if name in conv.values or name in conv.initializers:
                return True
            conv = conv.parent
        inputs = conv.__dict__.get("_input_names")
        if inputs is None:
            inputs = conv._input_names = frozenset(i.name for i in conv.gproto.input)
        return name in conv.values or name in conv.initializers or name in inputs


def new_subgraph(parent: OnnxConverter, name: str) -> Graph:
    """An empty IR subgraph whose node names share the model's namespace (one more of the model's budget)."""
    parent.budget.add_subgraph()
    root = parent.graph
    return Graph(root.unique_name(_safe(name)), namespace=root)


def add_data(g: Graph, index: int, desc: TensorDesc, name: str) -> Value:
    node = g.add_node(g.unique_name(f"{g.name}_{_safe(name)}"), "Data",
                      out_descs=[TensorDesc(desc.shape, desc.dtype, desc.format, desc.origin_format)],
                      attrs={"index": index})
    return node.outputs[0]


def finish(g: Graph, outputs: list[Value], names: list[str]) -> None:
    g.add_node(g.unique_name(f"{g.name}_NetOutput"), "NetOutput", outputs, [], attrs={"output_names": names})
