"""Cube family: MatMulV2 (2-D) and BatchMatMulV2 (batched, broadcasting), optional bias.

Tiling splits the rows of the (batch × M) output across cube cores in multiples of the fractal M;
`base_m/base_k/base_n` are the L0 tile sizes the kernel would iterate (they drive the cost model).
The tiling key encodes the transposes (the binary has one entry per combination → ALL_KERNEL).
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .base import (AIC, KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work,
                   ceil_div, covered, prod, split_rows)
from .registry import register

MATMUL_TILING = TilingStruct(("batch", "Q"), ("m", "Q"), ("k", "Q"), ("n", "Q"), ("rows_per_block", "Q"),
                             ("trans_a", "B"), ("trans_b", "B"), ("has_bias", "B"), ("pad", "B"),
                             ("base_m", "I"), ("base_k", "I"), ("base_n", "I"))


class MatMulBase(OpSpec):
    inputs = ("x1", "x2", "bias?")
    core_type = AIC
    tiling_keys = (0, 1, 2, 3)
    tiling_struct = MATMUL_TILING
    trans_attrs = ("transpose_x1", "transpose_x2")

    def _trans(self, attrs) -> tuple[bool, bool]:
        return bool(self.attr(attrs, self.trans_attrs[0])), bool(self.attr(attrs, self.trans_attrs[1]))

    def _mkn(self, a_shape, b_shape, attrs):
        ta, tb = self._trans(attrs)
        if len(a_shape) < 2 or len(b_shape) < 2:
            raise OpError(f"inputs must have rank >= 2, got {list(a_shape)} and {list(b_shape)}")
        m, k = (a_shape[-1], a_shape[-2]) if ta else (a_shape[-2], a_shape[-1])
        k2, n = (b_shape[-1], b_shape[-2]) if tb else (b_shape[-2], b_shape[-1])
        if k != k2:
            raise OpError(f"inner dimensions differ: {list(a_shape)} x {list(b_shape)}")
        try:
            batch = tuple(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
        except ValueError:
            raise OpError(f"batch dims of {list(a_shape)} and {list(b_shape)} cannot be broadcast") from None
        return batch, m, k, n

    def infer(self, node: Node) -> list[TensorDesc]:
        a, b = node.input_desc(0), node.input_desc(1)
        batch, m, _, n = self._mkn(a.shape, b.shape, node.attrs)
        return [TensorDesc(batch + (m, n), a.dtype, a.format, a.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        a, b = ctx.inputs[0], ctx.inputs[1]
        batch, m, k, n = self._mkn(a.shape, b.shape, ctx.attrs)
        fm, fk, fn = ctx.soc.mkn_for(a.dtype)
        rows = prod(batch) * m
        block_dim, per = split_rows(rows, ctx.soc.cube_cores, fm)
        itemsize = np.dtype(a.dtype).itemsize
        # L0A holds base_m x base_k, L0B base_k x base_n (double-buffered halves); L0C base_m x base_n fp32
        base_k = max(fk, min(ceil_div(k, fk) * fk, (ctx.soc.l0_a_size // 2) // (fm * 8 * itemsize) // fk * fk))
        base_m = max(fm, min(ceil_div(per or 1, fm) * fm, (ctx.soc.l0_a_size // 2) // (base_k * itemsize) // fm * fm))
        base_n = max(fn, min(ceil_div(n, fn) * fn, (ctx.soc.l0_c_size // 2) // (base_m * 4) // fn * fn))
        ta, tb = self._trans(ctx.attrs)
        data = MATMUL_TILING.pack(batch=prod(batch), m=m, k=k, n=n, rows_per_block=per, trans_a=int(ta),
                                  trans_b=int(tb), has_bias=int(len(ctx.inputs) > 2 and ctx.inputs[2] is not None),
                                  pad=0, base_m=base_m, base_k=base_k, base_n=base_n)
        return TilingResult(block_dim, int(ta) | int(tb) << 1, data)

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        a, b = inputs[0], inputs[1]
        if t["trans_a"]:
            a = np.swapaxes(a, -1, -2)
        if t["trans_b"]:
            b = np.swapaxes(b, -1, -2)
        out_shape = args.outputs[0].shape
        batch_shape = out_shape[:-2]
        m, k, n = t["m"], t["k"], t["n"]
        acc = np.float64 if a.dtype == np.float64 else np.float32  # cube accumulates in fp32
        A = np.broadcast_to(a, batch_shape + (m, k)).reshape(-1, m, k).astype(acc, copy=False)
        B = np.broadcast_to(b, batch_shape + (k, n)).reshape(-1, k, n).astype(acc, copy=False)
        rows = t["batch"] * m
        # the blocks cover the flattened (batch x M) rows [0, end); rows are independent
        end = covered(rows, t["rows_per_block"], args.block_dim)
        if end == rows:
            out = np.matmul(A, B).reshape(rows, n)          # one batched GEMM: what all the blocks compute
        else:
            out = np.zeros((rows, n), dtype=acc)
            r = 0
            while r < end:
                bi, mi = divmod(r, m)
                take = min(end - r, m - mi)
                out[r:r + take] = A[bi, mi:mi + take] @ B[bi]
                r += take
        if t["has_bias"] and inputs[2] is not None:
            out += inputs[2].astype(acc, copy=False).reshape(1, -1)
        return [out.reshape(out_shape).astype(args.outputs[0].dtype, copy=False)]

    def work(self, ctx: TilingContext) -> Work:
        a, b = ctx.inputs[0], ctx.inputs[1]
        batch, m, k, n = self._mkn(a.shape, b.shape, ctx.attrs)
        fm, fk, fn = ctx.soc.mkn_for(a.dtype)
        fractals = prod(batch) * ceil_div(m, fm) * ceil_div(k, fk) * ceil_div(n, fn)
        moved = sum(d.nbytes for d in ctx.inputs if d is not None) + ctx.outputs[0].nbytes
        return Work(fractals=fractals, vector_ops=0, bytes=moved, dtype=a.dtype)


@register
class MatMulV2(MatMulBase):
    op_type = "MatMulV2"
    attrs = {"transpose_x1": False, "transpose_x2": False}

    def infer(self, node: Node) -> list[TensorDesc]:
        a, b = node.input_desc(0), node.input_desc(1)
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise OpError(f"MatMulV2 takes 2-D inputs, got {list(a.shape)} and {list(b.shape)}")
        return super().infer(node)


@register
class BatchMatMulV2(MatMulBase):
    op_type = "BatchMatMulV2"
    attrs = {"adj_x1": False, "adj_x2": False}
    trans_attrs = ("adj_x1", "adj_x2")
