"""Shape and dtype inference through each op's prototype."""
from __future__ import annotations

from ..errors import AtcError
from ..ir.graph import Graph, Node, TensorDesc
from ..ops import get_op
from ..ops.base import OpError


UNKNOWN_RANK = (-2,)


def infer_node(node: Node) -> None:
    """Infer a node's output descs. Outputs may be unknown (-1 dims) when they depend on the value of a
    non-constant input: the partitioner then puts the node in a dynamic subgraph (host executor)."""
    spec = get_op(node.op_type)
    if spec is None:
        raise AtcError("E19999", message=f"Op type {node.op_type} of node {node.name} is not registered")
    for i, v in enumerate(node.inputs):
        if v is None and i < len(spec.inputs) and not spec.inputs[i].endswith(("?", "*")):
            raise AtcError("E19999", message=f"Node {node.name} ({node.op_type}): required input "
                                             f"'{spec.inputs[i]}' is missing")
    unknown_in = any(v is not None and not v.desc.known for v in node.inputs)
    try:
        descs = spec.infer(node)
    except (OpError, ValueError) as exc:
        if not unknown_in:
            raise AtcError("E19999", message=f"Infer shape failed for node {node.name} ({node.op_type}): {exc}") \
                from None
        # an op whose prototype cannot reason about unknown dims: unknown rank (GE's -2), dtype passed through
        first = next(v.desc for v in node.inputs if v is not None)
        descs = [TensorDesc(UNKNOWN_RANK, first.dtype) for _ in node.outputs]
    if node.attrs.get("_precision_mode") == "cube_fp16in_fp32out":
        descs = [TensorDesc(d.shape, "float32", d.format, d.origin_format) for d in descs]
    for v, d in zip(node.outputs, descs):
        v.desc = d


def infer_graph(graph: Graph) -> None:
    for node in graph.nodes:
        infer_node(node)
