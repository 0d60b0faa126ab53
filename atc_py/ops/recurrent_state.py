"""Ops that carry a recurrent state across the sequence (linear-attention LLM blocks: Mamba, Qwen3-Next):

* RecurrentGatedDeltaRule (ONNX LinearAttention; CANN's op for the gated delta rule): per (batch, KV head) a
  state S [dk, dv] is updated token by token — decayed by exp(g_t) (update_rule gated, gated_delta), corrected
  by beta_t (v_t - S^T k_t) (delta, gated_delta), then S += k_t v_t^T — and each query head reads
  o_t = scale * q_t S of its KV group. Inputs are [B, T, heads * dim]; the state is [B, H_kv, dk, dv].
* CausalConv1d (ONNX CausalConvWithState): a depthwise 1-D convolution that sees only the past — the input is
  prefixed by the K-1 carried samples (zeros without a past state) — with an optional bias and SiLU; the last
  K-1 samples of the prefixed input are the next state.

Both split their independent rows ((batch, KV head) units, (batch, channel) rows) over the vector cores and
compute the rows their blocks cover; the recurrence runs in fp32."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import (
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    Work,
    cores_for,
    covered,
    split_rows,
)
from .core.registry import register

FLOATS = ("float32", "float16", "float64", "bfloat16")
RULES = ("linear", "gated", "delta", "gated_delta")

GDR_TILING = TilingStruct(("b", "I"), ("t", "I"), ("hq", "I"), ("hkv", "I"), ("dk", "I"), ("dv", "I"),
                          ("units_per_block", "I"), ("scale", "f"), ("gated", "B"), ("delta", "B"),
                          ("decay_per_dim", "B"))


@register
class RecurrentGatedDeltaRule(OpSpec):
    op_type = "RecurrentGatedDeltaRule"
    inputs = ("query", "key", "value", "state?", "g?", "beta?")
    outputs = ("out", "final_state")
    attrs = {"q_num_heads": 1, "kv_num_heads": 1, "scale": 0.0, "update_rule": "gated_delta", "chunk_size": 64}
    dtypes = FLOATS
    tiling_struct = GDR_TILING

    def _geom(self, descs, attrs):
        q, k, v = descs[:3]
        state, g, beta = (descs[i] if len(descs) > i else None for i in (3, 4, 5))
        rule = str(self.attr(attrs, "update_rule"))
        hq, hkv = int(self.attr(attrs, "q_num_heads")), int(self.attr(attrs, "kv_num_heads"))
        if rule not in RULES:
            raise OpError(f"update_rule '{rule}' is not one of {', '.join(RULES)}")
        if hq <= 0 or hkv <= 0 or hq % hkv:
            raise OpError(f"q_num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
        if len(q.shape) != 3 or len(k.shape) != 3 or len(v.shape) != 3 or q.shape[:2] != k.shape[:2] \
                or v.shape[:2] != q.shape[:2]:
            raise OpError(f"query {list(q.shape)}, key {list(k.shape)}, value {list(v.shape)} must be [B, T, H*D]")
        if q.shape[2] % hq or k.shape[2] % hkv or v.shape[2] % hkv or q.shape[2] // hq != k.shape[2] // hkv:
            raise OpError(f"hidden sizes {q.shape[2]}, {k.shape[2]}, {v.shape[2]} do not split into {hq} / {hkv} "
                          "heads of one key size")
        b, t = q.shape[:2]
        dk, dv = k.shape[2] // hkv, v.shape[2] // hkv
        gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
        if gated != (g is not None) or delta != (beta is not None):
            raise OpError(f"update_rule '{rule}' needs {'decay' if gated else 'no decay'} and "
                          f"{'beta' if delta else 'no beta'}")
        if g is not None and (len(g.shape) != 3 or g.shape[:2] != (b, t) or g.shape[2] not in (hkv, hkv * dk)):
            raise OpError(f"decay {list(g.shape)} must be [{b}, {t}, {hkv}] or [{b}, {t}, {hkv * dk}]")
        if beta is not None and (len(beta.shape) != 3 or beta.shape[:2] != (b, t) or beta.shape[2] not in (hkv, 1)):
            raise OpError(f"beta {list(beta.shape)} must be [{b}, {t}, {hkv}] or [{b}, {t}, 1]")
        if state is not None and state.shape != (b, hkv, dk, dv):
            raise OpError(f"past state {list(state.shape)} must be [{b}, {hkv}, {dk}, {dv}]")
        return b, t, hq, hkv, dk, dv, gated, delta

    def infer(self, node: Node) -> list[TensorDesc]:
        descs = [node.input_desc(i) for i in range(len(node.inputs))]
        b, t, hq, hkv, dk, dv, _, _ = self._geom(descs, node.attrs)
        state = descs[3] if len(descs) > 3 else None
        return [TensorDesc((b, t, hq * dv), descs[0].dtype, "ND", "ND"),
                TensorDesc((b, hkv, dk, dv), (state or descs[0]).dtype, "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        b, t, hq, hkv, dk, dv, gated, delta = self._geom(ctx.inputs, ctx.attrs)
        block_dim, per = split_rows(b * hkv, cores_for(self, ctx.soc))
        scale = float(self.attr(ctx.attrs, "scale")) or 1.0 / np.sqrt(dk)
        g = ctx.inputs[4] if len(ctx.inputs) > 4 else None
        data = GDR_TILING.pack(b=b, t=t, hq=hq, hkv=hkv, dk=dk, dv=dv, units_per_block=per, scale=scale,
                               gated=int(gated), delta=int(delta),
                               decay_per_dim=int(g is not None and g.shape[2] == hkv * dk))
        return TilingResult(block_dim, 2 * int(gated) + int(delta), data)

    tiling_keys = (0, 1, 2, 3)   # linear, delta, gated, gated_delta

    def compute(self, args: KernelArgs, inputs):
        s = args.tiling
        b, t, hq, hkv, dk, dv = s["b"], s["t"], s["hq"], s["hkv"], s["dk"], s["dv"]
        q, k, v = inputs[:3]
        state_in, g, beta = (inputs[i] if len(inputs) > i else None for i in (3, 4, 5))
        f = np.float32
        q4 = q.reshape(b, t, hq, dk).transpose(0, 2, 1, 3).astype(f)          # [B, Hq, T, dk]
        k4 = k.reshape(b, t, hkv, dk).transpose(0, 2, 1, 3).astype(f)
        v4 = v.reshape(b, t, hkv, dv).transpose(0, 2, 1, 3).astype(f)
        state = np.zeros((b, hkv, dk, dv), f) if state_in is None else state_in.astype(f).copy()
        if s["gated"]:
            g4 = (g.reshape(b, t, hkv, dk) if s["decay_per_dim"] else g.reshape(b, t, hkv, 1)).transpose(0, 2, 1, 3)
            g4 = g4.astype(f)
        if s["delta"]:
            b4 = beta.reshape(b, t, beta.shape[2], 1).transpose(0, 2, 1, 3).astype(f)
        group = hq // hkv
        out = np.zeros((b, hq, t, dv), f)
        units = covered(b * hkv, s["units_per_block"], args.block_dim)
        sel = np.zeros((b, hkv), bool)
        sel.reshape(-1)[:units] = True                                           # the (batch, KV head) units covered
        for i in range(t):
            new = state
            if s["gated"]:
                new = new * np.exp(g4[:, :, i, :])[..., None]
            vt = v4[:, :, i, :]
            if s["delta"]:
                vt = b4[:, :, i, :] * (vt - np.einsum("bhdm,bhd->bhm", new, k4[:, :, i, :]))
            new = new + k4[:, :, i, :, None] * vt[:, :, None, :]
            state = np.where(sel[:, :, None, None], new, state)
            read = np.repeat(state, group, axis=1)
            o = s["scale"] * np.einsum("bhd,bhdm->bhm", q4[:, :, i, :], read)
            out[:, :, i, :] = np.where(np.repeat(sel, group, axis=1)[..., None], o, 0)
        y = out.transpose(0, 2, 1, 3).reshape(b, t, hq * dv)
        return [y.astype(args.outputs[0].dtype), state.astype(args.outputs[1].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        b, t, hq, hkv, dk, dv, gated, delta = self._geom(ctx.inputs, ctx.attrs)
        per_token = hkv * dk * dv * (2 + int(gated) + 2 * int(delta)) + hq * dk * dv * 2
        moved = sum(d.nbytes for d in ctx.inputs if d is not None) + sum(d.nbytes for d in ctx.outputs)
        return Work(vector_ops=b * t * per_token, bytes=moved, dtype=ctx.inputs[0].dtype)


CONV_TILING = TilingStruct(("batch", "I"), ("channels", "I"), ("length", "I"), ("k", "I"), ("rows_per_block", "I"),
                           ("silu", "B"))


@register
class CausalConv1d(OpSpec):
    op_type = "CausalConv1d"
    inputs = ("x", "weight", "bias?", "conv_state?")
    outputs = ("y", "conv_state_out")
    attrs = {"activation": "none"}
    dtypes = FLOATS
    tiling_struct = CONV_TILING

    def _geom(self, descs, attrs):
        x, w = descs[:2]
        bias, state = (descs[i] if len(descs) > i else None for i in (2, 3))
        if str(self.attr(attrs, "activation")) not in ("none", "silu", "swish"):
            raise OpError(f"activation '{self.attr(attrs, 'activation')}' is not none, silu or swish")
        if len(x.shape) != 3 or len(w.shape) != 3 or w.shape[:2] != (x.shape[1], 1) or w.shape[2] < 1:
            raise OpError(f"input {list(x.shape)} / weight {list(w.shape)} must be [B, C, L] / [C, 1, K]")
        b, c, length = x.shape
        k = w.shape[2]
        if bias is not None and bias.shape != (c,):
            raise OpError(f"bias {list(bias.shape)} must be [{c}]")
        if state is not None and state.shape != (b, c, k - 1):
            raise OpError(f"past state {list(state.shape)} must be [{b}, {c}, {k - 1}]")
        return b, c, length, k

    def infer(self, node: Node) -> list[TensorDesc]:
        descs = [node.input_desc(i) for i in range(len(node.inputs))]
        b, c, length, k = self._geom(descs, node.attrs)
        x = descs[0]
        return [TensorDesc(x.shape, x.dtype, "ND", "ND"), TensorDesc((b, c, k - 1), x.dtype, "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        b, c, length, k = self._geom(ctx.inputs, ctx.attrs)
        block_dim, per = split_rows(b * c, cores_for(self, ctx.soc))
        silu = int(str(self.attr(ctx.attrs, "activation")) != "none")
        return TilingResult(block_dim, silu, CONV_TILING.pack(batch=b, channels=c, length=length, k=k,
                                                              rows_per_block=per, silu=silu))

    tiling_keys = (0, 1)

    def compute(self, args: KernelArgs, inputs):
        s = args.tiling
        b, c, length, k = s["batch"], s["channels"], s["length"], s["k"]
        x, w = inputs[:2]
        bias, state = (inputs[i] if len(inputs) > i else None for i in (2, 3))
        dt = args.outputs[0].dtype
        past = np.zeros((b, c, k - 1), x.dtype) if state is None else state
        padded = np.concatenate([past, x], axis=2)                                # [B, C, K-1+L]
        rows = padded.reshape(b * c, padded.shape[2]).astype(np.float32)
        taps = np.broadcast_to(w.reshape(c, k).astype(np.float32), (b, c, k)).reshape(b * c, k)
        end = covered(b * c, s["rows_per_block"], args.block_dim)                 # rows are independent
        y = np.zeros((b * c, length), np.float32)
        if end:
            win = np.lib.stride_tricks.sliding_window_view(rows[:end], k, axis=1)  # [rows, L, K]
            y[:end] = np.einsum("rlk,rk->rl", win, taps[:end])
            if bias is not None:
                y[:end] += np.tile(bias.astype(np.float32), b)[:end, None]
            if s["silu"]:
                y[:end] = y[:end].astype(dt).astype(np.float32)   # the conv output is rounded to x's dtype first
                y[:end] = y[:end] / (1.0 + np.exp(-y[:end]))
        out_state = padded[:, :, padded.shape[2] - (k - 1):]
        return [y.reshape(b, c, length).astype(dt), np.ascontiguousarray(out_state).astype(dt)]

    def work(self, ctx: TilingContext) -> Work:
        b, c, length, k = self._geom(ctx.inputs, ctx.attrs)
        w = super().work(ctx)
        w.vector_ops = b * c * length * (2 * k + 4)
        return w
