"""The project's reference path for a framework om-run cannot hand to a framework runtime (TensorFlow is not a
dependency): the model converted by atc-py's frontend — no graph pass, no fusion, no precision mode, the
framework's dtypes — and run node by node with the operator library's kernels (the numbers constant folding
computes), every framework tensor kept."""
from __future__ import annotations

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ir.graph import Graph
from atc_py.ops.core.base import OpError
from atc_py.ops.core.execute import run_op
from atc_py.ops.core.infer import infer_graph
from atc_py.ops.core.registry import get_op


def _bad(reason: str) -> AtcError:
    return AtcError("E30002", reason=reason)


def run_graph(graph: Graph, feeds: list[np.ndarray], soc) -> dict[int, np.ndarray]:
    """Every Value's array (by id(Value)) of a graph without control flow."""
    graph.topo_sort()
    env: dict[int, np.ndarray] = {}
    for node in graph.nodes:
        if node.op_type == "NetOutput":
            continue
        if node.op_type == "Data":
            k = int(node.attrs.get("index", 0))
            if not 0 <= k < len(feeds):
                raise _bad(f"reference path: input {node.name} has index {k}; {len(feeds)} inputs were given")
            env[id(node.outputs[0])] = np.asarray(feeds[k]).astype(node.outputs[0].desc.dtype, copy=False)
            continue
        if node.op_type == "Const":
            env[id(node.outputs[0])] = np.asarray(node.outputs[0].data)
            continue
        spec = get_op(node.op_type)
        if node.subgraphs or spec is None:
            raise _bad(f"the reference path cannot run node {node.name} ({node.op_type}): "
                       f"{'control flow' if node.subgraphs else 'no kernel'}")
        try:
            run_node(node, spec, [env[id(v)] if v is not None else None for v in node.inputs], soc, env)
        except OpError as exc:
            raise _bad(f"the reference path failed at node {node.name} ({node.op_type}): {exc}") from None
    return env


def run_node(node, spec, ins: list, soc, env: dict[int, np.ndarray]) -> None:
    """One IR node's kernel on `ins` (tiling from its descs, as fold does); its outputs into `env` by id(Value)."""
    outs = run_op(spec, [v.desc if v is not None else None for v in node.inputs], [v.desc for v in node.outputs],
                  node.attrs, soc, ins)
    for v, arr in zip(node.outputs, outs):
        env[id(v)] = np.asarray(arr).astype(v.desc.dtype, copy=False).reshape(v.desc.shape) \
            if v.desc.known else np.asarray(arr)


def run_tf(graph_def, feeds: dict[str, np.ndarray], input_format: str, path: str, soc):
    """(tensor name 'node:k' -> array, [(node name, its output tensor names)] in conversion order)."""
    from atc_py.frontend.tensorflow.converter import convert_tf
    shapes = {name: tuple(a.shape) for name, a in feeds.items()}
    graph, info = convert_tf(graph_def, shapes, input_format, path, soc)
    infer_graph(graph)
    order = {n.name: int(n.attrs.get("index", 0)) for n in graph.data_nodes}
    by_index = [None] * len(order)
    for name, arr in feeds.items():
        node = graph.node(name.replace("/", "_"))
        if node is not None and node.name in order:
            by_index[order[node.name]] = arr
    if any(a is None for a in by_index):
        raise _bad("the reference path could not bind every input of the golden model")
    env = run_graph(graph, by_index, soc)
    values = {t: env[id(v)] for t, v in info["values"].items() if hasattr(v, "desc") and id(v) in env}
    return values, list(info["node_outputs"].items())
