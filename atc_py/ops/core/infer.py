"""Shape and dtype inference through each op's prototype.

Part of the op library, not a pass: control ops infer their subgraphs with it (ops/control.py), the frontends
infer each node they build, and the passes re-infer what they rewrite.

A node whose prototype rejects its inputs or attributes is an invalid model: E14001 naming the node, what it
was given and why (GE's "Argument %s for Op %s with optype %s is invalid"). So is an output no device could
hold (limits.MAX_TENSOR_BYTES) or of more than limits.MAX_RANK dimensions.
"""
from __future__ import annotations

import numpy as np

from ...common.errors import AtcError
from ...common.limits import MAX_RANK, MAX_TENSOR_BYTES
from ...ir.dtypes import dtype_by_name
from ...ir.graph import Graph, Node, TensorDesc
from .base import OpError
from .registry import get_op

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


PROBES = (97, 89)   # two unlike values substituted for the unknown dims: what changes with them is unknown
SMALL_PROBE = 3     # ...and a small one when the op takes it: a clamp (Slice to 10 of N, min(N, 10)) is 10 for both
#                     large values but not for every run (a detector that keeps 0 of its 10 boxes)


def _probe_infer(spec, node: Node) -> list[TensorDesc] | None:
    """Output descs of a node whose inputs have unknown (-1) dims but known ranks: inferred with the unknown dims
    replaced by two different values; an output dim that is the same both times is known, one that differs is -1
    (a symbolic shape inference in miniature: batch -1 through a strided conv keeps C, H, W known). A third, small
    value is tried too, and where the op takes it a dim it changes is unknown as well."""
    inputs = [v for v in node.inputs if v is not None]
    saved = [v.desc for v in inputs]

    def with_dims(p):
        for v, d in zip(inputs, saved):
            v.desc = TensorDesc(tuple(p if x == -1 else x for x in d.shape), d.dtype, d.format, d.origin_format)
        return spec.infer(node)
    results = []
    try:
        for p in PROBES:
            results.append(with_dims(p))
        try:
            results.append(with_dims(SMALL_PROBE))
        except (OpError, ValueError, ZeroDivisionError, AtcError):
            pass
    except (OpError, ValueError, ZeroDivisionError, AtcError):   # (AtcError: a control op's body rejects the
        return None                                                # stand-in dims, e.g. NMS boxes [1, 97, 97])
    finally:
        for v, d in zip(inputs, saved):
            v.desc = d
    a = results[0]
    if any(len(r) != len(a) or any(len(x.shape) != len(y.shape) for x, y in zip(a, r)) for r in results[1:2]):
        return None
    results = [r for r in results if len(r) == len(a) and all(len(x.shape) == len(y.shape) for x, y in zip(a, r))]
    return [TensorDesc(tuple(p if all(r[k].shape[j] == p for r in results) else -1 for j, p in enumerate(x.shape)),
                       x.dtype, x.format, x.origin_format) for k, x in enumerate(a)]


def _probe_dtypes(spec, node: Node) -> list[str] | None:
    """The output dtypes of a node whose shapes cannot be inferred yet: its prototype run on ones-shaped stand-ins
    (every unknown dim 1; an unknown-rank input at rank 4, 3, 2 then 1 until the prototype takes it), which
    broadcast with anything. None when the prototype rejects them all."""
    inputs = [v for v in node.inputs if v is not None]
    saved = [v.desc for v in inputs]
    try:
        for rank in (4, 3, 2, 1):
            for v, d in zip(inputs, saved):
                shape = (1,) * rank if d.shape == UNKNOWN_RANK else tuple(1 if x < 0 else x for x in d.shape)
                v.desc = TensorDesc(shape, d.dtype, d.format, d.origin_format)
            try:
                return [d.dtype for d in spec.infer(node)]
            except (OpError, ValueError, ZeroDivisionError, IndexError, KeyError, TypeError, AtcError):
                if not any(d.shape == UNKNOWN_RANK for d in saved):
                    return None
        return None
    finally:
        for v, d in zip(inputs, saved):
            v.desc = d


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
    ranked = all(v is None or v.desc.shape != UNKNOWN_RANK for v in node.inputs)
    probed = _probe_infer(spec, node) if unknown_in and ranked and node.op_type != "Data" else None
    if probed is not None and getattr(node, "subgraphs", None):
        # the probes inferred the bodies with stand-in dims: infer them again with the real ones (their values'
        # descs are what the bodies compile with), keeping the probed outputs
        try:
            spec.infer(node)
        except (OpError, ValueError, ZeroDivisionError, AtcError):
            pass
    try:
        if not ranked and not spec.unknown_rank_aware:   # its prototype would read (-2,) as a rank-1 shape
            raise OpError("an input of unknown rank")
        descs = probed if probed is not None else spec.infer(node)
    except (OpError, ValueError) as exc:
        if not unknown_in:
            raise invalid(node, str(exc)) from None
        # an op whose prototype cannot reason about unknown dims: unknown rank (GE's -2); the dtypes its prototype
        # gives stand-in shapes (Where of a bool condition is its values' dtype, a comparison bool), else passed through
        first = next(v.desc for v in node.inputs if v is not None)
        # (not for ops that reason about unknown ranks themselves: a control op would infer its bodies on stand-ins)
        dtypes = (None if spec.unknown_rank_aware else _probe_dtypes(spec, node)) or []
        descs = [TensorDesc(UNKNOWN_RANK, dtypes[k] if k < len(dtypes) else first.dtype) for k in range(len(node.outputs))]
    # a prototype that did arithmetic on an unknown rank's -2 (ConcatD summing two of them) knows no rank either
    descs = [TensorDesc(UNKNOWN_RANK, d.dtype, d.format, d.origin_format)
             if d.shape != UNKNOWN_RANK and any(x < -1 for x in d.shape) else d for d in descs]
    descs = precision_outputs(node.attrs, descs)
    check_outputs(node, descs)
    for v, d in zip(node.outputs, descs):
        v.desc = d


def precision_outputs(attrs: dict, descs: list[TensorDesc]) -> list[TensorDesc]:
    """The outputs as the precision pass left the op: cube_fp16in_fp32out takes fp16 and gives fp32 (an om-run
    check re-inferring an op from the .om applies it too)."""
    if attrs.get("_precision_mode") == "cube_fp16in_fp32out":
        return [TensorDesc(d.shape, "float32", d.format, d.origin_format) for d in descs]
    return descs


def infer_graph(graph: Graph) -> None:
    for node in graph.nodes:
        infer_node(node)
