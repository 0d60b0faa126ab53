"""The tiny KV-cache decoder the --generate tests compile (tools/kv_decoder.py, random weights): its shapes, the atc-py flags of its two cache layouts, a prompt file."""
from __future__ import annotations

import numpy as np
import onnx

from tools.kv_decoder import KvShape, build

SHAPE = KvShape(layers=2, hidden=32, heads=2, intermediate=48, vocab=64, max_cache=16)


PROMPT = np.array([[5, 17, 42, 3, 9]], np.int64)


NEW = 6


FP32 = ("--soc_version=Ascend910B1", "--precision_mode=force_fp32")


def growing_range(ids="1~16", past="0~16", total="1~16", shape=SHAPE) -> str:
    n, d = shape.heads, shape.head_dim
    parts = [f"input_ids:[1,{ids}]", f"attention_mask:[1,{total}]", f"position_ids:[1,{ids}]"]
    parts += [f"past_key_values.{k}.{io}:[1,{n},{past},{d}]" for k in range(shape.layers) for io in ("key", "value")]
    return ";".join(parts)


def static_shape(shape=SHAPE) -> str:
    n, d, m = shape.heads, shape.head_dim, shape.max_cache
    parts = ["input_ids:1,1", "position_ids:1,1", "cache_position:1"]
    parts += [f"past_key_values.{k}.{io}:1,{n},{m},{d}" for k in range(shape.layers) for io in ("key", "value")]
    return ";".join(parts)


def compile_decoder(atc, tmp_path, layout, model=None, extra=()):
    model = model or build(SHAPE, layout, seed=3)
    src = tmp_path / f"{layout}.onnx"
    onnx.save_model(model, src)
    flag = f"--input_shape_range={growing_range()}" if layout == "growing" else f"--input_shape={static_shape()}"
    code, out, err = atc(f"--model={src}", "--framework=5", f"--output={tmp_path / layout}", *FP32, flag, *extra)
    assert code == 0, out + err
    return tmp_path / f"{layout}.om", src


def prompt_file(tmp_path, ids=PROMPT):
    p = tmp_path / "prompt.npz"
    np.savez(p, input_ids=ids)
    return p
