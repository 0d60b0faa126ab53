"""Common subexpression elimination (GE's ConstantFuseSamePass + SameTransdataBreadthFusionPass family;
onnxruntime runs the same at level 1): equal constants become one, then nodes with the same op type, the
same input tensors and the same attributes become one. Folding then computes each distinct constant once.

A node stays when its output is a graph output (the model's outputs are tensors of their own), when it has
control edges (TensorFlow ordering), or when its op is not a pure function of its inputs.
"""
from __future__ import annotations

import math
from typing import Any, Hashable

import numpy as np

from ..ir.graph import ASC_ORIGINS, ORIGIN_NAMES, Graph, Node
from ..ops import get_op

KEEP_TYPES = {"Data", "NetOutput", "PartitionedCall"}
SAMPLE = 64   # bytes from each end of a constant used to group candidates before comparing them in full


def attr_key(value: Any) -> Hashable:
    """A hashable stand-in equal exactly when two attribute values are (floats by bits, arrays by bytes)."""
    if isinstance(value, np.ndarray):
        return ("nd", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, attr_key(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(attr_key(v) for v in value))
    if isinstance(value, float):
        return ("float", math.copysign(1.0, value), repr(value))
    if isinstance(value, np.generic):
        return ("np", value.dtype.str, value.tobytes())
    return (type(value).__name__, value if isinstance(value, Hashable) else repr(value))


def _pinned(graph: Graph) -> set[int]:
    """Nodes CSE must leave alone: control edges either way, an output the model returns, or an op that is not a
    pure function of its inputs (a collective: two alike are two exchanges with the other ranks)."""
    ids = {id(n) for n in graph.nodes if not _pure(n.op_type)}
    ids |= {id(c) for n in graph.nodes for c in n.control_inputs}
    ids |= {id(n) for n in graph.nodes if n.control_inputs}
    ids |= {id(v.producer) for v in graph.net_output.inputs if v is not None and v.producer is not None}
    return ids


def _pure(op_type: str) -> bool:
    spec = get_op(op_type)
    return spec is None or spec.pure


def _merge(graph: Graph, dup: Node, keep: Node, gone: list[Node]) -> None:
    for old, new in zip(dup.outputs, keep.outputs):
        graph.replace_all_uses(old, new)
    graph.detach(dup)
    gone.append(dup)


def merge_same_constants(graph: Graph, pinned: set[int], gone: list[Node]) -> None:
    groups: dict[tuple, list[Node]] = {}
    for node in graph.nodes:
        if node.op_type != "Const" or id(node) in pinned:
            continue
        v = node.outputs[0]
        data = np.ascontiguousarray(v.data)
        if data.dtype == object:
            continue
        raw = data.reshape(-1).view(np.uint8)
        d = v.desc
        key = (d.dtype, d.shape, d.format, d.origin_format, raw[:SAMPLE].tobytes(), raw[-SAMPLE:].tobytes())
        for keep in groups.setdefault(key, []):
            if np.array_equal(np.ascontiguousarray(keep.outputs[0].data).reshape(-1).view(np.uint8), raw):
                _merge(graph, node, keep, gone)
                break
        else:
            groups[key].append(node)


def merge_same_nodes(graph: Graph, pinned: set[int], gone: list[Node]) -> None:
    seen: dict[tuple, Node] = {}
    for node in graph.nodes:
        if node.op_type in KEEP_TYPES or node.op_type == "Const" or id(node) in pinned or node.meta:
            continue
        key = (node.op_type, tuple(id(v) if v is not None else None for v in node.inputs), len(node.outputs),
               attr_key({k: v for k, v in node.attrs.items() if k not in (ORIGIN_NAMES, ASC_ORIGINS)}))
        keep = seen.get(key)
        if keep is None:
            seen[key] = node
        else:
            _merge(graph, node, keep, gone)


def eliminate_common_subexpressions(graph: Graph, constants: bool = True) -> int:
    """Merge equal constants (unless constants=False: a later round, when the constants are big folded weights
    already distinct), then equal nodes in topological order (so merges cascade); returns the count."""
    graph.topo_sort()
    pinned, gone = _pinned(graph), []
    if constants:
        merge_same_constants(graph, pinned, gone)
    merge_same_nodes(graph, pinned, gone)
    graph.remove_nodes(gone)
    return len(gone)
