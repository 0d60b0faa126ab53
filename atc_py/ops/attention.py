"""Transformer attention ops (CANN op types):

* FusedInferAttentionScore(query, key, value, pse_shift?, atten_mask?, actual_seq_lengths_kv?) in BNSD layout:
  softmax(scale * Q K^T [softcapped] + bias) V with grouped KV heads (num_key_value_heads), where the bias adds
  pse_shift (a float mask, right-aligned broadcast to [B, N, Sq, Skv]; a shorter last dim is padded as masked),
  -inf where atten_mask is True (CANN's convention: True = do not attend), the band of `pre_tokens` /
  `next_tokens` around the diagonal (sparse_mode 0: aligned top-left, query i sits at key i; sparse_mode 4:
  aligned bottom-right, query i sits at key Skv_b - Sq + i with Skv_b the batch's valid KV length) and -inf past
  actual_seq_lengths_kv[b]. A query row with every key masked outputs zeros. ONNX Attention's extras are
  attributes CANN's op does not have: `softcap` (softcap * tanh(logits / softcap) before the bias),
  `qk_output_mode` (-1: one output; 0..3: a second output with the logits raw / softcapped / biased / the
  softmax probabilities) and `softmax_precision` (a numpy dtype the softmax runs in).
  Tiling: the B * N heads are split over the cores (MIX: the cube does the two matmuls, the vector unit the
  softmax); the kernel computes the heads its blocks cover.
* RotaryPositionEmbedding(x, cos, sin, position_ids?): rotate pairs of x's leading `rotary_dim` features by the
  position's angle (mode 0: the two halves, rotate_half; mode 1: interleaved even/odd). x is BNSD ([B, N, S, D])
  or BSH ([B, S, N * D] with num_heads); cos/sin are ONNX's half-width caches, [max_pos, rotary_dim / 2]
  indexed by position_ids [B, S], or [B, S, rotary_dim / 2] without them. Rows (B * S * N) split over the
  vector cores.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import (
    MIX,
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    Work,
    ceil_div,
    cores_for,
    covered,
    split_rows,
)
from .core.registry import register

UNBOUNDED = 2 ** 31 - 1   # pre_tokens / next_tokens without a bound (CANN's default 2147483647)
FLOATS = ("float32", "float16", "float64", "bfloat16")

FIA_TILING = TilingStruct(("b", "I"), ("n", "I"), ("n_kv", "I"), ("sq", "I"), ("skv", "I"), ("d", "I"), ("dv", "I"),
                          ("units_per_block", "I"), ("scale", "f"), ("softcap", "f"), ("pre_tokens", "q"),
                          ("next_tokens", "q"), ("sparse_mode", "B"), ("qk_mode", "b"))


def _acc(dtype: str, precision: str | None = None) -> type:
    if precision == "float64" or dtype == "float64":
        return np.float64
    return np.float32


def _pad_last(x: np.ndarray, length: int, fill) -> np.ndarray:
    if x.shape[-1] >= length:
        return x
    pad = [(0, 0)] * (x.ndim - 1) + [(0, length - x.shape[-1])]
    return np.pad(x, pad, constant_values=fill)


@register
class FusedInferAttentionScore(OpSpec):
    op_type = "FusedInferAttentionScore"
    inputs = ("query", "key", "value", "pse_shift?", "atten_mask?", "actual_seq_lengths_kv?")
    outputs = ("attention_out*",)
    attrs = {"num_heads": 1, "num_key_value_heads": 0, "scale_value": 1.0, "input_layout": "BNSD",
             "pre_tokens": UNBOUNDED, "next_tokens": UNBOUNDED, "sparse_mode": 0, "softcap": 0.0,
             "qk_output_mode": -1, "softmax_precision": ""}
    core_type = MIX
    dtypes = FLOATS + ("bool", "int64", "int32")
    tiling_struct = FIA_TILING

    # -- prototype ------------------------------------------------------------------------------------------------
    def _dims(self, descs, attrs):
        q, k, v = descs[:3]
        if self.attr(attrs, "input_layout") != "BNSD":
            raise OpError(f"input_layout {self.attr(attrs, 'input_layout')!r} is not supported (BNSD)")
        if len(q.shape) != 4 or len(k.shape) != 4 or len(v.shape) != 4:
            raise OpError(f"query {list(q.shape)}, key {list(k.shape)}, value {list(v.shape)} are not BNSD")
        b, n, sq, d = q.shape
        n_kv, skv = k.shape[1], k.shape[2]
        if k.shape[0] != b or v.shape[:3] != k.shape[:3] or k.shape[3] != d:
            raise OpError(f"key {list(k.shape)} / value {list(v.shape)} do not match query {list(q.shape)}")
        if int(self.attr(attrs, "num_heads")) != n:
            raise OpError(f"num_heads {self.attr(attrs, 'num_heads')} != N = {n}")
        kvh = int(self.attr(attrs, "num_key_value_heads")) or n
        if kvh != n_kv or n_kv == 0 or n % n_kv:
            raise OpError(f"num_key_value_heads {kvh} must be the key's N ({n_kv}) and divide num_heads {n}")
        if q.dtype != k.dtype or k.dtype != v.dtype or q.dtype not in FLOATS:
            raise OpError(f"query/key/value must share one float dtype, got {q.dtype}/{k.dtype}/{v.dtype}")
        for i, what in ((3, "pse_shift"), (4, "atten_mask")):
            m = descs[i] if i < len(descs) else None
            if m is None:
                continue
            if i == 4 and m.dtype != "bool":
                raise OpError(f"atten_mask must be bool, got {m.dtype}")
            if i == 3 and m.dtype not in FLOATS:
                raise OpError(f"pse_shift must be a float tensor, got {m.dtype}")
            if len(m.shape) > 4 or not m.shape or m.shape[-1] > skv:
                raise OpError(f"{what} {list(m.shape)} does not broadcast to [{b}, {n}, {sq}, <= {skv}]")
            try:
                np.broadcast_shapes(tuple(m.shape[:-1]) + (skv,), (b, n, sq, skv))
            except ValueError:
                raise OpError(f"{what} {list(m.shape)} does not broadcast to [{b}, {n}, {sq}, {skv}]") from None
        lens = descs[5] if len(descs) > 5 else None
        if lens is not None and (lens.dtype not in ("int64", "int32") or lens.shape != (b,)):
            raise OpError(f"actual_seq_lengths_kv must be int[{b}], got {lens.dtype}{list(lens.shape)}")
        mode = int(self.attr(attrs, "qk_output_mode"))
        if not -1 <= mode <= 3 or int(self.attr(attrs, "sparse_mode")) not in (0, 4):
            raise OpError(f"qk_output_mode {mode} / sparse_mode {self.attr(attrs, 'sparse_mode')} are not "
                          "-1..3 / 0 or 4")
        prec = str(self.attr(attrs, "softmax_precision"))
        if prec and prec not in ("float32", "float64", "float16", "bfloat16"):
            raise OpError(f"softmax_precision {prec} is not a float type")
        return b, n, n_kv, sq, skv, d, v.shape[3]

    def infer(self, node: Node) -> list[TensorDesc]:
        descs = [node.input_desc(i) for i in range(len(node.inputs))]
        b, n, _, sq, skv, _, dv = self._dims(descs, node.attrs)
        dt = descs[0].dtype
        out = [TensorDesc((b, n, sq, dv), dt, "ND", "ND")]
        if int(self.attr(node, "qk_output_mode")) >= 0:
            out.append(TensorDesc((b, n, sq, skv), dt, "ND", "ND"))
        return out

    # -- tiling -----------------------------------------------------------------------------------------------------
    def tiling(self, ctx: TilingContext) -> TilingResult:
        b, n, n_kv, sq, skv, d, dv = self._dims(ctx.inputs, ctx.attrs)
        units = b * n
        block_dim, per = split_rows(units, cores_for(self, ctx.soc))
        a = ctx.attrs
        data = FIA_TILING.pack(b=b, n=n, n_kv=n_kv, sq=sq, skv=skv, d=d, dv=dv, units_per_block=per,
                               scale=float(self.attr(a, "scale_value")), softcap=float(self.attr(a, "softcap")),
                               pre_tokens=int(self.attr(a, "pre_tokens")), next_tokens=int(self.attr(a, "next_tokens")),
                               sparse_mode=int(self.attr(a, "sparse_mode")), qk_mode=int(self.attr(a, "qk_output_mode")))
        return TilingResult(block_dim, int(self.attr(a, "qk_output_mode")) + 1, data)

    tiling_keys = (0, 1, 2, 3, 4)   # no qk output, then one entry per qk_output_mode

    # -- kernel -----------------------------------------------------------------------------------------------------
    @staticmethod
    def bias(t: dict, pse, mask, lens, acc) -> np.ndarray:
        """The additive bias, broadcastable to [B, N, Sq, Skv] (0 where a key is attended, -inf where not)."""
        sq, skv = t["sq"], t["skv"]
        bias = np.zeros((1, 1, sq, skv), acc)
        if pse is not None:
            bias = bias + _pad_last(np.asarray(pse).astype(acc), skv, -np.inf)
        if mask is not None:
            blocked = _pad_last(np.asarray(mask, bool), skv, True)
            bias = bias + np.where(blocked, acc(-np.inf), acc(0))
        valid = None if lens is None else np.asarray(lens).astype(np.int64).reshape(-1, 1, 1, 1)
        pre, nxt = t["pre_tokens"], t["next_tokens"]
        if pre < UNBOUNDED or nxt < UNBOUNDED:
            if t["sparse_mode"] == 4:   # bottom-right: query i sits at key (valid length - Sq + i)
                offset = (np.full((1, 1, 1, 1), skv, np.int64) if valid is None else valid) - sq
            else:
                offset = np.zeros((1, 1, 1, 1), np.int64)
            diff = np.arange(sq).reshape(1, 1, sq, 1) + offset - np.arange(skv).reshape(1, 1, 1, skv)
            allowed = (diff <= pre) & (-diff <= nxt)
            bias = bias + np.where(allowed, acc(0), acc(-np.inf))
        if valid is not None:
            bias = bias + np.where(np.arange(skv).reshape(1, 1, 1, skv) < valid, acc(0), acc(-np.inf))
        return bias

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        q, k, v = inputs[:3]
        pse, mask, lens = (inputs[i] if len(inputs) > i else None for i in (3, 4, 5))
        dt = args.outputs[0].dtype
        acc = _acc(dt)                                                 # the cube accumulates in fp32 (fp64: fp64)
        soft = np.dtype(str(self.attr(args.attrs, "softmax_precision")) or dt)   # ONNX: softmax in Q's type
        b, n, sq, skv, dv = t["b"], t["n"], t["sq"], t["skv"], t["dv"]
        group = n // t["n_kv"]
        out = np.zeros((b * n, sq, dv), acc)
        qk_out = np.zeros((b * n, sq, skv), acc)
        end = covered(b * n, t["units_per_block"], args.block_dim)   # heads are independent: one batched call
        if end:
            heads = np.arange(end)
            bi, hi = heads // n, heads % n
            kv_head = hi // group                                      # grouped KV: head h reads KV head h // g
            # Q and K are each scaled by sqrt(scale) in their own type (ONNX's numerically stable form), the cube
            # accumulates in fp32 and its output is in Q's type; softcap and softmax run in the softmax precision
            root = np.asarray(np.sqrt(np.float32(t["scale"])), dt)
            qh = (q.reshape(b * n, sq, -1)[:end] * root).astype(dt).astype(acc)
            kh = (k[bi, kv_head] * root).astype(dt).astype(acc)
            vh = v[bi, kv_head].astype(acc)
            logits = np.matmul(qh, kh.transpose(0, 2, 1)).astype(dt)
            logits = logits.astype(soft)
            mode = t["qk_mode"]
            raw = logits
            if t["softcap"] > 0:
                cap = soft.type(t["softcap"])
                logits = cap * np.tanh(logits / cap)
            bias = np.broadcast_to(self.bias(t, pse, mask, lens, acc), (b, n, sq, skv)).reshape(b * n, sq, skv)[:end]
            scores = logits + bias.astype(soft)
            dead = np.isneginf(bias.max(axis=-1, keepdims=True))      # every key masked: the row outputs zeros
            top = scores.max(axis=-1, keepdims=True)
            e = np.exp(scores - np.where(np.isneginf(top), soft.type(0), top))
            s = e.sum(axis=-1, keepdims=True)
            probs = np.where(dead, soft.type(0), e / np.where(s == 0, soft.type(1), s))
            out[:end] = np.matmul(probs.astype(dt).astype(acc), vh)
            if mode >= 0:
                qk_out[:end] = (raw, logits, scores, probs)[mode]
        outs = [out.reshape(b, n, sq, dv).astype(dt)]
        if t["qk_mode"] >= 0:
            outs.append(qk_out.reshape(b, n, sq, skv).astype(dt))
        return outs

    # -- cost -------------------------------------------------------------------------------------------------------
    def work(self, ctx: TilingContext) -> Work:
        b, n, _, sq, skv, d, dv = self._dims(ctx.inputs, ctx.attrs)
        fm, fk, fn = ctx.soc.mkn_for(ctx.inputs[0].dtype)
        per_head = ceil_div(sq, fm) * ceil_div(d, fk) * ceil_div(skv, fn) + ceil_div(sq, fm) * ceil_div(skv, fk) * \
            ceil_div(dv, fn)
        moved = sum(x.nbytes for x in ctx.inputs if x is not None) + sum(x.nbytes for x in ctx.outputs)
        return Work(fractals=b * n * per_head, vector_ops=b * n * sq * skv * 6, bytes=moved, dtype=ctx.inputs[0].dtype,
                    flops=2 * b * n * sq * skv * (d + dv), vector_class="norm")


ROPE_TILING = TilingStruct(("rows", "Q"), ("seq", "I"), ("heads", "I"), ("head_size", "I"), ("rotary_dim", "I"),
                           ("rows_per_block", "Q"), ("mode", "B"), ("bnsd", "B"))


@register
class RotaryPositionEmbedding(OpSpec):
    op_type = "RotaryPositionEmbedding"
    inputs = ("x", "cos", "sin", "position_ids?")
    attrs = {"mode": 0, "rotary_dim": 0, "num_heads": 0}
    dtypes = FLOATS + ("int64", "int32")
    tiling_struct = ROPE_TILING

    def _geom(self, descs, attrs):
        x, cos, sin = descs[:3]
        pos = descs[3] if len(descs) > 3 else None
        if x.dtype not in FLOATS or cos.dtype != x.dtype or sin.dtype != x.dtype:
            raise OpError(f"x, cos and sin must share a float dtype, got {x.dtype}, {cos.dtype}, {sin.dtype}")
        if len(x.shape) == 4:
            bsz, heads, seq, head = x.shape
        elif len(x.shape) == 3:
            heads = int(self.attr(attrs, "num_heads"))
            if heads <= 0 or x.shape[2] % heads:
                raise OpError(f"num_heads {heads} does not divide the hidden size of {list(x.shape)}")
            bsz, seq, head = x.shape[0], x.shape[1], x.shape[2] // heads
        else:
            raise OpError(f"x must be [B, N, S, D] or [B, S, N * D], got {list(x.shape)}")
        rot = int(self.attr(attrs, "rotary_dim")) or head
        if rot > head or rot % 2 or int(self.attr(attrs, "mode")) not in (0, 1):
            raise OpError(f"rotary_dim {rot} must be even and <= head size {head}; mode must be 0 or 1")
        if cos.shape != sin.shape or cos.shape[-1] != rot // 2:
            raise OpError(f"cos {list(cos.shape)} / sin {list(sin.shape)} must end in rotary_dim / 2 = {rot // 2}")
        if pos is None:
            if tuple(cos.shape) != (bsz, seq, rot // 2):
                raise OpError(f"without position_ids cos/sin must be [{bsz}, {seq}, {rot // 2}], got {list(cos.shape)}")
        elif pos.dtype not in ("int64", "int32") or tuple(pos.shape) != (bsz, seq) or len(cos.shape) != 2:
            raise OpError(f"position_ids {pos.dtype}{list(pos.shape)} must be int[{bsz}, {seq}] with 2-D caches")
        return bsz, heads, seq, head, rot

    def infer(self, node: Node) -> list[TensorDesc]:
        descs = [node.input_desc(i) for i in range(len(node.inputs))]
        self._geom(descs, node.attrs)
        x = descs[0]
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        bsz, heads, seq, head, rot = self._geom(ctx.inputs, ctx.attrs)
        rows = bsz * seq * heads
        block_dim, per = split_rows(rows, cores_for(self, ctx.soc))
        data = ROPE_TILING.pack(rows=rows, seq=seq, heads=heads, head_size=head, rotary_dim=rot, rows_per_block=per,
                                mode=int(self.attr(ctx.attrs, "mode")), bnsd=int(len(ctx.inputs[0].shape) == 4))
        return TilingResult(block_dim, int(self.attr(ctx.attrs, "mode")), data)

    tiling_keys = (0, 1)

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x, cos, sin = inputs[:3]
        pos = inputs[3] if len(inputs) > 3 else None
        heads, seq, head, rot = t["heads"], t["seq"], t["head_size"], t["rotary_dim"]
        bsz = t["rows"] // max(1, seq * heads)
        acc = np.float64 if x.dtype == np.float64 else np.float32
        xs = x.transpose(0, 2, 1, 3) if t["bnsd"] else x.reshape(bsz, seq, heads, head)   # [B, S, N, D]
        if pos is not None:
            p = np.asarray(pos).astype(np.int64)
            if p.size and (p.min() < 0 or p.max() >= cos.shape[0]):
                raise OpError(f"a position id is outside [0, {cos.shape[0] - 1}]")
            c, s = cos[p], sin[p]
        else:
            c, s = cos, sin
        c, s = c.astype(acc)[:, :, None, :], s.astype(acc)[:, :, None, :]         # [B, S, 1, rot/2]
        rows = xs.reshape(-1, head).astype(acc)
        out = np.zeros_like(rows)
        end = covered(rows.shape[0], t["rows_per_block"], args.block_dim)          # rows are independent
        y = xs.astype(acc).copy()
        r = y[..., :rot]
        if t["mode"] == 1:
            x1, x2 = r[..., 0::2].copy(), r[..., 1::2].copy()
            r[..., 0::2], r[..., 1::2] = c * x1 - s * x2, s * x1 + c * x2
        else:
            x1, x2 = r[..., :rot // 2].copy(), r[..., rot // 2:].copy()
            r[..., :rot // 2], r[..., rot // 2:] = c * x1 - s * x2, s * x1 + c * x2
        out[:end] = y.reshape(-1, head)[:end]
        res = out.reshape(bsz, seq, heads, head)
        res = res.transpose(0, 2, 1, 3) if t["bnsd"] else res.reshape(bsz, seq, heads * head)
        return [np.ascontiguousarray(res).astype(args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * 4   # two multiplies and an add per rotated pair, plus the gather
        return w

