"""MapIndex: which gear the runtime's shape data names (GE's multi-batch inserts it before the Case that picks
the gear's subgraph, passes/multi_batch.py). x: the gear's dims (int32[k]); data_seq: every gear's dims one
after another (int32[n*k]); y: the index of the gear equal to x. An AICPU kernel, as in CANN."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import AICPU, KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct
from .core.registry import register

MAP_INDEX_TILING = TilingStruct(("width", "Q"), ("gears", "Q"))


@register
class MapIndex(OpSpec):
    op_type = "MapIndex"
    inputs = ("x", "data_seq")
    engine = AICPU
    dtypes = ("int32",)
    tiling_struct = MAP_INDEX_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        x, seq = node.input_desc(0), node.input_desc(1)
        if len(x.shape) != 1 or len(seq.shape) != 1:
            raise OpError(f"x {list(x.shape)} and data_seq {list(seq.shape)} must be 1-D")
        if x.known and seq.known and (x.shape[0] == 0 or seq.shape[0] % x.shape[0]):
            raise OpError(f"data_seq has {seq.shape[0]} values, not a whole number of gears of {x.shape[0]}")
        return [TensorDesc((), "int32", "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        width = ctx.inputs[0].shape[0]
        return TilingResult(1, 0, MAP_INDEX_TILING.pack(width=width, gears=ctx.inputs[1].shape[0] // max(width, 1)))

    def compute(self, args: KernelArgs, inputs):
        x = np.asarray(inputs[0]).reshape(-1)
        table = np.asarray(inputs[1]).reshape(-1, max(x.size, 1))
        hits = np.flatnonzero((table == x).all(axis=1))
        if hits.size == 0:
            raise OpError(f"shape data {x.tolist()} is none of the model's gears {table.tolist()}")
        return [np.array(hits[0], dtype=np.int32)]
