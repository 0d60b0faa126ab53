"""Files om-run serve reads are never trusted: config.json fields of every wrong type and size, and safetensors whose
header lies about its tensors, end in one AtcError naming the file (or a working run), never another exception
and never an allocation sized by the file."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from atc_py.common.errors import AtcError
from om_run.serve.hf_config import read_config
from om_run.serve.weights import decoder_weights, read_safetensors

BASE = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 96, "num_hidden_layers": 2, "vocab_size": 128, "max_position_embeddings": 64,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "torch_dtype": "float32"}
BAD_VALUES = [None, -1, 0, 1 << 40, 2.5, "64", [64], {"a": 1}, True, float("nan")]


@pytest.mark.parametrize("key", sorted(k for k in BASE if k != "architectures"))
def test_every_config_field_of_a_wrong_value_is_one_error(tmp_path, key):
    for value in BAD_VALUES:
        cfg = {**BASE, key: value}
        (tmp_path / "config.json").write_text(json.dumps(cfg))
        try:
            read_config(str(tmp_path))
        except AtcError:
            continue
        # a value the reader accepts must leave a consistent decoder
        c = read_config(str(tmp_path))
        assert c.num_heads % c.num_kv_heads == 0 and c.head_dim % 2 == 0 and c.hidden_size >= 1


@pytest.mark.parametrize("archs", [None, [], "Qwen2ForCausalLM", [1], ["BertModel"], {"x": 1}])
def test_architectures_that_are_not_a_served_decoder(tmp_path, archs):
    (tmp_path / "config.json").write_text(json.dumps({**BASE, "architectures": archs}))
    with pytest.raises(AtcError):
        read_config(str(tmp_path))


def safetensors(header: dict, data: bytes = b"") -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


@pytest.mark.parametrize("blob,message", [
    (b"\x01\x02", "shorter than the 8-byte header"),
    (struct.pack("<Q", 1 << 40) + b"{}", "the header claims"),
    (struct.pack("<Q", 4) + b"nope", "not JSON"),
    (safetensors({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}), "spans bytes"),
    (safetensors({"w": {"dtype": "F32", "shape": [1 << 30, 1 << 30], "data_offsets": [0, 16]}}, b"\0" * 16),
     "spans bytes"),
    (safetensors({"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}, b"\0" * 16), "malformed"),
    (safetensors({"w": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 16), "dtype"),
    (safetensors({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}, b"\0" * 16), "spans bytes"),
    (safetensors({"w": [1, 2]}), "no shape"),
])
def test_safetensors_that_lie_are_one_error(tmp_path, blob, message):
    path = tmp_path / "model.safetensors"
    path.write_bytes(blob)
    with pytest.raises(AtcError, match=message):
        read_safetensors(str(path))


def test_weights_of_the_wrong_shape_for_the_config_are_named(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(BASE))
    cfg = read_config(str(tmp_path))
    arrays = {}
    for name, shape in cfg.weight_shapes().items():
        arrays[name] = np.zeros(shape, np.float32)
    # the Hugging Face names: q/k/v and gate/up separate, [out, in]
    hf = {"model.embed_tokens.weight": np.zeros((128, 64), np.float32), "model.norm.weight": np.zeros(64, np.float32),
          "lm_head.weight": np.zeros((128, 64), np.float32)}
    for i in range(2):
        p = f"model.layers.{i}"
        for n, s in (("input_layernorm.weight", (64,)), ("post_attention_layernorm.weight", (64,)),
                     ("self_attn.q_proj.weight", (64, 64)), ("self_attn.k_proj.weight", (32, 64)),
                     ("self_attn.v_proj.weight", (32, 64)), ("self_attn.q_proj.bias", (64,)),
                     ("self_attn.k_proj.bias", (32,)), ("self_attn.v_proj.bias", (32,)),
                     ("self_attn.o_proj.weight", (64, 64)), ("mlp.gate_proj.weight", (96, 64)),
                     ("mlp.up_proj.weight", (96, 64)), ("mlp.down_proj.weight", (64, 96))):
            hf[f"{p}.{n}"] = np.zeros(s, np.float32)
    hf["model.layers.1.mlp.down_proj.weight"] = np.zeros((64, 95), np.float32)     # one column short
    header, data, off = {}, b"", 0
    for name, arr in hf.items():
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + arr.nbytes]}
        data += arr.tobytes()
        off += arr.nbytes
    (tmp_path / "model.safetensors").write_bytes(safetensors(header, data))
    with pytest.raises(AtcError, match="down_proj.weight is \\[95, 64\\]"):
        decoder_weights(cfg, str(tmp_path))
