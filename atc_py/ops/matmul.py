"""Cube family: MatMulV2 (2-D) and BatchMatMulV2 (batched, broadcasting), optional bias.

Tiling splits the (batch x M) x N output over the cube cores in blocks of whole fractals — M and N both, as
CANN's matmul tiling does, so a GEMV (M = 1) still uses every core — and, when the output has too few tiles for
the cores, K too: each K block then computes a partial sum and a final step adds them (one cross-core sync and
the partials' traffic in the largest block). The grid is the one whose largest block costs least at the SoC's
fractal rate and per-core port rates. `base_m/base_k/base_n` are the L0 tile sizes the kernel iterates; the
L1 holds 256 x 256 output tiles (A and B strips reloaded per tile). The tiling key encodes the transposes (the
binary has one entry per combination → ALL_KERNEL).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..ir.graph import Node, TensorDesc
from .conv_pool import INT_CUBE, int_operands, scratch
from .core.base import (
    AIC,
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    Work,
    ceil_div,
    check_bias,
    prod,
)
from .core.gemm import grouped_matmul
from .core.registry import register

MATMUL_TILING = TilingStruct(("batch", "Q"), ("m", "Q"), ("k", "Q"), ("n", "Q"), ("m_per_block", "Q"),
                             ("n_per_block", "Q"), ("k_per_block", "Q"), ("blocks_m", "I"), ("blocks_n", "I"),
                             ("blocks_k", "I"), ("trans_a", "B"), ("trans_b", "B"), ("has_bias", "B"), ("pad", "B"),
                             ("base_m", "I"), ("base_k", "I"), ("base_n", "I"))
L1_TILE = 256             # output rows / columns an L1 tile holds: A and B strips are read once per such tile
K_SPLIT_MIN_FRACTALS = 16   # a K block has at least this many K fractals (256 fp16 K): below, splitting K loses
HEAD_ESTIMATE_CYCLES = 2000   # what a block costs beyond its cube and data movement, for choosing the grid


@dataclass(frozen=True)
class Grid:
    """The split of the output: blocks_m x blocks_n tiles of m_blk rows and n_blk columns, K in blocks_k."""
    rows: int
    k: int
    n: int
    m_blk: int
    n_blk: int
    k_blk: int
    blocks_m: int
    blocks_n: int
    blocks_k: int

    @property
    def blocks(self) -> int:
        return self.blocks_m * self.blocks_n * self.blocks_k


def split(total: int, unit: int, parts: int) -> tuple[int, int]:
    """`total` in at most `parts` chunks of whole `unit`s: (chunk, chunks)."""
    units = ceil_div(max(total, 1), unit)
    per = ceil_div(units, max(1, min(parts, units))) * unit
    return per, ceil_div(max(total, 1), per)


def block_bytes(m_blk: int, n_blk: int, k_blk: int, itemsize: int, out_itemsize: int, b_batches: int = 1,
                batch_rows: int = 0) -> int:
    """GM traffic of one block: A and B strips once per L1 output tile, the output once. A batched B (one per
    batch of `batch_rows` rows) is read once per L1 tile of its own batch's rows."""
    a = m_blk * k_blk * itemsize * ceil_div(n_blk, L1_TILE)
    b = k_blk * n_blk * itemsize * ceil_div(min(m_blk, batch_rows or m_blk), L1_TILE) * b_batches
    return a + b + m_blk * n_blk * out_itemsize


def choose_grid(rows: int, k: int, n: int, cores: int, mkn, itemsize: int, out_itemsize: int, soc) -> Grid:
    """The M x N (x K) grid whose largest block is cheapest: cube fractals against bytes at the core's DDR
    port rate, plus a head per block and the combine step of a K split."""
    return _choose_grid(rows, k, n, cores, tuple(mkn), itemsize, out_itemsize, max(1, soc.ddr_rate))


@functools.lru_cache(maxsize=8192)
def _choose_grid(rows: int, k: int, n: int, cores: int, mkn: tuple, itemsize: int, out_itemsize: int,
                 rate: int) -> Grid:
    """choose_grid's search, remembered: a model's matmuls repeat their shapes at every launch (an LLM's layers,
    every step of a server), and the search visits every M x N split."""
    fm, fk, fn = mkn
    best, best_cost = None, None
    mt, nt, kt = ceil_div(rows, fm), ceil_div(n, fn), ceil_div(k, fk)
    for bm in range(1, min(cores, mt) + 1):
        for bn in range(1, min(cores // bm, nt) + 1):
            m_blk, blocks_m = split(rows, fm, bm)
            n_blk, blocks_n = split(n, fn, bn)
            free = cores // (blocks_m * blocks_n)
            bk_max = min(free, kt // K_SPLIT_MIN_FRACTALS) if free >= 2 else 1
            for bk in sorted({1, max(1, bk_max)}):
                k_blk, blocks_k = split(k, fk, bk)
                cube = ceil_div(m_blk, fm) * ceil_div(n_blk, fn) * ceil_div(k_blk, fk)
                moved = block_bytes(min(m_blk, rows), min(n_blk, n), min(k_blk, k), itemsize, out_itemsize)
                combine = blocks_k * min(m_blk, rows) * min(n_blk, n) * 4 if blocks_k > 1 else 0
                cost = max(cube, (moved + combine) / rate) + HEAD_ESTIMATE_CYCLES * (1 + (blocks_k > 1))
                key = (cost, blocks_m * blocks_n * blocks_k)
                if best_cost is None or key < best_cost:
                    best_cost = key
                    best = Grid(rows, k, n, m_blk, n_blk, k_blk, blocks_m, blocks_n, blocks_k)
    if best is None:   # an empty product (0 rows or columns: a detector that kept no box): one block, no work
        best = Grid(rows, k, n, max(rows, 0), max(n, 0), max(k, 0), 1, 1, 1)
    return best


def covered_tiles(t: dict, block_dim: int) -> list[tuple[int, int]]:
    """(row block, column block) of the output tiles whose every K block is among the first block_dim blocks
    (block b is tile b // blocks_k, K part b % blocks_k; tiles run row-major)."""
    done = block_dim // max(1, t["blocks_k"])
    return [divmod(i, t["blocks_n"]) for i in range(min(done, t["blocks_m"] * t["blocks_n"]))]


class MatMulBase(OpSpec):
    """fp32/fp16, and int8/uint8 as CANN's quantized matmul: the data offset `offset_x` and the weight offset
    input `offset_w` (scalar or per column) subtracted first, int32 bias and result."""
    unknown_rank_aware = True
    inputs = ("x1", "x2", "bias?", "offset_w?")
    core_type = AIC
    dtypes = ("float32", "float16", "bfloat16") + INT_CUBE   # the cube takes bf16 too (Ascend 910B), accumulating in fp32
    tiling_keys = (0, 1, 2, 3)
    tiling_struct = MATMUL_TILING
    trans_attrs = ("transpose_x1", "transpose_x2")
    # TBE's MatMul / BatchMatMul (Ascend310, 310P, 310B, 910) take FRACTAL_NZ operands and give a FRACTAL_NZ
    # result, the bias ND; the 910B's (A2) kernels read ND and fractalise on the way into L1
    soc_formats = {soc: {"x1": "FRACTAL_NZ", "x2": "FRACTAL_NZ", "y": "FRACTAL_NZ"}
                   for soc in ("Ascend310", "Ascend310P", "Ascend310B", "Ascend910")}

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
        if (-2,) in (tuple(a.shape), tuple(b.shape)):   # an input of unknown rank: so is the product, until run time
            return [TensorDesc((-2,), "int32" if a.dtype in INT_CUBE else a.dtype, a.format, a.origin_format)]
        batch, m, _, n = self._mkn(a.shape, b.shape, node.attrs)
        if (a.dtype in INT_CUBE) != (b.dtype in INT_CUBE):
            raise OpError(f"x1 ({a.dtype}) and x2 ({b.dtype}) must both be float or both be integer")
        out = "int32" if a.dtype in INT_CUBE else a.dtype
        check_bias(node, 2, n)
        return [TensorDesc(batch + (m, n), out, a.format, a.origin_format)]

    def _grid(self, ctx: TilingContext) -> tuple[Grid, tuple, int, int, int, int]:
        a, b = ctx.inputs[0], ctx.inputs[1]
        batch, m, k, n = self._mkn(a.shape, b.shape, ctx.attrs)
        itemsize = np.dtype(a.dtype).itemsize
        grid = choose_grid(prod(batch) * m, k, n, ctx.soc.cube_cores, ctx.soc.mkn_for(a.dtype), itemsize,
                           np.dtype(ctx.outputs[0].dtype).itemsize, ctx.soc)
        return grid, batch, m, k, n, itemsize

    def tiling(self, ctx: TilingContext) -> TilingResult:
        a = ctx.inputs[0]
        grid, batch, m, k, n, itemsize = self._grid(ctx)
        fm, fk, fn = ctx.soc.mkn_for(a.dtype)
        # L0A holds base_m x base_k, L0B base_k x base_n (double-buffered halves); L0C base_m x base_n fp32
        base_k = max(fk, min(ceil_div(grid.k_blk, fk) * fk, (ctx.soc.l0_a_size // 2) // (fm * 8 * itemsize) // fk * fk))
        base_m = max(fm, min(ceil_div(grid.m_blk, fm) * fm, (ctx.soc.l0_a_size // 2) // (base_k * itemsize) // fm * fm))
        base_n = max(fn, min(ceil_div(grid.n_blk, fn) * fn, (ctx.soc.l0_c_size // 2) // (base_m * 4) // fn * fn))
        ta, tb = self._trans(ctx.attrs)
        data = MATMUL_TILING.pack(batch=prod(batch), m=m, k=k, n=n, m_per_block=grid.m_blk, n_per_block=grid.n_blk,
                                  k_per_block=grid.k_blk, blocks_m=grid.blocks_m, blocks_n=grid.blocks_n,
                                  blocks_k=grid.blocks_k, trans_a=int(ta), trans_b=int(tb),
                                  has_bias=int(len(ctx.inputs) > 2 and ctx.inputs[2] is not None),
                                  pad=0, base_m=base_m, base_k=base_k, base_n=base_n)
        return TilingResult(grid.blocks, int(ta) | int(tb) << 1, data)

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        a, b = inputs[0], inputs[1]
        if a.dtype.kind in "iu":   # quantized: offset_w runs along the columns of op(x2) (its rows when transposed)
            a, b = int_operands(a, b, self.attr(args.attrs, "offset_x"), inputs[3] if len(inputs) > 3 else None,
                                -2 if t["trans_b"] else -1)
        if t["trans_a"]:
            a = np.swapaxes(a, -1, -2)
        if t["trans_b"]:
            b = np.swapaxes(b, -1, -2)
        out_shape = args.outputs[0].shape
        batch_shape = out_shape[:-2]
        m, k, n = t["m"], t["k"], t["n"]
        acc = np.float64 if a.dtype == np.float64 else np.float32  # cube accumulates in fp32 (int8: int32, exact)
        rows = t["batch"] * m
        out_dtype = np.dtype(args.outputs[0].dtype)
        final = np.empty((rows, n), out_dtype)
        acc_out = final if out_dtype == acc else scratch("matmul_acc", (rows, n), acc)
        if b.size == k * n and a.shape[:-2] == batch_shape:
            # one weight for every batch (a Linear on (B, S, K) activations): the batch folds into M, one 2-D
            # GEMM. Broadcasting the weight into a (B, K, N) stack made ConvNeXt's MLPs copy it per image.
            A = a.reshape(1, rows, k).astype(acc, copy=False)
            B = b.reshape(1, 1, k, n).astype(acc, copy=False)
        else:
            batches = int(np.prod(batch_shape, dtype=np.int64))   # (a -1 is ambiguous when m, k or n is 0)
            A = np.broadcast_to(a, batch_shape + (m, k)).reshape(batches, m, k).astype(acc, copy=False)
            B = np.broadcast_to(b, batch_shape + (k, n)).reshape(1, batches, k, n).astype(acc, copy=False)
        bias = inputs[2].astype(acc, copy=False).reshape(1, -1) if t["has_bias"] and inputs[2] is not None else None
        whole = args.block_dim >= t["blocks_m"] * t["blocks_n"] * t["blocks_k"]

        def epilogue(block):   # on each GEMM piece's block (rows, columns) while it is in cache
            y = acc_out[block[1], block[2]]
            if bias is not None:
                y += bias[:, block[2]]
            if whole and acc_out is not final:
                np.copyto(final[block[1], block[2]], y, casting="unsafe")
        grouped_matmul(A, B, acc_out.reshape(1, A.shape[0], A.shape[1], n), epilogue)   # what all the blocks compute
        if not whole:
            # fewer blocks than the tiling's: only the tiles they complete are written
            keep = np.zeros((rows, n), bool)
            mp, np_ = t["m_per_block"], t["n_per_block"]
            for mb, nb in covered_tiles(t, args.block_dim):
                keep[mb * mp:(mb + 1) * mp, nb * np_:(nb + 1) * np_] = True
            acc_out[~keep] = 0
            if acc_out is not final:
                np.copyto(final, acc_out, casting="unsafe")
        return [final.reshape(out_shape)]

    def scratch_needs(self, t, attrs, inputs, outputs):
        x = np.dtype(inputs[0].dtype)
        acc = np.dtype(np.float64 if x == np.float64 or x.kind in "iu" else np.float32)
        if np.dtype(outputs[0].dtype) == acc:
            return {}, {}
        return {"matmul_acc": t["batch"] * t["m"] * t["n"] * acc.itemsize}, {}

    def _b_batches(self, ctx: TilingContext) -> int:
        b = ctx.inputs[1]
        return prod(b.shape[:-2]) if len(b.shape) > 2 else 1

    def work(self, ctx: TilingContext) -> Work:
        a, b = ctx.inputs[0], ctx.inputs[1]
        batch, m, k, n = self._mkn(a.shape, b.shape, ctx.attrs)
        fm, fk, fn = ctx.soc.mkn_for(a.dtype)
        grid = self._grid(ctx)[0]
        itemsize, out_item = np.dtype(a.dtype).itemsize, np.dtype(ctx.outputs[0].dtype).itemsize
        fractals = prod(batch) * ceil_div(m, fm) * ceil_div(k, fk) * ceil_div(n, fn)
        rows = prod(batch) * m
        # A once per L1 column tile of every column block; a shared B once per L1 row tile of every row block, a
        # batched B (attention's K and V) once per L1 row tile of its own batch's rows: a row block spanning
        # several batches reads each batch's B for that batch's rows only
        b_reads = prod(batch) * ceil_div(m, L1_TILE) if self._b_batches(ctx) > 1 else \
            grid.blocks_m * ceil_div(grid.m_blk, L1_TILE)
        moved = (rows * k * itemsize * grid.blocks_n * ceil_div(grid.n_blk, L1_TILE)
                 + k * n * itemsize * b_reads + rows * n * out_item)
        bias = ctx.inputs[2] if len(ctx.inputs) > 2 else None
        moved += bias.nbytes if bias is not None else 0
        partials = grid.blocks_k * rows * n * 4 * 2 if grid.blocks_k > 1 else 0
        # re-reads hit while the strips the running blocks share stay in L2: blocks in a row block read the same
        # A strip, blocks in a column block the same B strip
        window = (grid.blocks_m + grid.blocks_n) * L1_TILE * grid.k_blk * itemsize
        return Work(fractals=fractals, vector_ops=rows * n * grid.blocks_k if grid.blocks_k > 1 else 0,
                    bytes=moved + partials, dtype=a.dtype, flops=2 * prod(batch) * m * k * n,
                    cube_tiles=grid.blocks * self._l0c_tiles(ctx, grid), out_elems=rows * n, reuse_window=window)

    def _l0c_tiles(self, ctx: TilingContext, grid: Grid) -> int:
        """L0C output tiles of one block (base_m x base_n of the tiling)."""
        t = MATMUL_TILING.unpack(self.tiling(ctx).tiling_data)
        return ceil_div(grid.m_blk, t["base_m"]) * ceil_div(grid.n_blk, t["base_n"])

    def block_work(self, ctx: TilingContext, block_dim: int) -> Work:
        """A full tile of the grid (the largest block), with the K split's combine step if there is one."""
        a = ctx.inputs[0]
        grid = self._grid(ctx)[0]
        fm, fk, fn = ctx.soc.mkn_for(a.dtype)
        itemsize, out_item = np.dtype(a.dtype).itemsize, np.dtype(ctx.outputs[0].dtype).itemsize
        m = max(1, self._mkn(a.shape, ctx.inputs[1].shape, ctx.attrs)[1])
        b_batches = min(self._b_batches(ctx), ceil_div(grid.m_blk, m) + 1)
        moved = block_bytes(min(grid.m_blk, grid.rows), min(grid.n_blk, grid.n), min(grid.k_blk, grid.k), itemsize,
                            out_item, max(1, b_batches), m if self._b_batches(ctx) > 1 else 0)
        w = Work(fractals=ceil_div(grid.m_blk, fm) * ceil_div(grid.n_blk, fn) * ceil_div(grid.k_blk, fk),
                 bytes=moved, dtype=a.dtype, flops=2 * grid.m_blk * grid.n_blk * grid.k_blk,
                 cube_tiles=self._l0c_tiles(ctx, grid), out_elems=grid.m_blk * grid.n_blk)
        if grid.blocks_k > 1:   # partials out, then the combining block reads them all and adds
            part = min(grid.m_blk, grid.rows) * min(grid.n_blk, grid.n)
            w.bytes += part * 4 * (1 + grid.blocks_k)
            w.vector_ops += part * grid.blocks_k
            w.syncs = 1
        return w


@register
class MatMulV2(MatMulBase):
    op_type = "MatMulV2"
    attrs = {"transpose_x1": False, "transpose_x2": False, "offset_x": 0}

    def infer(self, node: Node) -> list[TensorDesc]:
        a, b = node.input_desc(0), node.input_desc(1)
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise OpError(f"MatMulV2 takes 2-D inputs, got {list(a.shape)} and {list(b.shape)}")
        return super().infer(node)


@register
class BatchMatMulV2(MatMulBase):
    op_type = "BatchMatMulV2"
    attrs = {"adj_x1": False, "adj_x2": False, "offset_x": 0}
    trans_attrs = ("adj_x1", "adj_x2")
