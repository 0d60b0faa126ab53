"""The paged KV cache of an LLM server (what vllm-ascend runs through torch_npu / ATB):

* ReshapeAndCache(key[T, KVH, D], value[T, KVH, D], key_cache[NB, BS, KVH, D], value_cache[...], slot_mapping
  int[T]) -> (key_cache, value_cache): token t's key and value written at slot slot_mapping[t] (block
  slot // BS, offset slot % BS); a negative slot (a padded token) writes nothing. The kernel writes in place,
  so its cost is the written rows only, however large the cache (ATB's ReshapeAndCacheOperation).
* PagedAttention(query[T, N, D], key_cache, value_cache, block_tables int[S, MB], actual_seq_lengths int64[S],
  actual_seq_lengths_kv int64[S]) -> [T, N, D]: the tokens of all sequences in one token-flattened batch (TND);
  sequence i owns the query rows up to actual_seq_lengths[i] (cumulative, FusedInferAttentionScore's TND
  convention) and attends causally (bottom-right aligned: its j-th of q query rows sits at key position
  kv - q + j) to the first actual_seq_lengths_kv[i] positions of its blocks block_tables[i]. Grouped KV heads:
  query head h reads KV head h // (N / KVH). This is FusedInferAttentionScore with a block table (decode rows
  are IncreFlashAttention's case, prefill chunks PromptFlashAttention's): one kernel for the engine's mixed batch.
  Its tiling reads both length arrays (tiling_depend), so it runs on the host each step or sinks to the AICPU.
  Tiling: per sequence, its query rows times the heads of one KV group form the cube's M ([q * N/KVH, D]
  against the group's keys), split in units of FA_ROWS rows, or, for a decode row over a long context, in
  KV_SPLIT positions of keys (flash-decoding); units spread over the cores.
"""
from __future__ import annotations

import math
import struct

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import (
    AIV,
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
    split_rows,
)
from .core.registry import register

FA_ROWS = 128       # query rows (times the group's heads) per work unit of a prefill chunk
KV_SPLIT = 512      # key positions per work unit of a decode row over a long context
FLOATS = ("float16", "float32", "bfloat16")
INTS = ("int32", "int64")


def _cache_dims(kc: TensorDesc, vc: TensorDesc) -> tuple[int, int, int, int]:
    if len(kc.shape) != 4 or kc.shape != vc.shape:
        raise OpError(f"key_cache {list(kc.shape)} / value_cache {list(vc.shape)} must be one [num_blocks, "
                      "block_size, kv_heads, head_dim] shape")
    if kc.dtype != vc.dtype or kc.dtype not in FLOATS:
        raise OpError(f"the caches must share a float dtype, got {kc.dtype}/{vc.dtype}")
    return tuple(int(d) for d in kc.shape)


@register
class ReshapeAndCache(OpSpec):
    op_type = "ReshapeAndCache"
    inputs = ("key", "value", "key_cache", "value_cache", "slot_mapping")
    outputs = ("key_cache_out", "value_cache_out")
    core_type = AIV
    dtypes = FLOATS + INTS

    def _check(self, descs) -> tuple[int, int, int, int, int]:
        k, v, kc, vc, slots = descs[:5]
        nb, bs, kvh, d = _cache_dims(kc, vc)
        if len(k.shape) != 3 or k.shape != v.shape or tuple(k.shape[1:]) != (kvh, d) or k.dtype != kc.dtype:
            raise OpError(f"key {k.dtype}{list(k.shape)} / value {v.dtype}{list(v.shape)} must be "
                          f"{kc.dtype}[T, {kvh}, {d}] like the cache")
        if slots.dtype not in INTS or tuple(slots.shape) != (k.shape[0],):
            raise OpError(f"slot_mapping must be int[{k.shape[0]}], got {slots.dtype}{list(slots.shape)}")
        return k.shape[0], nb, bs, kvh, d

    def infer(self, node: Node) -> list[TensorDesc]:
        descs = [node.input_desc(i) for i in range(5)]
        self._check(descs)
        return [TensorDesc(descs[2].shape, descs[2].dtype, "ND", "ND"), TensorDesc(descs[3].shape, descs[3].dtype,
                                                                                    "ND", "ND")]

    def alias_input(self, node: Node, k: int) -> int | None:
        return None

    def tiling(self, ctx: TilingContext) -> TilingResult:
        t, nb, bs, kvh, d = self._check(ctx.inputs)
        block_dim, per = split_rows(t, cores_for(self, ctx.soc))
        return TilingResult(block_dim, 0, struct.pack("<QIIII", t, nb, bs, kvh * d, per))

    def decode_tiling(self, data: bytes, attrs) -> dict:
        if len(data) < 24:
            raise OpError(f"tiling data has {len(data)} bytes, the kernel expects 24")
        return dict(zip(("tokens", "blocks", "block_size", "row", "per"), struct.unpack_from("<QIIII", data)))

    def tiling_data_size(self, attrs) -> int:
        return 24

    def compute(self, args: KernelArgs, inputs):
        k, v, kc, vc, slots = inputs
        t = args.tiling
        check_tiling_shape("key", k, (t["tokens"], k.shape[1], k.shape[2]) if k.ndim == 3 else (t["tokens"],))
        nb, bs = t["blocks"], t["block_size"]
        flat = np.asarray(slots).reshape(-1).astype(np.int64)
        keep = flat >= 0
        if keep.any() and flat[keep].max() >= nb * bs:
            raise OpError(f"a slot in slot_mapping is outside the cache's {nb * bs} slots")
        outs = []
        for cache, new in ((kc, k), (vc, v)):
            c = np.array(cache, copy=True).reshape(nb * bs, -1)
            c[flat[keep]] = np.asarray(new).reshape(flat.size, -1)[keep]
            outs.append(c.reshape(cache.shape))
        return outs

    def work(self, ctx: TilingContext) -> Work:
        k, v, slots = ctx.inputs[0], ctx.inputs[1], ctx.inputs[4]
        moved = 2 * (k.nbytes + v.nbytes) + slots.nbytes     # read the new rows, write them into their slots
        return Work(vector_ops=0, bytes=moved, dtype=k.dtype, out_elems=0)


PA_HEAD = struct.Struct("<IIIIIIIIIf")
PA_NAMES = ("tokens", "seqs", "n", "kvh", "d", "block_size", "max_blocks", "units", "units_per_block", "scale")


@register
class PagedAttention(OpSpec):
    op_type = "PagedAttention"
    inputs = ("query", "key_cache", "value_cache", "block_tables", "actual_seq_lengths", "actual_seq_lengths_kv")
    outputs = ("attention_out",)
    attrs = {"num_heads": 1, "num_key_value_heads": 0, "scale_value": None}
    core_type = MIX
    dtypes = FLOATS + INTS
    tiling_depend = frozenset({4, 5})
    tiling_placements = frozenset({HOST, ON_AICPU})
    tiling_keys = (0, 1)      # 1: some decode row split over KV_SPLIT chunks (a combine step follows)

    def _dims(self, descs, attrs):
        q, kc, vc, table, qlen, kvlen = descs[:6]
        nb, bs, kvh, d = _cache_dims(kc, vc)
        if len(q.shape) != 3 or q.shape[2] != d or q.dtype != kc.dtype:
            raise OpError(f"query {q.dtype}{list(q.shape)} must be {kc.dtype}[T, N, {d}] (TND)")
        n = int(self.attr(attrs, "num_heads"))
        kv_heads = int(self.attr(attrs, "num_key_value_heads")) or n
        if n != q.shape[1] or kv_heads != kvh or n % kvh:
            raise OpError(f"num_heads {n} / num_key_value_heads {kv_heads} must be the query's N ({q.shape[1]}) and "
                          f"the cache's KV heads ({kvh}), N a multiple of KV heads")
        if len(table.shape) != 2 or table.dtype not in INTS:
            raise OpError(f"block_tables must be int[S, max_blocks], got {table.dtype}{list(table.shape)}")
        s = table.shape[0]
        for name, x in (("actual_seq_lengths", qlen), ("actual_seq_lengths_kv", kvlen)):
            if x.dtype != "int64" or tuple(x.shape) != (s,):
                raise OpError(f"{name} must be int64[{s}], got {x.dtype}{list(x.shape)}")
        return q.shape[0], s, n, kvh, d, bs, table.shape[1], nb

    def infer(self, node: Node) -> list[TensorDesc]:
        descs = [node.input_desc(i) for i in range(6)]
        self._dims(descs, node.attrs)
        q = descs[0]
        return [TensorDesc(q.shape, q.dtype, "ND", "ND")]

    def placeholder_values(self, ctx: TilingContext) -> dict[int, np.ndarray]:
        """Worst case for the compile-time host tiling run: the tokens spread evenly, every sequence's blocks
        full."""
        t, s, _, _, _, bs, mb, _ = self._dims(ctx.inputs, ctx.attrs)
        s = max(s, 1)
        q = np.minimum(np.arange(1, s + 1) * max(1, t // s), t).astype(np.int64)
        q[-1] = t
        return {4: q, 5: np.full(s, mb * bs, np.int64)}

    def _lengths(self, ctx: TilingContext, t: int, s: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
        cum, kv = (ctx.depend_values.get(i) for i in (4, 5))
        if cum is None or kv is None:
            raise OpError("tiling needs the values of actual_seq_lengths and actual_seq_lengths_kv")
        cum = np.asarray(cum).reshape(-1).astype(np.int64)
        kv = np.asarray(kv).reshape(-1).astype(np.int64)
        q = np.diff(np.concatenate([[0], cum]))
        if s and (q.min() < 0 or cum[-1] != t):
            raise OpError(f"actual_seq_lengths must rise to the {t} query tokens, got {cum.tolist()[:8]}")
        if s and (kv.min() < 1 or kv.max() > cap or (kv < q).any()):
            raise OpError(f"actual_seq_lengths_kv must be in [query length, {cap}] (the block table's positions)")
        return q, kv

    @staticmethod
    def units(q: np.ndarray, kv: np.ndarray, group: int) -> np.ndarray:
        """Work units of each sequence (per KV head): prefill rows in FA_ROWS chunks, a decode row's keys in
        KV_SPLIT chunks."""
        rows = np.maximum(1, -(-(q * group) // FA_ROWS))
        splits = np.maximum(1, -(-kv // KV_SPLIT))
        return np.where(q > 1, rows, splits)

    def tiling(self, ctx: TilingContext) -> TilingResult:
        t, s, n, kvh, d, bs, mb, _ = self._dims(ctx.inputs, ctx.attrs)
        q, kv = self._lengths(ctx, t, s, mb * bs)
        units = int(self.units(q, kv, n // kvh).sum()) * kvh
        block_dim, per = split_rows(units, cores_for(self, ctx.soc))
        scale = self.attr(ctx.attrs, "scale_value")
        scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
        split = bool(((q == 1) & (kv > KV_SPLIT)).any())
        data = PA_HEAD.pack(t, s, n, kvh, d, bs, mb, units, per, scale) + np.concatenate([q, kv]).astype("<i8").tobytes()
        workspace = [s * n * ceil_div(mb * bs, KV_SPLIT) * (d + 2) * 4] if split else []
        return TilingResult(block_dim, int(split), data, workspace)

    def decode_tiling(self, data: bytes, attrs) -> dict:
        if len(data) < PA_HEAD.size:
            raise OpError(f"tiling data has {len(data)} bytes, the kernel expects at least {PA_HEAD.size}")
        out = dict(zip(PA_NAMES, PA_HEAD.unpack_from(data)))
        end = PA_HEAD.size + 16 * out["seqs"]
        if len(data) < end:
            raise OpError(f"tiling data has {len(data)} bytes, {end} needed for {out['seqs']} sequences")
        arr = np.frombuffer(data[PA_HEAD.size:end], "<i8").astype(np.int64)
        out["q_lens"], out["kv_lens"] = arr[:out["seqs"]], arr[out["seqs"]:]
        return out

    def tiling_data_size(self, attrs) -> int:
        return PA_HEAD.size

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        q, kc, vc, table = inputs[:4]
        tokens, s, n, kvh, d, bs = t["tokens"], t["seqs"], t["n"], t["kvh"], t["d"], t["block_size"]
        check_tiling_shape("query", q, (tokens, n, d))
        check_tiling_shape("block_tables", table, (s, t["max_blocks"]))
        group = n // kvh
        out = np.zeros((tokens, n, d), np.float32)
        nb = kc.shape[0]
        start = 0
        for i in range(s):
            ql, kl = int(t["q_lens"][i]), int(t["kv_lens"][i])
            blocks = np.asarray(table[i, :ceil_div(kl, bs)]).astype(np.int64)
            if blocks.size and (blocks.min() < 0 or blocks.max() >= nb):
                raise OpError(f"block_tables[{i}] names a block outside the cache's {nb}")
            k = kc[blocks].reshape(-1, kvh, d)[:kl].astype(np.float32)         # [kv, KVH, D]
            v = vc[blocks].reshape(-1, kvh, d)[:kl].astype(np.float32)
            qs = q[start:start + ql].astype(np.float32).reshape(ql, kvh, group, d)
            scores = np.einsum("qhgd,khd->hgqk", qs, k) * np.float32(t["scale"])
            pos = kl - ql + np.arange(ql)
            scores = np.where(np.arange(kl)[None, :] <= pos[:, None], scores, -np.inf)
            scores = scores.astype(q.dtype).astype(np.float32)
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = (e / e.sum(axis=-1, keepdims=True)).astype(q.dtype).astype(np.float32)
            out[start:start + ql] = np.einsum("hgqk,khd->qhgd", probs, v).reshape(ql, n, d)
            start += ql
        return [out.astype(args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        tokens, s, n, kvh, d, bs, mb, _ = self._dims(ctx.inputs, ctx.attrs)
        q, kv = self._lengths(ctx, tokens, s, mb * bs)
        group = n // kvh
        fm, fk, fn = ctx.soc.mkn_for(ctx.inputs[0].dtype)
        rows = q * group                                   # a KV group's query rows form the cube's M
        # causal: query row j of a chunk of q sees kv - q + j + 1 keys; the tiles past the diagonal are skipped
        seen = q * (kv - q) + q * (q + 1) // 2             # (query, key) pairs attended, per head
        dense = np.maximum(1, q * kv)
        m_tiles = -(-rows // fm)
        qk = m_tiles * ceil_div(d, fk) * -(-kv // fn)     # S = Q K^T, then O = P V
        pv = m_tiles * -(-kv // fk) * ceil_div(d, fn)
        fractals = int(np.sum((qk + pv) * seen // dense + 1)) * kvh
        item = np.dtype(ctx.inputs[0].dtype).itemsize
        kv_bytes = int(np.sum(-(-kv // bs))) * bs * kvh * d * item * 2     # whole blocks of K and V, once per group
        table_bytes = np.dtype(ctx.inputs[3].dtype).itemsize * int(np.sum(-(-kv // bs)))   # the block ids read
        moved = 2 * ctx.inputs[0].nbytes + kv_bytes + table_bytes
        return Work(fractals=fractals, vector_ops=int(np.sum(seen)) * n * 6, bytes=moved, dtype=ctx.inputs[0].dtype,
                    flops=int(np.sum(seen)) * n * 4 * d, vector_class="norm")
