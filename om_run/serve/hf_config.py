"""A decoder's dimensions from its Hugging Face folder (`config.json`), as vLLM reads them before loading any
weight: the architectures this server builds, every dimension checked before it sizes a graph or a buffer."""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass

from atc_py.common.errors import AtcError

# architecture -> (q/k/v bias, q/k RMSNorm per head): what differs between the families served
ARCHITECTURES = {
    "LlamaForCausalLM": (False, False),
    "MistralForCausalLM": (False, False),
    "Qwen2ForCausalLM": (True, False),
    "Qwen3ForCausalLM": (False, True),
}
# bfloat16 models run as float16: the same bytes and the same cube rate on the SoCs simulated
DTYPES = {"float16": "float16", "bfloat16": "float16", "float32": "float32", "half": "float16",
          "float": "float32"}
MAX_DIM = 1 << 20          # no real decoder has a dimension near this: a larger one is a broken file
MAX_LAYERS = 1024
CONFIG_BYTES = 1 << 22


@dataclass(frozen=True)
class DecoderConfig:
    architecture: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    tie_word_embeddings: bool
    dtype: str
    qkv_bias: bool
    qk_norm: bool
    rope_scaling: str = ""      # its type when the config scales rotary positions (timing is unaffected)

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim

    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every weight the decoder reads, [in, out] for the projections (one fused qkv and one gate_up per layer,
        as vLLM merges them), in vLLM's parameter names."""
        h, i = self.hidden_size, self.intermediate_size
        out: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (self.vocab_size, h)}
        for k in range(self.num_layers):
            p = f"model.layers.{k}"
            out[f"{p}.input_layernorm.weight"] = (h,)
            out[f"{p}.self_attn.qkv_proj.weight"] = (h, self.q_size + 2 * self.kv_size)
            if self.qkv_bias:
                out[f"{p}.self_attn.qkv_proj.bias"] = (self.q_size + 2 * self.kv_size,)
            if self.qk_norm:
                out[f"{p}.self_attn.q_norm.weight"] = (self.head_dim,)
                out[f"{p}.self_attn.k_norm.weight"] = (self.head_dim,)
            out[f"{p}.self_attn.o_proj.weight"] = (self.q_size, h)
            out[f"{p}.post_attention_layernorm.weight"] = (h,)
            out[f"{p}.mlp.gate_up_proj.weight"] = (h, 2 * i)
            out[f"{p}.mlp.down_proj.weight"] = (i, h)
        out["model.norm.weight"] = (h,)
        if not self.tie_word_embeddings:
            out["lm_head.weight"] = (h, self.vocab_size)
        return out

    def weight_bytes(self) -> int:
        from numpy import dtype
        item = dtype(self.dtype).itemsize
        return sum(math.prod(s) for s in self.weight_shapes().values()) * item

    def kv_bytes_per_token(self) -> int:
        """Key and value of one token over every layer."""
        return 2 * self.num_layers * self.kv_size * (4 if self.dtype == "float32" else 2)

    def with_layers(self, n: int) -> "DecoderConfig":
        d = asdict(self)
        d["num_layers"] = n
        return DecoderConfig(**d)


def _bad(path: str, reason: str) -> AtcError:
    return AtcError("E10041", path=path, reason=reason)


def _int(cfg: dict, key: str, path: str, default=None, low: int = 1, high: int = MAX_DIM) -> int:
    v = cfg.get(key, default)
    if v is None:
        raise _bad(path, f"config.json has no '{key}': the decoder's dimensions are needed to build it")
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise _bad(path, f"config.json's '{key}' is {v!r}: an integer in [{low}, {high}] is expected")
    return v


def _float(cfg: dict, key: str, path: str, default: float, low: float, high: float) -> float:
    v = cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not low <= float(v) <= high:
        raise _bad(path, f"config.json's '{key}' is {v!r}: a number in [{low}, {high}] is expected")
    return float(v)


def read_config(model_dir: str) -> DecoderConfig:
    """The DecoderConfig of a Hugging Face model folder (or of a config.json path)."""
    path = os.path.join(model_dir, "config.json") if os.path.isdir(model_dir) else model_dir
    try:
        with open(path, "rb") as f:
            raw = f.read(CONFIG_BYTES + 1)
    except OSError as exc:
        raise _bad(path, f"cannot read it ({exc.strerror or exc}); give a Hugging Face model folder with a "
                         "config.json") from None
    if len(raw) > CONFIG_BYTES:
        raise _bad(path, f"config.json is larger than {CONFIG_BYTES} bytes")
    try:
        cfg = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise _bad(path, f"config.json is not JSON{where}: {exc}") from None
    if not isinstance(cfg, dict):
        raise _bad(path, "config.json is not a JSON object")
    archs = cfg.get("architectures")
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
        raise _bad(path, "config.json has no 'architectures' list naming the model class")
    arch = next((a for a in archs if a in ARCHITECTURES), None)
    if arch is None:
        raise AtcError("E10001", value=archs[0], parameter="architectures",
                       reason=f"om-run serve builds {', '.join(sorted(ARCHITECTURES))}; {archs[0]} is not one of them")
    qkv_bias, qk_norm = ARCHITECTURES[arch]
    if arch in ("LlamaForCausalLM", "MistralForCausalLM") and cfg.get("attention_bias") is True:
        qkv_bias = True
    hidden = _int(cfg, "hidden_size", path)
    heads = _int(cfg, "num_attention_heads", path)
    kv_heads = _int(cfg, "num_key_value_heads", path, default=heads)
    head_dim = cfg.get("head_dim")
    if head_dim is None:
        if hidden % heads:
            raise _bad(path, f"hidden_size {hidden} is not a multiple of num_attention_heads {heads} and there is no "
                             "head_dim")
        head_dim = hidden // heads
    head_dim = _int({"head_dim": head_dim}, "head_dim", path, high=4096)
    if heads % kv_heads:
        raise _bad(path, f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    if head_dim % 2:
        raise _bad(path, f"head_dim {head_dim} is odd: rotary embeddings rotate pairs")
    dtype = cfg.get("torch_dtype", cfg.get("dtype", "float16"))
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise _bad(path, f"config.json's torch_dtype {dtype!r} is not one of {sorted(DTYPES)}")
    scaling = cfg.get("rope_scaling")
    if scaling is not None and not isinstance(scaling, dict):
        raise _bad(path, f"config.json's rope_scaling is {scaling!r}: an object or null is expected")
    kind = ""
    if isinstance(scaling, dict):
        kind = str(scaling.get("rope_type", scaling.get("type", "")))
    return DecoderConfig(
        architecture=arch, hidden_size=hidden, num_layers=_int(cfg, "num_hidden_layers", path, high=MAX_LAYERS),
        num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
        intermediate_size=_int(cfg, "intermediate_size", path), vocab_size=_int(cfg, "vocab_size", path, high=1 << 22),
        rms_norm_eps=_float(cfg, "rms_norm_eps", path, 1e-6, 0.0, 1.0),
        rope_theta=_float(cfg, "rope_theta", path, 10000.0, 1.0, 1e12),
        max_position_embeddings=_int(cfg, "max_position_embeddings", path, default=4096, high=1 << 24),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)), dtype=DTYPES[dtype],
        qkv_bias=qkv_bias, qk_norm=qk_norm, rope_scaling=kind if kind != "default" else "")
