"""One rank's part of a tensor-parallel decoder (om_run/serve/tensor_parallel.py): vLLM's split of every weight,
the per-rank KV and weight bytes, the step's collectives, and a TP size that does not split the model refused
naming the dimension."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from atc_py.common.errors import AtcError
from om_run.serve.engine_config import tp_machine
from om_run.serve.hf_config import DecoderConfig
from om_run.serve.tensor_parallel import shard

CFG = DecoderConfig("Qwen2ForCausalLM", hidden_size=16, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=4,
                    intermediate_size=24, vocab_size=10, rms_norm_eps=1e-6, rope_theta=1e4,
                    max_position_embeddings=64, tie_word_embeddings=False, dtype="float16", qkv_bias=True,
                    qk_norm=False)


def _weights(cfg):
    rng = np.random.default_rng(0)
    return {n: rng.standard_normal(s).astype(np.float16) for n, s in cfg.weight_shapes().items()}


@pytest.mark.parametrize("tp", [2, 4])
def test_the_ranks_slices_put_back_together_are_the_whole_weights(tp):
    sh, w = shard(CFG, tp), _weights(CFG)
    ranks = [sh.rank_weights(w, r) for r in range(tp)]
    for r in ranks:
        assert {n: a.shape for n, a in r.items()} == sh.weight_shapes()
    d, q, kv = CFG.head_dim, CFG.q_size, CFG.kv_size
    qkv = "model.layers.0.self_attn.qkv_proj.weight"
    np.testing.assert_array_equal(np.concatenate([r[qkv][:, :sh.q_size] for r in ranks], axis=1), w[qkv][:, :q])
    # key heads: each rank's, or (tp 4 > 2 heads) each head on tp / kv_heads ranks in turn
    for r, part in enumerate(ranks):
        head = r // sh.kv_replicas * sh.kv_heads
        np.testing.assert_array_equal(part[qkv][:, sh.q_size:sh.q_size + sh.kv_size],
                                      w[qkv][:, q + head * d:q + head * d + sh.kv_size])
        np.testing.assert_array_equal(part[qkv][:, sh.q_size + sh.kv_size:],
                                      w[qkv][:, q + kv + head * d:q + kv + head * d + sh.kv_size])
    for name, axis in (("model.layers.1.self_attn.o_proj.weight", 0), ("model.layers.1.mlp.down_proj.weight", 0)):
        np.testing.assert_array_equal(np.concatenate([r[name] for r in ranks], axis=axis), w[name])
    gu = "model.layers.1.mlp.gate_up_proj.weight"
    i = sh.intermediate
    np.testing.assert_array_equal(np.concatenate([r[gu][:, :i] for r in ranks], axis=1), w[gu][:, :CFG.intermediate_size])
    np.testing.assert_array_equal(np.concatenate([r[gu][:, i:] for r in ranks], axis=1), w[gu][:, CFG.intermediate_size:])
    # the vocabulary: rows (embedding) and columns (lm_head) in rank order, the last rank's padded with zeros
    emb = np.concatenate([r["model.embed_tokens.weight"] for r in ranks])
    np.testing.assert_array_equal(emb[:CFG.vocab_size], w["model.embed_tokens.weight"])
    assert not emb[CFG.vocab_size:].any()
    head = np.concatenate([r["lm_head.weight"] for r in ranks], axis=1)
    np.testing.assert_array_equal(head[:, :CFG.vocab_size], w["lm_head.weight"])
    assert [list(sh.vocab_range(r)) for r in range(tp)][-1][1] == CFG.vocab_size
    np.testing.assert_array_equal(ranks[1]["model.norm.weight"], w["model.norm.weight"])


def test_per_rank_bytes_and_the_steps_collectives():
    sh = shard(CFG, 2)
    assert sh.kv_bytes_per_token() * 2 == CFG.kv_bytes_per_token()
    assert shard(CFG, 4).kv_bytes_per_token() == CFG.kv_bytes_per_token() // 2     # copies: one head per rank
    assert sh.weight_bytes() < CFG.weight_bytes()
    assert sh.collectives(tokens=5, seqs=3) == [("HcomAllReduce", 2 * 2 + 1, 5 * 16 * 2), ("HcomAllGather", 1, 3 * 5 * 2 * 2)]
    assert shard(CFG, 1).collectives(5, 3) == []


@pytest.mark.parametrize("change, tp, message", [
    ({}, 3, "4 attention heads (num_attention_heads) do not divide into 3 ranks"),
    ({"num_heads": 12, "num_kv_heads": 4, "intermediate_size": 24}, 3,
     "4 key/value heads (num_key_value_heads) neither divide into 3 ranks"),
    ({"intermediate_size": 25}, 2, "intermediate_size 25 does not divide into 2 ranks"),
    ({}, 0, "at least 1"),
])
def test_a_tp_that_does_not_split_the_model_names_the_dimension(change, tp, message):
    with pytest.raises(AtcError, match="E10001") as e:
        shard(dataclasses.replace(CFG, **change), tp)
    assert message in str(e.value)


class _Eng:
    engine, soc_version = "vllm", "Ascend910B1"

    def __init__(self, tp):
        self.tp = tp


def test_the_ranks_machine_is_the_socs_product_and_must_hold_them():
    assert tp_machine({}, _Eng(8)).name == "atlas-800-a2"
    with pytest.raises(AtcError, match="has 8 NPUs: a tensor-parallel group of 16 does not fit"):
        tp_machine({}, _Eng(16))
    with pytest.raises(AtcError, match="its devices are Ascend310P3"):
        tp_machine({"topology": "atlas-300i-duo"}, _Eng(2))
