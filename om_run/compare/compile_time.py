"""The framework tensors atc-py computes while compiling (shape arithmetic, masks built from constants): no op of
the .om computes them, its constants or attributes hold the result. Their compile-time values are recomputed as
the compiler computes them — the model converted by atc-py's frontend at the .om's input shapes (its import-time
folds), then every node whose inputs are constants or shapes run with the operator library's kernels, as the
fold pass runs them — so a wrong fold (a bad Range, Where or ConstantOfShape on shapes) shows as a divergence
instead of hiding behind `not_comparable`."""
from __future__ import annotations

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.common.limits import DEFAULT_FOLD_SIZE_LIMIT
from atc_py.ops.core.base import OpError
from atc_py.ops.core.infer import infer_graph
from atc_py.ops.core.registry import get_op

from .ir_reference import run_node

SHAPE_OF = {"Shape"}


def _convert(framework: str, path: str, shapes: dict, input_format: str, soc):
    if framework == "onnx":
        from atc_py.frontend.onnx.converter import convert_onnx
        from atc_py.frontend.onnx.loader import load_onnx_lazy
        model, weights = load_onnx_lazy(path)
        return convert_onnx(model, shapes, weights, path, soc=soc)
    from atc_py.frontend.tensorflow.converter import convert_tf
    from atc_py.frontend.tensorflow.loader import load_tf
    return convert_tf(load_tf(path), shapes, input_format, path, soc)


def compile_time_values(framework: str, path: str, shapes: dict, input_format: str, soc,
                        wanted: set[str]) -> dict[str, np.ndarray]:
    """The compile-time value of each framework tensor in `wanted` the compiler can compute without inputs."""
    if not wanted:
        return {}
    try:
        graph, info = _convert(framework, path, shapes, input_format, soc)
        infer_graph(graph)
    except AtcError:
        return {}     # the frontend refuses what the .om was built from with other options: nothing to add
    graph.topo_sort()
    env: dict[int, np.ndarray] = {}
    for node in graph.nodes:
        if node.op_type == "Const":
            env[id(node.outputs[0])] = np.asarray(node.outputs[0].data)
            continue
        spec = get_op(node.op_type)
        if spec is None or node.subgraphs or node.op_type in ("Data", "NetOutput") or not node.inputs:
            continue
        if not all(d.desc.known and d.desc.nbytes <= DEFAULT_FOLD_SIZE_LIMIT for d in node.outputs):
            continue
        shape_of = node.op_type in SHAPE_OF and node.inputs[0] is not None and node.inputs[0].desc.known
        if not shape_of and not all(v is None or id(v) in env for v in node.inputs):
            continue
        try:
            ins = [np.broadcast_to(np.zeros((), np.uint8), node.inputs[0].desc.shape)] if shape_of else \
                [env[id(v)] if v is not None else None for v in node.inputs]   # Shape reads the shape only
            run_node(node, spec, ins, soc, env)
        except (OpError, ValueError, TypeError):
            continue
    values = info.get("values", {})
    return {t: env[id(values[t])] for t in wanted if t in values and id(values[t]) in env}
