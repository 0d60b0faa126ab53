"""Shape and dtype inference through each op's prototype."""
from __future__ import annotations

from ..errors import AtcError
from ..ir.graph import Graph, Node
from ..ops import get_op
from ..ops.base import OpError


def infer_node(node: Node) -> None:
    spec = get_op(node.op_type)
    if spec is None:
        raise AtcError("E19999", message=f"Op type {node.op_type} of node {node.name} is not registered")
    for i, v in enumerate(node.inputs):
        if v is None and i < len(spec.inputs) and not spec.inputs[i].endswith(("?", "*")):
            raise AtcError("E19999", message=f"Node {node.name} ({node.op_type}): required input "
                                             f"'{spec.inputs[i]}' is missing")
    try:
        descs = spec.infer(node)
    except OpError as exc:
        raise AtcError("E19999", message=f"Infer shape failed for node {node.name} ({node.op_type}): {exc}") from None
    for v, d in zip(node.outputs, descs):
        v.desc = d
    for v in node.outputs:
        if not v.desc.known:
            raise AtcError("E19999", message=f"Node {node.name} ({node.op_type}) has an unknown output shape "
                                             f"{list(v.desc.shape)}; dynamic-shape models are not supported yet")


def infer_graph(graph: Graph) -> None:
    for node in graph.nodes:
        infer_node(node)
