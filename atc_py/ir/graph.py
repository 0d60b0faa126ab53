"""Graph, Node, Value, TensorDesc. Framework-neutral; op types are GE's."""
from __future__ import annotations

import heapq
import math
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from .dtypes import dtype_by_name
from .formats import DEVICE_FORMATS


@dataclass
class TensorDesc:
    """Shape (-1 = unknown dim), dtype (numpy name), format, and the origin format/shape from the framework."""

    shape: tuple[int, ...]
    dtype: str
    format: str = "ND"
    origin_format: str = "ND"
    origin_shape: tuple[int, ...] | None = None   # the framework's shape of a device-format tensor (ir/formats.py)

    @property
    def logical(self) -> "TensorDesc":
        """The tensor as the framework sees it: a device-format desc's origin shape and format (kernels compute,
        tile and cost in it); any other desc itself."""
        if self.format in DEVICE_FORMATS and self.origin_shape is not None:
            return TensorDesc(tuple(self.origin_shape), self.dtype, self.origin_format, self.origin_format)
        return self

    @property
    def known(self) -> bool:
        return not self.shape or min(self.shape) >= 0

    @property
    def numel(self) -> int:
        return int(math.prod(self.shape))   # math.prod: ~50x cheaper than np.prod on a short tuple

    @property
    def nbytes(self) -> int:
        return self.numel * dtype_by_name(self.dtype).itemsize


class Value:
    """One tensor edge: produced by `producer` at output `index`; `data` set for constants."""

    def __init__(self, name: str, desc: TensorDesc, producer: "Node | None" = None, index: int = 0):
        self.name = name
        self.desc = desc
        self.producer = producer
        self.index = index
        self._data: np.ndarray | None = None
        self._pending: Future | None = None
        self._load: Callable[[], np.ndarray] | None = None
        self.threaded = False   # value computed on a host thread or on demand (set when created so; stays set)
        self.consumers: list[tuple[Node, int]] = []

    @property
    def data(self) -> np.ndarray | None:
        """The constant's value; a pending one (being computed on a host thread) is waited for here; a lazy
        one is loaded (mapped from its file, or computed) anew at each read and never kept here."""
        load = self._load
        if load is not None:
            return load()
        pending = self._pending   # read once: the hashing thread may resolve it at the same time
        if pending is not None:
            self._data = pending.result()   # set before clearing _pending: once that is None, _data is set
            self._pending = None
        return self._data

    @data.setter
    def data(self, value: np.ndarray | None) -> None:
        self._data, self._pending, self._load = value, None, None

    @property
    def lazy(self) -> bool:
        """Whether the value is loaded on demand (a weight streamed from its file, or computed from one)."""
        return self._load is not None

    def set_pending(self, future: Future) -> None:
        """The value arrives later (future of an array of exactly this Value's desc)."""
        self._data, self._pending, self._load = None, future, None
        self.threaded = True

    def set_lazy(self, load: Callable[[], np.ndarray], computed: bool) -> None:
        """The value is `load()` (an array of exactly this Value's desc), called whenever it is read: the bytes
        stay in their file (or are recomputed) instead of in memory. `computed`: derived from other constants
        (placed in the weights without the identity check, as a threaded value is)."""
        self._data, self._pending, self._load = None, None, load
        self.threaded = computed

    def share_data(self, other: "Value") -> None:
        """The same constant as `other` (a copy of its Const node): its array (waited for), or its loader. The
        copy is an ordinary constant of its graph (its weights compare it with the others), either way."""
        if other._load is not None:
            self.set_lazy(other._load, computed=False)
        else:
            self.data = other.data

    @property
    def is_const(self) -> bool:
        return self.producer is not None and self.producer.op_type == "Const"

    def __repr__(self) -> str:
        return f"Value({self.name}, {self.desc.shape}, {self.desc.dtype})"


class Node:
    """A GE op instance. `attrs` are the op's attributes; `meta` holds compiler decisions (engine, ...)."""

    def __init__(self, name: str, op_type: str, attrs: dict[str, Any] | None = None):
        self.name = name
        self.op_type = op_type
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.inputs: list[Value | None] = []
        self.outputs: list[Value] = []
        self.control_inputs: list[Node] = []
        self.meta: dict[str, Any] = {}
        # named subgraphs this node owns (GE's If: then_branch/else_branch, While: cond/body, Case:
        # branches_<k>), inputs and outputs bound by position: a subgraph's Data with attr index k is the
        # node's k-th data input (If/Case: the k+1-th, after the predicate), its NetOutput the node's outputs.
        # Subgraphs are closed: what a body captures from outer scopes is an explicit input.
        self.subgraphs: dict[str, "Graph"] = {}

    def input_desc(self, i: int) -> TensorDesc | None:
        v = self.inputs[i] if i < len(self.inputs) else None
        return v.desc if v is not None else None

    def const_input(self, i: int) -> np.ndarray | None:
        v = self.inputs[i] if i < len(self.inputs) else None
        return v.data if v is not None and v.is_const else None

    def __repr__(self) -> str:
        return f"Node({self.name}: {self.op_type})"


ORIGIN_NAMES = "_datadump_original_op_names"   # GE's attribute: the source ops a node stands for (dumps, compare)
# a node whose output a transpose sank past holds the framework tensor transposed: framework = out.transpose(perm)
ORIGIN_PERM = "_datadump_origin_perm"
ASC_ORIGINS = "_asc_origins"   # a fused AscBackend's "<IR node>\t<output>\t<graph>/<AscIR node>" (om-run compare)


def absorb(survivor: Node, *gone: Node) -> None:
    """`survivor` now computes what `gone` did (a fusion, a fold into it): it carries their original names too."""
    names = list(survivor.attrs.get(ORIGIN_NAMES, [survivor.name]))
    for g in gone:
        for n in g.attrs.get(ORIGIN_NAMES, [g.name]):
            if n not in names:
                names.append(n)
    survivor.attrs[ORIGIN_NAMES] = names


class Names(set):
    """The node names of a namespace, and for each base name how far unique_name has found it taken: a name
    repeated thousands of times (an unrolled loop's nodes, a tree of subgraphs) gets its next free suffix at
    once, not after trying every suffix before it. The names are the same as a search from suffix 0 gives:
    freeing a name moves its base's mark back."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.taken_below: dict[str, int] = {}   # base -> k: base, base_1, ..., base_{k-1} are all taken

    def unique(self, base: str) -> str:
        k = self.taken_below.get(base, 0)
        name = f"{base}_{k}" if k else base
        while name in self:
            k += 1
            name = f"{base}_{k}"
        self.taken_below[base] = k
        return name

    def discard(self, name: str) -> None:
        super().discard(name)
        self.taken_below.pop(name, None)
        base, sep, suffix = name.rpartition("_")
        if sep and suffix.isascii() and suffix.isdigit() and self.taken_below.get(base, 0) > int(suffix):
            self.taken_below[base] = int(suffix)

    def remove(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self.discard(name)


class Graph:
    """Ordered nodes; Data nodes (attr `index`) are inputs, the single NetOutput node collects outputs."""

    def __init__(self, name: str, namespace: "Graph | None" = None):
        """`namespace`: share node names with that graph (a subgraph's node names are unique model-wide, as
        the .om's op table and om-run's checks need)."""
        self.name = name
        self.nodes: list[Node] = []
        self._names: Names = namespace._names if namespace is not None else Names()
        self.counters: dict[str, int] = {}   # what the frontend did (e.g. values_at_import), for the summary
        self.warnings: list[str] = []        # what the frontend dropped or assumed: logged as warnings by build

    # -- construction -------------------------------------------------------------------------
    def unique_name(self, base: str) -> str:
        return self._names.unique(base)

    def add_node(self, name: str, op_type: str, inputs: Iterable[Value | None] = (),
                 out_descs: Iterable[TensorDesc] = (), attrs: dict[str, Any] | None = None,
                 out_names: Iterable[str] | None = None) -> Node:
        if name in self._names:
            raise ValueError(f"duplicate node name {name}")
        node = Node(name, op_type, attrs)
        self._names.add(name)
        for v in inputs:
            self._attach(node, v)
        names = list(out_names) if out_names is not None else None
        for i, d in enumerate(out_descs):
            node.outputs.append(Value(names[i] if names else f"{name}:{i}", d, node, i))
        self.nodes.append(node)
        return node

    def _attach(self, node: Node, v: Value | None) -> None:
        node.inputs.append(v)
        if v is not None:
            v.consumers.append((node, len(node.inputs) - 1))

    def add_const(self, name: str, data: np.ndarray, fmt: str = "ND") -> Value:
        data = np.asarray(data, order="C")
        node = self.add_node(name, "Const", out_descs=[TensorDesc(tuple(data.shape), data.dtype.name, fmt, fmt)])
        node.outputs[0].data = data
        return node.outputs[0]

    def add_pending_const(self, name: str, desc: TensorDesc, future: Future) -> Value:
        """A Const whose value a host thread is still computing (an array of exactly `desc`)."""
        node = self.add_node(name, "Const", out_descs=[desc])
        node.outputs[0].set_pending(future)
        return node.outputs[0]

    def add_lazy_const(self, name: str, desc: TensorDesc, load: Callable[[], np.ndarray], computed: bool = False
                       ) -> Value:
        """A Const whose value is loaded on demand (Value.set_lazy)."""
        node = self.add_node(name, "Const", out_descs=[desc])
        node.outputs[0].set_lazy(load, computed)
        return node.outputs[0]

    def set_input(self, node: Node, i: int, v: Value | None) -> None:
        old = node.inputs[i]
        if old is not None:
            old.consumers.remove((node, i))
        node.inputs[i] = v
        if v is not None:
            v.consumers.append((node, i))

    def replace_all_uses(self, old: Value, new: Value) -> None:
        for node, i in list(old.consumers):
            self.set_input(node, i, new)

    def detach(self, node: Node) -> None:
        """Unhook a node from its inputs and free its name; remove_nodes then drops it from the list."""
        for i, v in enumerate(node.inputs):
            if v is not None:
                v.consumers.remove((node, i))
        node.inputs = [None] * len(node.inputs)
        self._names.discard(node.name)

    def remove_nodes(self, nodes: list[Node]) -> None:
        """Remove several nodes in one pass over the graph (remove_node walks the graph for each)."""
        dead = {id(n) for n in nodes}
        for node in nodes:
            self.detach(node)
        self.nodes[:] = [n for n in self.nodes if id(n) not in dead]
        for other in self.nodes:
            if other.control_inputs:
                other.control_inputs[:] = [c for c in other.control_inputs if id(c) not in dead]

    def remove_node(self, node: Node) -> None:
        for i, v in enumerate(node.inputs):
            if v is not None:
                v.consumers.remove((node, i))
        for other in self.nodes:
            if node in other.control_inputs:
                other.control_inputs.remove(node)
        self.nodes.remove(node)
        self._names.discard(node.name)

    # -- queries ------------------------------------------------------------------------------
    @property
    def data_nodes(self) -> list[Node]:
        return sorted((n for n in self.nodes if n.op_type == "Data"), key=lambda n: n.attrs["index"])

    @property
    def net_output(self) -> Node:
        for n in reversed(self.nodes):   # a graph has one, and it comes last once sorted: found at once
            if n.op_type == "NetOutput":
                return n
        raise ValueError("graph has no NetOutput")

    def node(self, name: str) -> Node | None:
        for n in self.nodes:
            if n.name == name:
                return n
        return None

    def topo_sort(self) -> None:
        """Stable topological order (original order among ready nodes)."""
        nodes = self.nodes
        index = {id(n): k for k, n in enumerate(nodes)}
        if all(index.get(id(v.producer), len(nodes)) < k for k, n in enumerate(nodes) for v in n.inputs
               if v is not None and v.producer is not None) and \
                all(index.get(id(c), len(nodes)) < k for k, n in enumerate(nodes) for c in n.control_inputs):
            return   # already in order: the sort below would give the same list (most passes keep it)
        indeg = [0] * len(nodes)
        users: list[list[int]] = [[] for _ in nodes]
        for k, n in enumerate(nodes):
            preds = {index[id(v.producer)] for v in n.inputs if v is not None and v.producer is not None}
            preds.update(index[id(c)] for c in n.control_inputs)
            indeg[k] = len(preds)
            for p in preds:
                users[p].append(k)
        ready = [k for k in range(len(nodes)) if indeg[k] == 0]   # ascending: already a heap
        out: list[Node] = []
        while ready:
            k = heapq.heappop(ready)
            out.append(nodes[k])
            for u in users[k]:
                indeg[u] -= 1
                if indeg[u] == 0:
                    heapq.heappush(ready, u)
        if len(out) != len(self.nodes):
            raise ValueError("graph has a cycle")
        self.nodes = out


def subgraphs_of(graph: Graph) -> list[Graph]:
    """Every subgraph nested in `graph` (depth first, in node order), not `graph` itself."""
    out: list[Graph] = []
    for node in graph.nodes:
        for sub in node.subgraphs.values():
            out.append(sub)
            out.extend(subgraphs_of(sub))
    return out


def all_graphs(graph: Graph) -> list[Graph]:
    """The graph and every subgraph nested in it: what graph-local passes run over."""
    return [graph] + subgraphs_of(graph)


def all_nodes(graph: Graph) -> list[Node]:
    return [n for g in all_graphs(graph) for n in g.nodes]
