"""Shape and dtype inference through each op's prototype.

A node whose prototype rejects its inputs or attributes is an invalid model: E14001 naming the node, what it
was given and why (GE's "Argument %s for Op %s with optype %s is invalid"). So is an output no device could
hold (limits.MAX_TENSOR_BYTES) or of more than limits.MAX_RANK dimensions.
"""
from __future__ import annotations

import numpy as np

from ..errors import AtcError
from ..ir.dtypes import dtype_by_name
from ..ir.graph import Graph, Node, TensorDesc
from ..limits import MAX_RANK, MAX_TENSOR_BYTES
from ..ops import get_op
from ..ops.base import OpError


UNKNOWN_RANK = (-2,)


def describe_args(node: Node, limit: int = 240) -> str:
    """What the node was given, compactly: input dtypes and shapes, then its (public) attributes."""
    ins = ", ".join(f"{v.desc.dtype}{list(v.desc.shape)}" if v is not None else "-" for v in node.inputs)
    attrs = ", ".join(f"{k}={v!r}" for k, v in sorted(node.attrs.items())
                      if not k.startswith("_") and not hasattr(v, "shape"))
    text = f"inputs ({ins})" + (f" attrs ({attrs})" if attrs else "")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def invalid(node: Node, reason: str) -> AtcError:
    """E14001 for a node: the model gives it arguments its op does not accept."""
    return AtcError("E14001", value=describe_args(node), opname=node.name, optype=node.op_type, reason=reason.rstrip("."))


def _itemsize(dtype: str) -> int:
    try:
        return dtype_by_name(dtype).itemsize
    except KeyError:   # a dtype the IR carries through without kernels (e.g. bfloat16 constants)
        return np.dtype(dtype).itemsize


def check_outputs(node: Node, descs: list[TensorDesc]) -> None:
    for k, d in enumerate(descs):
        if len(d.shape) > MAX_RANK:
            raise invalid(node, f"output {k} would have rank {len(d.shape)} (limit {MAX_RANK})")
        if d.known and d.shape and d.numel * _itemsize(d.dtype) > MAX_TENSOR_BYTES:
            raise invalid(node, f"output {k} of shape {list(d.shape)} ({d.dtype}) would need "
                                f"{d.numel * _itemsize(d.dtype)} bytes, more than any Ascend device has "
                                f"({MAX_TENSOR_BYTES})")


def infer_node(node: Node) -> None:
    """Infer a node's output descs. Outputs may be unknown (-1 dims) when they depend on the value of a
    non-constant input: the partitioner then puts the node in a dynamic subgraph (host executor)."""
    spec = get_op(node.op_type)
    if spec is None:
        raise AtcError("E19999", message=f"Op type {node.op_type} of node {node.name} is not registered")
    for i, v in enumerate(node.inputs):
        if v is None and i < len(spec.inputs) and not spec.inputs[i].endswith(("?", "*")):
            raise invalid(node, f"its required input {i} ('{spec.inputs[i]}') is missing")
    unknown_in = any(v is not None and not v.desc.known for v in node.inputs)
    try:
        descs = spec.infer(node)
    except (OpError, ValueError) as exc:
        if not unknown_in:
            raise invalid(node, str(exc)) from None
        # an op whose prototype cannot reason about unknown dims: unknown rank (GE's -2), dtype passed through
        first = next(v.desc for v in node.inputs if v is not None)
        descs = [TensorDesc(UNKNOWN_RANK, first.dtype) for _ in node.outputs]
    if node.attrs.get("_precision_mode") == "cube_fp16in_fp32out":
        descs = [TensorDesc(d.shape, "float32", d.format, d.origin_format) for d in descs]
    check_outputs(node, descs)
    for v, d in zip(node.outputs, descs):
        v.desc = d


def infer_graph(graph: Graph) -> None:
    for node in graph.nodes:
        infer_node(node)
