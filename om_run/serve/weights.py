"""`--load-format auto`: a Hugging Face folder's safetensors read (the format is a little-endian u64 header length,
a JSON header of name -> dtype, shape, byte span, then the bytes) and turned into the decoder's inputs the way
vLLM merges them: q, k and v into one qkv projection, gate and up into one, every projection [in, out].
Every header field is checked against the file before it sizes or indexes anything."""
from __future__ import annotations

import json
import math
import mmap
import os

import numpy as np

from atc_py.common.errors import AtcError

from .hf_config import DecoderConfig

HEADER_MAX = 100 << 20            # safetensors' own limit on the JSON header
DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def _bad(path: str, reason: str) -> AtcError:
    return AtcError("E10041", path=path, reason=reason)


def _bf16():
    import ml_dtypes
    return ml_dtypes.bfloat16


def read_safetensors(path: str) -> dict[str, np.ndarray]:
    """Every tensor of one .safetensors file, as arrays over the mapped file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise _bad(path, f"cannot open it ({exc.strerror or exc})") from None
    try:
        size = os.fstat(fd).st_size
        if size < 8:
            raise _bad(path, f"{size} bytes: shorter than the 8-byte header length")
        m = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
    n = int.from_bytes(m[:8], "little")
    if n > HEADER_MAX or 8 + n > size:
        raise _bad(path, f"the header claims {n} bytes; the file has {size}")
    try:
        header = json.loads(m[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(path, f"the header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise _bad(path, "the header is not a JSON object")
    base, out = 8 + n, {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(t, dict) or not isinstance(t.get("shape"), list) or not isinstance(t.get("data_offsets"),
                                                                                             list):
            raise _bad(path, f"tensor {name!r} has no shape / data_offsets")
        dt = _bf16() if t.get("dtype") == "BF16" else DTYPES.get(t.get("dtype"))
        if dt is None:
            raise _bad(path, f"tensor {name!r} has dtype {t.get('dtype')!r}, which the decoder does not read")
        shape = t["shape"]
        offs = t["data_offsets"]
        if (not all(isinstance(d, int) and 0 <= d < 1 << 31 for d in shape) or len(offs) != 2
                or not all(isinstance(o, int) for o in offs)):
            raise _bad(path, f"tensor {name!r} has a malformed shape {shape} or span {offs}")
        begin, end = offs
        nbytes = math.prod(shape) * np.dtype(dt).itemsize
        if begin < 0 or end - begin != nbytes or base + end > size:
            raise _bad(path, f"tensor {name!r} spans bytes {begin}..{end} of a {size - base}-byte data section, "
                             f"{nbytes} bytes needed for {shape}")
        out[name] = np.frombuffer(m, dt, math.prod(shape), base + begin).reshape(shape)
    return out


def read_folder(model_dir: str) -> dict[str, np.ndarray]:
    """model.safetensors, or the shards model.safetensors.index.json lists."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.isfile(index):
        try:
            with open(index, encoding="utf-8") as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise _bad(index, f"not a safetensors index ({exc})") from None
        if any(os.path.basename(p) != p for p in files):
            raise _bad(index, "a shard name has a directory part")
    else:
        files = ["model.safetensors"]
    out: dict[str, np.ndarray] = {}
    for name in files:
        path = os.path.join(model_dir, name)
        if not os.path.isfile(path):
            raise _bad(path, "missing: --load-format auto reads the folder's safetensors (--load-format dummy "
                             "runs without weights)")
        out.update(read_safetensors(path))
    return out


def decoder_weights(cfg: DecoderConfig, model_dir: str) -> dict[str, np.ndarray]:
    """The decoder's weight inputs (DecoderConfig.weight_shapes) from the folder's Hugging Face tensors."""
    hf = read_folder(model_dir)

    def get(name: str) -> np.ndarray:
        if name not in hf:
            raise _bad(model_dir, f"the safetensors have no tensor {name!r}")
        return np.asarray(hf[name], np.float32)
    out = {"model.embed_tokens.weight": get("model.embed_tokens.weight"), "model.norm.weight": get("model.norm.weight")}
    for i in range(cfg.num_layers):
        p = f"model.layers.{i}"
        a, m = f"{p}.self_attn", f"{p}.mlp"
        out[f"{p}.input_layernorm.weight"] = get(f"{p}.input_layernorm.weight")
        out[f"{p}.post_attention_layernorm.weight"] = get(f"{p}.post_attention_layernorm.weight")
        out[f"{a}.qkv_proj.weight"] = np.concatenate([get(f"{a}.{x}_proj.weight").T for x in "qkv"], axis=1)
        if cfg.qkv_bias:
            out[f"{a}.qkv_proj.bias"] = np.concatenate([get(f"{a}.{x}_proj.bias") for x in "qkv"])
        if cfg.qk_norm:
            out[f"{a}.q_norm.weight"] = get(f"{a}.q_norm.weight")
            out[f"{a}.k_norm.weight"] = get(f"{a}.k_norm.weight")
        out[f"{a}.o_proj.weight"] = get(f"{a}.o_proj.weight").T
        out[f"{m}.gate_up_proj.weight"] = np.concatenate([get(f"{m}.gate_proj.weight").T, get(f"{m}.up_proj.weight").T],
                                                         axis=1)
        out[f"{m}.down_proj.weight"] = get(f"{m}.down_proj.weight").T
    if not cfg.tie_word_embeddings:
        out["lm_head.weight"] = get("lm_head.weight").T
    for name, shape in cfg.weight_shapes().items():
        if out[name].shape != tuple(shape):
            raise _bad(model_dir, f"{name} is {list(out[name].shape)}, config.json's dimensions make it {list(shape)}")
        out[name] = np.ascontiguousarray(out[name], cfg.dtype)
    return out
