"""Value-aware import: the values of small tensors are worked out while the graph is built, as GE's InferShape
with constant values and onnxruntime's symbolic shape inference do, so that an adapter asks "is this input's
value known?" and gets it — however the exporter computed it (Shape -> Gather -> Concat -> Reshape chains,
Range, ConstantOfShape, Cast, arithmetic on shapes, Where, Equal, ...).

A node just emitted is evaluated now (tiling + kernel, as constant folding does) and replaced by Consts when
every input is a constant and its outputs are small (VALUE_BYTES); `Shape`/`Size` of a tensor whose shape is
known are constants whatever its values. Larger constant computations (weight transforms) are left to the
fold pass, with its threads and its --fold_size_limit; a value that depends on input data stays a node, and
an op whose output shape needs it runs in the dynamic-shape partition.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Value
from ..ops import get_op
from ..ops.core.execute import run_op
from ..platform.soc import SocSpec

VALUE_BYTES = 64 << 10           # outputs up to this size are computed at import (shape tensors, small tables)
NEVER = {"Data", "Const", "NetOutput", "PartitionedCall", "If", "Case", "While", "MemcpyAsync", "LabelSet",
         "LabelSwitchByIndex", "LabelGotoEx", "StreamActive", "StreamSwitch"}   # no kernel to fold with
SHAPE_ONLY = {"Shape"}           # needs only the input's shape


def _small(node) -> bool:
    total = 0
    for v in node.outputs:
        if not v.desc.known or v.desc.dtype == "string":
            return False
        total += v.desc.numel * np.dtype(v.desc.dtype).itemsize
    return total <= VALUE_BYTES


def fold_at_import(graph: Graph, node, soc: SocSpec) -> list[Value] | None:
    """Replace the graph's last node (just emitted and inferred) by Consts holding its outputs' values, when
    they can be known now; None (the node stays) otherwise."""
    if node.op_type in NEVER or not node.outputs or graph.nodes[-1] is not node:
        return None
    spec = get_op(node.op_type)
    if not spec.pure:     # a collective: its values are the group's, known only when the ranks run it
        return None
    shape_only = node.op_type in SHAPE_ONLY and node.inputs and node.inputs[0] is not None \
        and node.inputs[0].desc.known
    if not shape_only and not all(v is None or v.is_const for v in node.inputs):
        return None
    if not node.inputs or not _small(node):
        return None
    if shape_only:
        x = node.inputs[0]
        ins = [np.broadcast_to(np.zeros((), np.uint8), x.desc.shape)]
        in_descs = [x.desc]
    else:
        ins = [v.data if v is not None else None for v in node.inputs]
        in_descs = [v.desc if v is not None else None for v in node.inputs]
    outs = run_op(spec, in_descs, [v.desc for v in node.outputs], node.attrs, soc, ins)
    graph.nodes.pop()
    graph.detach(node)
    graph.counters["values_at_import"] = graph.counters.get("values_at_import", 0) + 1
    consts = []
    for k, (v, data) in enumerate(zip(node.outputs, outs)):
        data = np.asarray(data).astype(v.desc.dtype, copy=False)
        c = graph.add_const(graph.unique_name(node.name if k == 0 else f"{node.name}_{k}"), data)
        consts.append(c)
    return consts
