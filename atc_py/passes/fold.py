"""Constant folding: a node whose inputs are all constants is run now (tiling + kernel) and becomes a Const."""
from __future__ import annotations

import numpy as np

from ..errors import AtcError
from ..ir.graph import Graph
from ..ops import get_op
from ..ops.base import OpError
from ..ops.execute import run_op
from ..platform.soc import SocSpec
from .infer import infer_node

NEVER_FOLD = {"Data", "Const", "NetOutput"}


SHAPE_OF = {"Shape"}   # depends only on the input's shape, not its value


def fold_constants(graph: Graph, soc: SocSpec) -> int:
    """Fold in topological order, re-inferring each node first: once a Shape of a static tensor folds, the
    ConstantOfShape/Expand/Reshape chain behind it gets static shapes and folds or becomes static too."""
    folded = 0
    dead: list = []    # removed in one pass at the end
    for node in list(graph.nodes):
        if node.op_type in NEVER_FOLD or not node.inputs:
            continue
        infer_node(node)
        if node.op_type in SHAPE_OF and node.inputs[0] is not None and node.inputs[0].desc.known:
            x = node.inputs[0]
            data = np.zeros(x.desc.shape, np.uint8)  # a stand-in with the right shape: only its shape is read
            outs = run_op(get_op(node.op_type), [x.desc], [v.desc for v in node.outputs], node.attrs, soc, [data])
            new = graph.add_const(graph.unique_name(f"{node.name}_folded"), outs[0].astype(node.outputs[0].desc.dtype))
            graph.replace_all_uses(node.outputs[0], new)
            graph.detach(node)
            dead.append(node)
            folded += 1
            continue
        if not all(v is None or v.is_const for v in node.inputs):
            continue
        spec = get_op(node.op_type)
        ins = [v.data if v is not None else None for v in node.inputs]
        try:
            outs = run_op(spec, [v.desc if v is not None else None for v in node.inputs],
                          [v.desc for v in node.outputs], node.attrs, soc, ins)
        except OpError as exc:
            raise AtcError("E19999", message=f"Constant folding failed for node {node.name} ({node.op_type}): {exc}") \
                from None
        for k, (v, data) in enumerate(zip(node.outputs, outs)):
            if not v.consumers:
                continue
            new = graph.add_const(graph.unique_name(f"{node.name}_folded" + (f"_{k}" if k else "")),
                                  data.astype(v.desc.dtype, copy=False))
            graph.replace_all_uses(v, new)
        graph.detach(node)
        dead.append(node)
        folded += 1
    graph.remove_nodes(dead)
    graph.topo_sort()
    return folded
