"""Example custom operator package for atc-py (load with --op_plugin plugins/example_custom_ops.py or
ASCEND_CUSTOM_OPP_PATH=plugins).

`custom::RowScale(x[R,C], active_rows int64[1]) -> y`: rows [0, active_rows) are x * scale, the rest zero.
Its tiling reads input 1 (the number of active rows) and registers both placements {HOST, AICPU}, so with
--tiling_schedule_optimize=1 it sinks its tiling to the AICPU as a *custom* op: CUST_AI_CPU tiling task,
an extra 20480-byte workspace and a CUST_AICPU_KERNELS partition.
"""
from __future__ import annotations

import numpy as np

from atc_py.frontend.onnx.adapter import NodeCtx, OnnxOp, onnx_op
from atc_py.ir.graph import Node, TensorDesc
from atc_py.ops import register
from atc_py.ops.core.base import (
    HOST,
    ON_AICPU,
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    cores_for,
    split_rows,
)

ROW_SCALE_TILING = TilingStruct(("rows", "Q"), ("cols", "Q"), ("active", "Q"), ("rows_per_block", "Q"),
                                ("scale", "f"))


@register
class RowScale(OpSpec):
    op_type = "RowScale"
    inputs = ("x", "active_rows")
    attrs = {"scale": 1.0}
    dtypes = ("float32", "float16", "int64")
    tiling_depend = frozenset({1})
    tiling_placements = frozenset({HOST, ON_AICPU})
    tiling_keys = (0, 1)  # 0: all rows active, 1: a tail of rows is zeroed
    tiling_struct = ROW_SCALE_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if len(x.shape) != 2:
            raise OpError(f"RowScale takes a 2-D x, got {list(x.shape)}")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def placeholder_values(self, ctx: TilingContext) -> dict[int, np.ndarray]:
        return {1: np.array([ctx.inputs[0].shape[0]], np.int64)}

    def tiling(self, ctx: TilingContext) -> TilingResult:
        rows, cols = ctx.inputs[0].shape
        active = ctx.depend_values.get(1)
        if active is None:
            raise OpError("tiling needs the value of active_rows")
        active = int(np.asarray(active).reshape(-1)[0])
        if not 0 <= active <= rows:
            raise OpError(f"active_rows = {active} is outside [0, {rows}]")
        block_dim, per = split_rows(max(active, 1), cores_for(self, ctx.soc))
        data = ROW_SCALE_TILING.pack(rows=rows, cols=cols, active=active, rows_per_block=per,
                                     scale=float(self.attr(ctx.attrs, "scale")))
        return TilingResult(block_dim, int(active < rows), data)

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x = inputs[0]
        out = np.zeros_like(x)
        per = t["rows_per_block"]
        for blk in range(args.block_dim):
            lo, hi = blk * per, min(t["active"], (blk + 1) * per)
            out[lo:hi] = x[lo:hi] * np.float32(t["scale"])
        return [out]


@onnx_op("RowScale", domain="custom")
class RowScaleAdapter(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("RowScale", [ctx.input(0), ctx.input(1)], {"scale": float(ctx.attr("scale", 1.0))})
