"""Attention and MoE ops whose tiling depends on device values (domain `ascend`):

* IncreFlashAttention(query[B,N,1,D], key/value[B,N,S,D], actual_seq_lengths[B] int64) — tiling reads
  input 3; placements {HOST, AICPU}; MIX core.
* GroupedMatmul(x[M,K], weight[G,K,N], group_list[G] int64 cumulative row ends) — tiling reads input 2;
  placements {HOST, AICPU}; cube core.

The dependent values go into the tiling data, and block_dim / tiling_key are derived from them; the
kernels read lengths and group ends from the tiling data they are launched with, never from the inputs.
"""
from __future__ import annotations

import math
import struct

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import (
    AIC,
    HOST,
    MIX,
    ON_AICPU,
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    Work,
    ceil_div,
    check_tiling_shape,
    cores_for,
)
from .core.registry import register

KV_SPLIT_LEN = 256   # IFA tiling: KV positions per split when a sequence is long (flash-decoding key 1)
GMM_ROW_CHUNK = 16   # GMM tiling: rows per work unit (the cube fractal M)


class VarTiling:
    """Tiling data = a fixed little-endian header + an int64 array (the dependent values)."""

    def __init__(self, header: str, names: tuple[str, ...], array_name: str):
        self.head = struct.Struct("<" + header)
        self.names, self.array_name = names, array_name
        self.size = self.head.size  # minimum

    def pack(self, values: list[int], **fields) -> bytes:
        return self.head.pack(*(fields[n] for n in self.names)) + np.asarray(values, "<i8").tobytes()

    def unpack(self, data: bytes) -> dict:
        if len(data) < self.head.size:
            raise OpError(f"tiling data has {len(data)} bytes, the kernel expects at least {self.head.size}")
        out = dict(zip(self.names, self.head.unpack_from(data)))
        count = out["count"]
        end = self.head.size + 8 * count
        if len(data) < end:
            raise OpError(f"tiling data has {len(data)} bytes, {end} needed for {count} values")
        out[self.array_name] = np.frombuffer(data[self.head.size:end], "<i8").astype(np.int64)
        return out


IFA_TILING = VarTiling("IIIIfIII", ("b", "n", "s", "d", "scale", "splits", "units_per_block", "count"), "lengths")
GMM_TILING = VarTiling("QQQIII", ("m", "k", "n", "g", "units_per_block", "count"), "ends")


@register
class IncreFlashAttention(OpSpec):
    op_type = "IncreFlashAttention"
    inputs = ("query", "key", "value", "actual_seq_lengths")
    outputs = ("attention_out",)
    attrs = {"num_heads": 1, "scale_value": None, "input_layout": "BNSD"}
    core_type = MIX
    dtypes = ("float32", "float16", "int64")
    tiling_depend = frozenset({3})
    tiling_placements = frozenset({HOST, ON_AICPU})
    tiling_keys = (0, 1)
    tiling_struct = IFA_TILING

    def _dims(self, q, k, v, attrs):
        if self.attr(attrs, "input_layout") != "BNSD":
            raise OpError(f"input_layout {self.attr(attrs, 'input_layout')!r} is not supported (BNSD only)")
        if len(q) != 4 or len(k) != 4 or k != v or q[2] != 1 or q[:2] != k[:2] or q[3] != k[3]:
            raise OpError(f"shapes query {list(q)}, key {list(k)}, value {list(v)} are not [B,N,1,D], [B,N,S,D]")
        if int(self.attr(attrs, "num_heads")) != q[1]:
            raise OpError(f"num_heads {self.attr(attrs, 'num_heads')} != N = {q[1]}")
        if 0 in (q[0], q[1], k[2], q[3]):   # no sequence to attend over: its tiling has nothing to split
            raise OpError(f"shapes query {list(q)}, key {list(k)} have an empty dimension (B, N, S and D must be >= 1)")
        return q[0], q[1], k[2], q[3]

    def infer(self, node: Node) -> list[TensorDesc]:
        q, k, v, lens = (node.input_desc(i) for i in range(4))
        self._dims(q.shape, k.shape, v.shape, node.attrs)
        if lens.shape != (q.shape[0],) or lens.dtype != "int64":
            raise OpError(f"actual_seq_lengths must be int64[{q.shape[0]}], got {lens.dtype}{list(lens.shape)}")
        return [TensorDesc(q.shape, q.dtype, q.format, q.origin_format)]

    def placeholder_values(self, ctx: TilingContext) -> dict[int, np.ndarray]:
        """Worst case for the compile-time host tiling run (workspace sizing): every sequence full."""
        b, s = ctx.inputs[0].shape[0], ctx.inputs[1].shape[2]
        return {3: np.full(b, s, np.int64)}

    def tiling(self, ctx: TilingContext) -> TilingResult:
        b, n, s, d = self._dims(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.inputs[2].shape, ctx.attrs)
        lens = ctx.depend_values.get(3)
        if lens is None:
            raise OpError("tiling needs the values of actual_seq_lengths")
        lens = np.asarray(lens).reshape(-1).astype(np.int64)
        for i, length in enumerate(lens):
            if not 1 <= length <= s:
                raise OpError(f"actual_seq_lengths[{i}] = {int(length)} is outside [1, {s}]")
        splits = ceil_div(int(lens.max()), KV_SPLIT_LEN) if lens.max() > KV_SPLIT_LEN else 1
        units = b * n * splits
        per = ceil_div(units, min(units, cores_for(self, ctx.soc)))
        block_dim = ceil_div(units, per)
        scale = self.attr(ctx.attrs, "scale_value")
        scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
        data = IFA_TILING.pack(lens, b=b, n=n, s=s, d=d, scale=scale, splits=splits, units_per_block=per, count=b)
        workspace = [b * n * splits * (d + 2) * 4] if splits > 1 else []
        return TilingResult(block_dim, int(splits > 1), data, workspace)

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        for name, arr, want in (("query", inputs[0], (t["b"], t["n"], 1, t["d"])),
                                ("key", inputs[1], (t["b"], t["n"], t["s"], t["d"])),
                                ("value", inputs[2], (t["b"], t["n"], t["s"], t["d"])),
                                ("the sequence lengths", t["lengths"], (t["b"],))):
            check_tiling_shape(name, arr, want)
        q, k, v = (x.astype(np.float32) for x in inputs[:3])
        b, n, d, splits = t["b"], t["n"], t["d"], t["splits"]
        lens = t["lengths"]
        out = np.zeros((b, n, 1, d), np.float32)
        # per split: partial max, sum and weighted values (combined with log-sum-exp across splits)
        part_m = np.full((b, n, splits), -np.inf, np.float32)
        part_l = np.zeros((b, n, splits), np.float32)
        part_o = np.zeros((b, n, splits, d), np.float32)
        per = t["units_per_block"]
        for blk in range(args.block_dim):
            for unit in range(blk * per, min(b * n * splits, (blk + 1) * per)):
                bi, rest = divmod(unit, n * splits)
                ni, si = divmod(rest, splits)
                length = int(lens[bi])
                lo, hi = si * KV_SPLIT_LEN if splits > 1 else 0, min(length, (si + 1) * KV_SPLIT_LEN) if splits > 1 else length
                if lo >= hi:
                    continue
                scores = t["scale"] * (k[bi, ni, lo:hi] @ q[bi, ni, 0])
                m = scores.max()
                p = np.exp(scores - m)
                part_m[bi, ni, si], part_l[bi, ni, si] = m, p.sum()
                part_o[bi, ni, si] = p @ v[bi, ni, lo:hi]
        m_all = part_m.max(axis=2, keepdims=True)
        w = np.where(np.isfinite(part_m), np.exp(part_m - np.where(np.isfinite(m_all), m_all, 0)), 0)
        denom = (w * part_l).sum(axis=2)
        num = (w[..., None] * part_o).sum(axis=2)
        ok = denom > 0
        out[:, :, 0][ok] = num[ok] / denom[ok][:, None]
        return [out.astype(args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        q, k = ctx.inputs[0], ctx.inputs[1]
        b, n, s, d = q.shape[0], q.shape[1], k.shape[2], q.shape[3]
        fm, fk, fn = ctx.soc.mkn_for(q.dtype)
        lens = ctx.depend_values.get(3)
        kv = int(np.sum(lens)) if lens is not None else b * s
        fractals = n * (ceil_div(kv, fn) * ceil_div(d, fk) + ceil_div(d, fn) * ceil_div(kv, fk))
        moved = q.nbytes + 2 * n * kv * d * np.dtype(k.dtype).itemsize + ctx.outputs[0].nbytes
        return Work(fractals=fractals, vector_ops=n * kv * 4, bytes=moved, dtype=q.dtype)


@register
class GroupedMatmul(OpSpec):
    op_type = "GroupedMatmul"
    inputs = ("x", "weight", "group_list")
    core_type = AIC
    dtypes = ("float32", "float16", "int64")
    tiling_depend = frozenset({2})
    tiling_placements = frozenset({HOST, ON_AICPU})
    tiling_keys = (0, 1)
    tiling_struct = GMM_TILING

    def _dims(self, x, w, gl):
        if len(x) != 2 or len(w) != 3 or x[1] != w[1] or len(gl) != 1 or gl[0] != w[0]:
            raise OpError(f"shapes x {list(x)}, weight {list(w)}, group_list {list(gl)} are not [M,K], [G,K,N], [G]")
        return x[0], x[1], w[2], w[0]

    def infer(self, node: Node) -> list[TensorDesc]:
        x, w, gl = (node.input_desc(i) for i in range(3))
        m, _, n, _ = self._dims(x.shape, w.shape, gl.shape)
        if gl.dtype != "int64":
            raise OpError(f"group_list must be int64, got {gl.dtype}")
        return [TensorDesc((m, n), x.dtype, x.format, x.origin_format)]

    def placeholder_values(self, ctx: TilingContext) -> dict[int, np.ndarray]:
        """Worst case for compile-time workspace sizing: every row in use, split evenly."""
        m, g = ctx.inputs[0].shape[0], ctx.inputs[1].shape[0]
        return {2: np.array([(m * (i + 1)) // g for i in range(g)], np.int64)}

    def tiling(self, ctx: TilingContext) -> TilingResult:
        m, k, n, g = self._dims(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.inputs[2].shape)
        ends = ctx.depend_values.get(2)
        if ends is None:
            raise OpError("tiling needs the values of group_list")
        ends = np.asarray(ends).reshape(-1).astype(np.int64)
        prev = 0
        for i, e in enumerate(ends):
            if e < prev or e > m:
                raise OpError(f"group_list[{i}] = {int(e)} is not a non-decreasing row end within [0, {m}]")
            prev = int(e)
        starts = np.concatenate([[0], ends[:-1]])
        units = int(sum(ceil_div(int(e - s), GMM_ROW_CHUNK) for s, e in zip(starts, ends)))
        cores = cores_for(self, ctx.soc)
        per = ceil_div(max(units, 1), min(max(units, 1), cores))
        block_dim = max(1, ceil_div(units, per))
        key = int(bool(np.any(ends - starts == 0)))
        return TilingResult(block_dim, key, GMM_TILING.pack(ends, m=m, k=k, n=n, g=g, units_per_block=per, count=g))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        for name, arr, want in (("x", inputs[0], (t["m"], t["k"])), ("weight", inputs[1], (t["g"], t["k"], t["n"])),
                                ("group_list", t["ends"], (t["g"],))):
            check_tiling_shape(name, arr, want)
        x, w = inputs[0].astype(np.float32), inputs[1].astype(np.float32)
        ends = t["ends"]
        starts = np.concatenate([[0], ends[:-1]])
        work = [(g, r) for g in range(t["g"]) for r in range(int(starts[g]), int(ends[g]), GMM_ROW_CHUNK)]
        y = np.zeros((t["m"], t["n"]), np.float32)
        per = t["units_per_block"]
        for blk in range(args.block_dim):
            for g, r in work[blk * per:(blk + 1) * per]:
                hi = min(r + GMM_ROW_CHUNK, int(ends[g]))
                y[r:hi] = x[r:hi] @ w[g]
        return [y.astype(args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        m, k, n, g = self._dims(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.inputs[2].shape)
        fm, fk, fn = ctx.soc.mkn_for(ctx.inputs[0].dtype)
        ends = ctx.depend_values.get(2)
        rows = int(np.asarray(ends).reshape(-1)[-1]) if ends is not None and len(ends) else m
        used = g if ends is None else int(np.count_nonzero(np.diff(np.concatenate([[0], ends]))))
        fractals = ceil_div(rows, fm) * ceil_div(k, fk) * ceil_div(n, fn) + used
        moved = rows * k * np.dtype(ctx.inputs[0].dtype).itemsize + used * k * n * 4 + rows * n * 4
        return Work(fractals=fractals, bytes=moved, dtype=ctx.inputs[0].dtype)
