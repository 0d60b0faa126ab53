"""The decoder an LLM server runs, as an ONNX model atc-py compiles: every request's tokens in one
token-flattened batch, the paged KV cache, the fused kernels vllm-ascend calls through torch_npu.

Inputs (T tokens of S sequences in the step; both dimensions dynamic):
  input_ids int64[T], positions int64[T], slot_mapping int64[T] (each token's cache slot),
  block_tables int64[S, max_blocks], actual_seq_lengths int64[S] (cumulative query tokens per sequence),
  actual_seq_lengths_kv int64[S] (each sequence's context after the step), logits_indices int64[S] (the row of
  each sequence's last token), key_cache.<i> / value_cache.<i> [num_blocks, block_size, kv_heads, head_dim];
  and every weight (DecoderConfig.weight_shapes, projections [in, out]) as an input: a server's weights are
  device tensors loaded once and handed to each kernel (eager) or bound to the captured graph, not constants
  folded into it, so the .om holds no weight bytes whatever the model's size and `--load-format dummy` needs none.
Outputs: logits [S, vocab] and present.key_cache.<i> / present.value_cache.<i> (the caches after
ReshapeAndCache wrote the step's keys and values; the engine keeps them on the device).

Per layer: RMSNormalization, one qkv MatMul (+ bias for Qwen2), per-head RMSNorm of q and k (Qwen3),
RotaryEmbedding (rotate_half, positions from `positions`), ascend.ReshapeAndCache, ascend.PagedAttention
(causal, GQA), the o projection and residual Add, RMSNormalization, one gate_up MatMul, SwiGLU, down MatMul,
residual Add; then the final norm, the last token of each sequence (Gather by logits_indices) and the lm_head
(the embedding's transpose when tied).

Tensor-parallel (tp > 1, tensor_parallel.py): the graph of one rank — its heads, its MLP slice, its vocabulary —
with the collectives vLLM's layers end in: HcomAllReduce after the embedding lookup, the o projection and the
down projection, HcomAllGather of the lm_head's logits; one more input, vocab_range int64[2] (the rank's
[start, end) of vocabulary ids), so that every rank runs the same .om."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .hf_config import DecoderConfig
from .tensor_parallel import shard

HCCL_DOMAIN = "ascend"     # where atc-py reads GE's Hcom* ops from in ONNX

OPSET = 28            # SwiGLU is an ONNX op from opset 28
ONNX_DTYPE = {"float16": TensorProto.FLOAT16, "float32": TensorProto.FLOAT}
STEP_INPUTS = ("input_ids", "positions", "slot_mapping", "block_tables", "actual_seq_lengths",
               "actual_seq_lengths_kv", "logits_indices")


def rope_tables(cfg: DecoderConfig, positions: int) -> tuple[np.ndarray, np.ndarray]:
    """cos / sin of every position's rotary angles, [positions, head_dim / 2] (rotate_half's halves)."""
    inv = 1.0 / (cfg.rope_theta ** (np.arange(0, cfg.head_dim, 2, dtype=np.float64) / cfg.head_dim))
    ang = np.arange(positions, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang).astype(cfg.dtype), np.sin(ang).astype(cfg.dtype)


def cache_inputs(cfg: DecoderConfig) -> list[str]:
    return [f"{kind}_cache.{i}" for i in range(cfg.num_layers) for kind in ("key", "value")]


def build_decoder(cfg: DecoderConfig, num_blocks: int, block_size: int, max_model_len: int,
                  tp: int = 1) -> onnx.ModelProto:
    """The ONNX decoder of `cfg` (one rank's of `tp`) over a cache of num_blocks blocks of block_size tokens."""
    dt = ONNX_DTYPE[cfg.dtype]
    max_blocks = -(-max_model_len // block_size)
    sh = shard(cfg, tp)
    n, kvh, d = sh.heads, sh.kv_heads, cfg.head_dim
    nodes: list = []
    inits: list = []

    def const(name: str, arr) -> str:
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op: str, ins: list[str], outs: list[str] | int = 1, domain: str = "", **attrs) -> list[str]:
        name = f"n{len(nodes)}_{op}"
        outs = [f"{name}:{k}" for k in range(outs)] if isinstance(outs, int) else outs
        nodes.append(helper.make_node(op, ins, outs, name=name, domain=domain, **attrs))
        return outs

    def one(op, ins, **attrs) -> str:
        return node(op, ins, **attrs)[0]

    T, S = "num_tokens", "num_seqs"
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [T]),
              helper.make_tensor_value_info("positions", TensorProto.INT64, [T]),
              helper.make_tensor_value_info("slot_mapping", TensorProto.INT64, [T]),
              helper.make_tensor_value_info("block_tables", TensorProto.INT64, [S, max_blocks]),
              helper.make_tensor_value_info("actual_seq_lengths", TensorProto.INT64, [S]),
              helper.make_tensor_value_info("actual_seq_lengths_kv", TensorProto.INT64, [S]),
              helper.make_tensor_value_info("logits_indices", TensorProto.INT64, [S])]
    cache_shape = [num_blocks, block_size, kvh, d]
    for name in cache_inputs(cfg):
        inputs.append(helper.make_tensor_value_info(name, dt, cache_shape))
    if tp > 1:
        inputs.append(helper.make_tensor_value_info("vocab_range", TensorProto.INT64, [2]))
    for name, shape in sh.weight_shapes().items():
        inputs.append(helper.make_tensor_value_info(name, dt, list(shape)))
    outputs = [helper.make_tensor_value_info("logits", dt, [S, cfg.vocab_size])]

    cos, sin = rope_tables(cfg, max_model_len)
    const("rope.cos", cos)
    const("rope.sin", sin)
    const("shape.q", np.array([-1, n, d], np.int64))
    const("shape.kv", np.array([-1, kvh, d], np.int64))
    const("shape.flat_q", np.array([1, -1, sh.q_size], np.int64))
    const("shape.flat_kv", np.array([1, -1, sh.kv_size], np.int64))
    const("shape.rows_q", np.array([-1, sh.q_size], np.int64))
    const("split.qkv", np.array([sh.q_size, sh.kv_size, sh.kv_size], np.int64))
    const("split.gate_up", np.array([sh.intermediate, sh.intermediate], np.int64))
    const("axis0", np.array([0], np.int64))
    eps = float(cfg.rms_norm_eps)
    pos = one("Unsqueeze", ["positions", "axis0"])

    def rope(x: str, shape_flat: str, heads: int) -> str:
        return one("RotaryEmbedding", [one("Reshape", [x, shape_flat]), "rope.cos", "rope.sin", pos],
                   num_heads=heads)

    def all_reduce(x: str) -> str:
        return x if tp == 1 else one("HcomAllReduce", [x], domain=HCCL_DOMAIN, reduction="sum",
                                     group="hccl_world_group", rank_size=tp)

    if tp == 1:
        x = one("Gather", ["model.embed_tokens.weight", "input_ids"], axis=0)
    else:   # VocabParallelEmbedding: the ids in this rank's range looked up, the others give zeros
        start, end = node("Split", ["vocab_range"], 2, axis=0, num_outputs=2)
        inside = one("And", [one("GreaterOrEqual", ["input_ids", start]), one("Less", ["input_ids", end])])
        local = one("Where", [inside, one("Sub", ["input_ids", start]), const("zero.i64", np.array(0, np.int64))])
        rows = one("Gather", ["model.embed_tokens.weight", local], axis=0)
        keep = one("Unsqueeze", [one("Cast", [inside], to=dt), const("axis1", np.array([1], np.int64))])
        x = all_reduce(one("Mul", [rows, keep]))
    for i in range(cfg.num_layers):
        p = f"model.layers.{i}"
        hn = one("RMSNormalization", [x, f"{p}.input_layernorm.weight"], axis=-1, epsilon=eps)
        qkv = one("MatMul", [hn, f"{p}.self_attn.qkv_proj.weight"])
        if cfg.qkv_bias:
            qkv = one("Add", [qkv, f"{p}.self_attn.qkv_proj.bias"])
        q, k, v = node("Split", [qkv, "split.qkv"], 3, axis=-1)
        if cfg.qk_norm:
            q = one("RMSNormalization", [one("Reshape", [q, "shape.q"]), f"{p}.self_attn.q_norm.weight"], axis=-1,
                    epsilon=eps)
            k = one("RMSNormalization", [one("Reshape", [k, "shape.kv"]), f"{p}.self_attn.k_norm.weight"], axis=-1,
                    epsilon=eps)
        q = one("Reshape", [rope(q, "shape.flat_q", n), "shape.q"])
        k = one("Reshape", [rope(k, "shape.flat_kv", kvh), "shape.kv"])
        v = one("Reshape", [v, "shape.kv"])
        kc, vc = node("ReshapeAndCache", [k, v, f"key_cache.{i}", f"value_cache.{i}", "slot_mapping"],
                      [f"present.key_cache.{i}", f"present.value_cache.{i}"], domain="ascend")
        attn = one("PagedAttention", [q, kc, vc, "block_tables", "actual_seq_lengths", "actual_seq_lengths_kv"],
                   domain="ascend", num_heads=n, num_key_value_heads=kvh, scale_value=float(1.0 / np.sqrt(d)))
        o = one("MatMul", [one("Reshape", [attn, "shape.rows_q"]), f"{p}.self_attn.o_proj.weight"])
        x = one("Add", [x, all_reduce(o)])
        hn = one("RMSNormalization", [x, f"{p}.post_attention_layernorm.weight"], axis=-1, epsilon=eps)
        gate, up = node("Split", [one("MatMul", [hn, f"{p}.mlp.gate_up_proj.weight"]), "split.gate_up"], 2, axis=-1)
        x = one("Add", [x, all_reduce(one("MatMul", [one("SwiGLU", [gate, up]), f"{p}.mlp.down_proj.weight"]))])
        for kind, out in (("key", kc), ("value", vc)):
            outputs.append(helper.make_tensor_value_info(out, dt, cache_shape))
    x = one("RMSNormalization", [x, "model.norm.weight"], axis=-1, epsilon=eps)
    last = one("Gather", [x, "logits_indices"], axis=0)
    head = "lm_head.weight"
    if cfg.tie_word_embeddings:
        head = one("Transpose", ["model.embed_tokens.weight"], perm=[1, 0])
    if tp == 1:
        node("MatMul", [last, head], ["logits"])
    else:   # ParallelLMHead: each rank's vocabulary columns, gathered [tp * S, V/tp] -> [S, V]
        part = one("MatMul", [last, head])
        gathered = one("HcomAllGather", [part], domain=HCCL_DOMAIN, group="hccl_world_group", rank_size=tp)
        by_rank = one("Reshape", [gathered, const("shape.by_rank", np.array([tp, -1, sh.vocab], np.int64))])
        rows = one("Reshape", [one("Transpose", [by_rank], perm=[1, 0, 2]),
                               const("shape.rows_v", np.array([0, tp * sh.vocab], np.int64))])
        if tp * sh.vocab == cfg.vocab_size:
            node("Identity", [rows], ["logits"])
        else:   # the padded ids of the last rank's range dropped
            node("Slice", [rows, const("v.start", np.array([0], np.int64)),
                           const("v.end", np.array([cfg.vocab_size], np.int64)), const("v.axis", np.array([1], np.int64))],
                 ["logits"])
    graph = helper.make_graph(nodes, "decoder", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid("ascend", 1)],
                              producer_name="om-run serve")
    model.ir_version = 11
    return model
