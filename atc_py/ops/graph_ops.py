"""Graph plumbing: Data (inputs), Const (weights), NetOutput. No kernels, no tasks."""
from __future__ import annotations

from ..ir.graph import Node, TensorDesc
from .core.base import OpSpec, TilingContext, TilingResult
from .core.registry import register
from .elementwise import MOVE_TYPES


class PlumbingOp(OpSpec):
    no_task = True
    dtypes = MOVE_TYPES

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return TilingResult(0, 0, b"")


@register
class Data(PlumbingOp):
    op_type = "Data"
    inputs = ()
    attrs = {"index": 0}

    def infer(self, node: Node) -> list[TensorDesc]:
        return [node.outputs[0].desc]


@register
class Const(PlumbingOp):
    op_type = "Const"
    inputs = ()

    def infer(self, node: Node) -> list[TensorDesc]:
        return [node.outputs[0].desc]


@register
class NetOutput(PlumbingOp):
    op_type = "NetOutput"
    inputs = ("x*",)
    outputs = ()

    def infer(self, node: Node) -> list[TensorDesc]:
        return []


@register
class PartitionedCall(PlumbingOp):
    """Calls a partitioned subgraph (attr `f`); its outputs keep the descs the partitioner gave them."""
    op_type = "PartitionedCall"
    inputs = ("args*",)
    outputs = ("output*",)

    def infer(self, node: Node) -> list[TensorDesc]:
        return [v.desc for v in node.outputs]
