"""The tiny KV-cache decoder the --generate tests compile (tools/kv_decoder.py, random weights): its shapes, the atc-py flags of its two cache layouts, a prompt file, its mask forms and the edits that make a mask attend the wrong keys."""
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


def static_decoder(mask="where", scale="mul", mask_min=None):
    """The static-cache decoder with its mask written as kv_decoder.MASK_FORMS[mask], scaled as SCALE_FORMS[scale],
    masked scores given `mask_min` (float32's lowest when None)."""
    from tools.kv_decoder import MASK_MIN
    return build(SHAPE, "static", seed=3, mask=mask, scale=scale, mask_min=MASK_MIN if mask_min is None else mask_min)


def shift_mask_position(model: onnx.ModelProto, by: int) -> onnx.ModelProto:
    """The decoder's mask compares the keys against position + `by` (a mask that attends the wrong keys)."""
    from onnx import helper, numpy_helper
    model.graph.initializer.append(numpy_helper.from_array(np.array(by, np.int64), "mask_shift"))
    node = next(n for n in model.graph.node if n.name == "/model/LessOrEqual")
    shifted = "/model/mask_shift_output_0"
    k = list(model.graph.node).index(node)
    model.graph.node.insert(k, helper.make_node("Add", [node.input[1], "mask_shift"], [shifted],
                                                name="/model/mask_shift"))
    node.input[1] = shifted
    return model


def replace_initializer(model: onnx.ModelProto, name: str, value: np.ndarray) -> onnx.ModelProto:
    from onnx import numpy_helper
    for k, init in enumerate(model.graph.initializer):
        if init.name == name:
            model.graph.initializer[k].CopyFrom(numpy_helper.from_array(value, name))
            return model
    raise KeyError(name)
