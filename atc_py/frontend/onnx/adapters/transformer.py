"""Adapters for the transformer and LLM ops: Attention (opset 23-25), RotaryEmbedding, LinearAttention,
CausalConvWithState, FlexAttention (ai.onnx.preview). Their normalisations (RMSNormalization...) are in norm.py."""
from __future__ import annotations

import math

import numpy as np

from ....ir.dtypes import dtype_from_onnx
from ....ops.attention import UNBOUNDED
from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from ..onnx_lite import TensorProto


def _to_bnsd(ctx: NodeCtx, x, heads: int, what: str):
    """[B, S, heads * D] -> [B, heads, S, D] (a reshape and a transpose)."""
    b, s, hidden = x.desc.shape
    if heads <= 0 or hidden % heads:
        raise AdapterError(f"{what} hidden size {hidden} does not split into {heads} heads")
    split = ctx.emit("Reshape", [x, ctx.make_const(f"{what}_heads", np.array([b, s, heads, hidden // heads], np.int64))],
                     suffix=f"{what}_split")[0]
    return ctx.emit("TransposeD", [split], {"perm": [0, 2, 1, 3]}, suffix=f"{what}_bnsd")[0]


def _output(ctx: NodeCtx, i: int) -> bool:
    return len(ctx.node.output) > i and bool(ctx.node.output[i])


def _float_name(onnx_type: int, what: str) -> str:
    dt = dtype_from_onnx(onnx_type)
    if dt is None or dt.name not in ("float32", "float16", "float64", "bfloat16"):
        name = TensorProto.DataType.Name(onnx_type) if onnx_type in TensorProto.DataType.values() else str(onnx_type)
        raise AdapterError(f"{what} {name} is not a supported float type")
    return dt.name


@onnx_op("Attention")
class Attention(OnnxOp):
    """ONNX Attention -> FusedInferAttentionScore in BNSD (3-D inputs are split into heads first); past KV is
    concatenated in front of the new KV (present_key/value); the causal / sliding-window mask becomes the
    pre_tokens / next_tokens band, aligned top-left without a cache and bottom-right (to the cache length, or
    per batch to nonpad_kv_seqlen) with one."""

    @classmethod
    def _impl_v23(cls, ctx: NodeCtx):
        q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
        mask, past_k, past_v = ctx.input(3), ctx.input(4), ctx.input(5)
        nonpad = ctx.input(6)
        rank = len(q.desc.shape)
        if rank not in (3, 4) or len(k.desc.shape) != rank or len(v.desc.shape) != rank:
            raise AdapterError(f"Q {list(q.desc.shape)}, K {list(k.desc.shape)}, V {list(v.desc.shape)} must all be "
                               "3-D or all 4-D")
        if (past_k is None) != (past_v is None):
            raise AdapterError("past_key and past_value come together")
        if nonpad is not None and past_k is not None:
            raise AdapterError("nonpad_kv_seqlen cannot be combined with past_key / past_value")
        if rank == 3:
            hq, hkv = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
            if hq is None or hkv is None:
                raise AdapterError("3-D inputs need q_num_heads and kv_num_heads")
            q, k, v = _to_bnsd(ctx, q, int(hq), "q"), _to_bnsd(ctx, k, int(hkv), "k"), _to_bnsd(ctx, v, int(hkv), "v")
        if past_k is not None:
            k = ctx.emit("ConcatD", [past_k, k], {"concat_dim": 2}, suffix="present_key")[0]
            v = ctx.emit("ConcatD", [past_v, v], {"concat_dim": 2}, suffix="present_value")[0]
        b, n, sq, d = q.desc.shape
        scale = ctx.attr("scale")
        scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
        causal = bool(ctx.attr("is_causal", 0))
        left, right = int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))
        if left < -1 or right < -1:
            raise AdapterError(f"window sizes {left}, {right} must be -1 or >= 0")
        # ONNX aligns the band at key `offset + i` for query i: offset 0 without a cache, the past length with
        # an internal cache (a shift of the top-left band), nonpad_kv_seqlen[b] - Sq with an external one
        # (sparse_mode 4: the bottom-right band at each batch's valid length)
        shift = past_k.desc.shape[2] if past_k is not None else 0
        pre = left - shift if left >= 0 else UNBOUNDED
        nxt = 0 if causal else (right if right >= 0 else UNBOUNDED)
        attrs = {"num_heads": n, "num_key_value_heads": k.desc.shape[1], "scale_value": scale,
                 "input_layout": "BNSD", "pre_tokens": pre, "next_tokens": nxt + shift if nxt < UNBOUNDED else nxt,
                 "sparse_mode": 4 if nonpad is not None else 0,
                 "softcap": float(ctx.attr("softcap", 0.0) or 0.0),
                 "qk_output_mode": int(ctx.attr("qk_matmul_output_mode", 0)) if _output(ctx, 3) else -1}
        if ctx.attr("softmax_precision") is not None:
            attrs["softmax_precision"] = _float_name(int(ctx.attr("softmax_precision")), "softmax_precision")
        pse = atten = None
        if mask is not None:
            if mask.desc.dtype == "bool":   # ONNX: True = attend; CANN's atten_mask: True = masked out
                atten = ctx.emit("LogicalNot", [mask], suffix="mask")[0]
            else:
                pse = mask
        outs = ctx.emit("FusedInferAttentionScore", [q, k, v, pse, atten, nonpad], attrs,
                        n_out=2 if attrs["qk_output_mode"] >= 0 else 1, suffix="fia")
        y = outs[0]
        if rank == 3:
            t = ctx.emit("TransposeD", [y], {"perm": [0, 2, 1, 3]}, suffix="y_bsnd")[0]
            y = ctx.emit("Reshape", [t, ctx.make_const("y_shape", np.array([b, sq, -1], np.int64))], suffix="y")[0]
        return [y, k, v, outs[1] if len(outs) > 1 else None]


@onnx_op("RotaryEmbedding")
class RotaryEmbedding(OnnxOp):
    @classmethod
    def _impl_v23(cls, ctx: NodeCtx):
        attrs = {"mode": int(bool(ctx.attr("interleaved", 0))), "rotary_dim": int(ctx.attr("rotary_embedding_dim", 0)),
                 "num_heads": int(ctx.attr("num_heads", 0))}
        ins = [ctx.input(0), ctx.input(1), ctx.input(2)] + ([ctx.input(3)] if ctx.input(3) is not None else [])
        return ctx.emit("RotaryPositionEmbedding", ins, attrs)


@onnx_op("LinearAttention")
class LinearAttention(OnnxOp):
    @classmethod
    def _impl_v27(cls, ctx: NodeCtx):
        if ctx.attr("q_num_heads") is None or ctx.attr("kv_num_heads") is None:
            raise AdapterError("LinearAttention needs q_num_heads and kv_num_heads")
        attrs = {"q_num_heads": int(ctx.attr("q_num_heads")), "kv_num_heads": int(ctx.attr("kv_num_heads")),
                 "scale": float(ctx.attr("scale", 0.0) or 0.0), "update_rule": str(ctx.attr("update_rule", "gated_delta")),
                 "chunk_size": int(ctx.attr("chunk_size", 64))}
        return ctx.emit("RecurrentGatedDeltaRule", [ctx.input(i) for i in range(6)], attrs, n_out=2)


@onnx_op("CausalConvWithState")
class CausalConvWithState(OnnxOp):
    @classmethod
    def _impl_v27(cls, ctx: NodeCtx):
        return ctx.emit("CausalConv1d", [ctx.input(i) for i in range(4)],
                        {"activation": str(ctx.attr("activation", "none"))}, n_out=2)


def inline_subgraph(ctx: NodeCtx, graph, args: list, what: str):
    """Convert a GRAPH attribute's nodes in place with `args` as its inputs (a FlexAttention modifier); returns
    its one output. The subgraph's names are scoped: they are forgotten afterwards."""
    from ..adapter import ADAPTERS
    from ..converter import DOMAIN_ALIASES
    conv = ctx.conv
    if len(graph.input) != len(args) or len(graph.output) != 1:
        raise AdapterError(f"{what} must take {len(args)} input(s) and produce one output")
    defined = [i.name for i in graph.input] + [t.name for t in graph.initializer] + \
        [o for n in graph.node for o in n.output if o]
    saved = {name: conv.values[name] for name in defined if name in conv.values}
    saved_inits = {t.name: conv.initializers.get(t.name) for t in graph.initializer}
    try:
        for i, v in zip(graph.input, args):
            conv.values[i.name] = v
        for t in graph.initializer:
            conv.values.pop(t.name, None)
            conv.initializers[t.name] = t
        for k, n in enumerate(graph.node):
            domain = DOMAIN_ALIASES.get(n.domain, n.domain)
            cls, opset = ADAPTERS.get((domain, n.op_type)), conv.opsets.get(domain)
            if cls is None or opset is None or not cls.supports(opset):
                raise AdapterError(f"{what} uses {n.op_type} (domain {domain or 'ai.onnx'}), which is not supported")
            sub = NodeCtx(conv, n, conv.graph.unique_name(f"{ctx.name}_{what}_{n.name or n.op_type + str(k)}"))
            for o, v in zip(n.output, cls.impl_for(opset)(sub)):
                if o:
                    conv.values[o] = v
        return conv.value(graph.output[0].name)
    finally:
        for name in defined:
            conv.values.pop(name, None)
        conv.values.update(saved)
        for name, t in saved_inits.items():
            if t is None:
                conv.initializers.pop(name, None)
            else:
                conv.initializers[name] = t


@onnx_op("FlexAttention", "ai.onnx.preview")
class FlexAttention(OnnxOp):
    """softmax(score_mod(Q K^T * scale)) -> prob_mod -> @ V, built from the cube and vector ops (CANN has no op
    that takes user subgraphs): Q and K scaled by sqrt(scale) in their type, BatchMatMulV2, the scores cast to
    the softmax precision (fp32 for fp16/bf16 inputs), the score_mod subgraph inlined, SoftmaxV2, the prob_mod
    subgraph, BatchMatMulV2 with V, a cast back. GQA gathers each query head's KV head (h // group)."""

    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
        if any(len(x.desc.shape) != 4 for x in (q, k, v)):
            raise AdapterError("FlexAttention takes rank-4 Q, K and V")
        dt = q.desc.dtype
        hq, hkv = q.desc.shape[1], k.desc.shape[1]
        if hkv == 0 or hq % hkv or v.desc.shape[1] != hkv:
            raise AdapterError(f"{hq} query heads do not group over {hkv} KV heads")
        if hq != hkv:
            heads = ctx.make_const("kv_head", np.arange(hq, dtype=np.int64) // (hq // hkv))
            k = ctx.emit("GatherV2D", [k, heads], {"axis": 1}, suffix="k_groups")[0]
            v = ctx.emit("GatherV2D", [v, heads], {"axis": 1}, suffix="v_groups")[0]
        scale = ctx.attr("scale")
        scale = 1.0 / math.sqrt(q.desc.shape[3]) if scale is None else float(scale)
        root = ctx.make_const("sqrt_scale", np.array(np.sqrt(np.float32(scale)), dtype=dt))
        qs = ctx.emit("Mul", [q, root], suffix="q_scaled")[0]
        ks = ctx.emit("Mul", [k, root], suffix="k_scaled")[0]
        scores = ctx.emit("BatchMatMulV2", [qs, ks, None], {"adj_x1": False, "adj_x2": True}, suffix="scores")[0]
        prec = ctx.attr("softmax_precision")
        soft = _float_name(int(prec), "softmax_precision") if prec is not None else \
            ("float32" if dt in ("float16", "bfloat16") else dt)
        if soft != dt:
            scores = ctx.emit("Cast", [scores], {"dst_type": soft}, suffix="scores_cast")[0]
        if ctx.attr("score_mod") is not None:
            scores = inline_subgraph(ctx, ctx.attr("score_mod"), [scores], "score_mod")
        probs = ctx.emit("SoftmaxV2", [scores], {"axes": [-1]}, suffix="softmax")[0]
        if ctx.attr("prob_mod") is not None:
            probs = inline_subgraph(ctx, ctx.attr("prob_mod"), [probs], "prob_mod")
        if soft != dt:
            v = ctx.emit("Cast", [v], {"dst_type": soft}, suffix="v_cast")[0]
        y = ctx.emit("BatchMatMulV2", [probs, v, None], {"adj_x1": False, "adj_x2": False},
                     suffix="y" if soft != dt else "")[0]
        return ctx.emit("Cast", [y], {"dst_type": dt}) if soft != dt else [y]
