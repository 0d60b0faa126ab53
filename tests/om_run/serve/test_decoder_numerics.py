"""The served decoder (paged KV cache, token-flattened batch) compiled by atc-py and run by om-run gives the logits
of a plain full-sequence forward pass written here in numpy (Hugging Face's Llama / Qwen2 / Qwen3 maths: RMSNorm,
rotate_half RoPE, GQA, causal softmax, SwiGLU), for prompts split into chunks and batched with other sequences'
decode tokens, in blocks scattered over the cache."""
from __future__ import annotations

import json

import numpy as np
import pytest

from om_run.serve.build import BuildSpec
from om_run.serve.decoder_graph import rope_tables
from om_run.serve.hf_config import read_config
from om_run.serve.numerics import ModelRunner

BS, NB, MML = 4, 24, 32


def write_config(folder, arch, **extra):
    cfg = {"architectures": [arch], "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
           "intermediate_size": 48, "num_hidden_layers": 2, "vocab_size": 64, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "max_position_embeddings": 64, "torch_dtype": "float32", **extra}
    (folder / "config.json").write_text(json.dumps(cfg))
    return read_config(str(folder))


def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def reference_logits(cfg, w, ids):
    """Full causal forward over one sequence: logits of every position [P, vocab] (float64)."""
    p, n, kvh, d = len(ids), cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    cos, sin = (t.astype(np.float64) for t in rope_tables(cfg, MML))
    c, s = cos[:p][:, None, :], sin[:p][:, None, :]

    def rope(x):
        a, b = x[..., :d // 2], x[..., d // 2:]
        return np.concatenate([a * c - b * s, b * c + a * s], -1)
    x = w["model.embed_tokens.weight"][ids].astype(np.float64)
    for i in range(cfg.num_layers):
        pre = f"model.layers.{i}"
        h = rms(x, w[f"{pre}.input_layernorm.weight"], cfg.rms_norm_eps)
        qkv = h @ w[f"{pre}.self_attn.qkv_proj.weight"]
        if cfg.qkv_bias:
            qkv = qkv + w[f"{pre}.self_attn.qkv_proj.bias"]
        q = qkv[:, :cfg.q_size].reshape(p, n, d)
        k = qkv[:, cfg.q_size:cfg.q_size + cfg.kv_size].reshape(p, kvh, d)
        v = qkv[:, cfg.q_size + cfg.kv_size:].reshape(p, kvh, d)
        if cfg.qk_norm:
            q = rms(q, w[f"{pre}.self_attn.q_norm.weight"], cfg.rms_norm_eps)
            k = rms(k, w[f"{pre}.self_attn.k_norm.weight"], cfg.rms_norm_eps)
        q, k = rope(q), rope(k)
        k, v = np.repeat(k, n // kvh, axis=1), np.repeat(v, n // kvh, axis=1)
        sc = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
        sc = np.where(np.tril(np.ones((p, p), bool)), sc, -np.inf)
        pr = np.exp(sc - sc.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        x = x + np.einsum("hqk,khd->qhd", pr, v).reshape(p, -1) @ w[f"{pre}.self_attn.o_proj.weight"]
        h = rms(x, w[f"{pre}.post_attention_layernorm.weight"], cfg.rms_norm_eps)
        gu = h @ w[f"{pre}.mlp.gate_up_proj.weight"]
        g, u = gu[:, :cfg.intermediate_size], gu[:, cfg.intermediate_size:]
        x = x + (g / (1 + np.exp(-g)) * u) @ w[f"{pre}.mlp.down_proj.weight"]
    x = rms(x, w["model.norm.weight"], cfg.rms_norm_eps)
    head = w["model.embed_tokens.weight"].T if cfg.tie_word_embeddings else w["lm_head.weight"]
    return x @ head


def runner(cfg, weights):
    return ModelRunner(cfg, BuildSpec("Ascend910B1", False, BS, MML, 16, 4, num_blocks=NB), weights)


@pytest.mark.parametrize("arch,extra", [("LlamaForCausalLM", {}), ("Qwen2ForCausalLM", {}),
                                        ("Qwen3ForCausalLM", {"head_dim": 16}),
                                        ("MistralForCausalLM", {"tie_word_embeddings": True})])
def test_chunked_and_batched_steps_match_a_full_forward(tmp_path, arch, extra):
    cfg = write_config(tmp_path, arch, **extra)
    rng = np.random.default_rng(3)
    w = {k: (rng.standard_normal(s) * (0.3 if len(s) > 1 else 0.05) + (1 if "norm" in k else 0)).astype(np.float32)
         for k, s in cfg.weight_shapes().items()}
    run = runner(cfg, w)
    a = [int(x) for x in rng.integers(0, cfg.vocab_size, 9)]
    b = [int(x) for x in rng.integers(0, cfg.vocab_size, 5)]
    ba, bb = [7, 2, 19], [11, 4]                       # scattered blocks
    ra, rb = reference_logits(cfg, w, a), reference_logits(cfg, w, b)
    out = run.logits([(b[:4], 0, bb)])                                   # B's prompt but its last token
    np.testing.assert_allclose(out[0], rb[3], rtol=2e-3, atol=2e-3)
    out = run.logits([(b[4:], 4, bb), (a[:5], 0, ba)])                   # B decodes beside A's first chunk
    np.testing.assert_allclose(out, np.stack([rb[4], ra[4]]), rtol=2e-3, atol=2e-3)
    out = run.logits([(a[5:9], 5, ba)])                                  # A's second chunk over its cached first
    np.testing.assert_allclose(out[0], ra[8], rtol=2e-3, atol=2e-3)


def test_unknown_architecture_and_missing_dimension_are_named(tmp_path):
    from atc_py.common.errors import AtcError
    with pytest.raises(AtcError, match="GPT2LMHeadModel is not one of them"):
        write_config(tmp_path, "GPT2LMHeadModel")
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 8}))
    with pytest.raises(AtcError, match="no 'num_attention_heads'"):
        read_config(str(tmp_path))
    (tmp_path / "config.json").write_text('{"architectures": ["LlamaForCausalLM"],\n "hidden_size": }')
    with pytest.raises(AtcError, match=r"not JSON \(line 2\)"):
        read_config(str(tmp_path))
