"""Compile-time tiling: run every task op's tiling function once, with the SoC spec."""
from __future__ import annotations

from ..errors import AtcError
from ..ir.graph import Graph
from ..ops import get_op
from ..ops.base import OpError, TilingResult
from ..ops.execute import tiling_context
from ..platform.soc import SocSpec


def tile_graph(graph: Graph, soc: SocSpec) -> dict[str, TilingResult]:
    out: dict[str, TilingResult] = {}
    for node in graph.nodes:
        spec = get_op(node.op_type)
        if spec.no_task:
            continue
        ctx = tiling_context(spec, [v.desc if v is not None else None for v in node.inputs],
                             [v.desc for v in node.outputs], node.attrs, soc)
        try:
            res = spec.tiling(ctx)
        except OpError as exc:
            raise AtcError("E19999", message=f"Tiling failed for node {node.name} ({node.op_type}): {exc}") from None
        if res.block_dim < 1:
            raise AtcError("E19999", message=f"Tiling of node {node.name} returned block_dim {res.block_dim}")
        out[node.name] = res
    return out
