"""Small LLaMA-shaped decoders with a KV cache, exported the way users export them (optimum's
`text-generation-with-past` / onnxruntime-genai naming), random weights.

    python -m tools.kv_decoder OUT_DIR [--layout growing|static] [--layers 2 --hidden 64 --heads 4 --vocab 256
                                        --intermediate 172 --max-cache 32 --seed 0]

Both layouts take `input_ids` [batch, sequence_length] (int64) and `position_ids` (int64, the tokens' absolute
positions), and give `logits` [batch, sequence_length, vocab]; per layer i, `past_key_values.i.key` / `.value` in
and `present.i.key` / `.value` out, [batch, heads, length, head_dim]:
  * growing: the past has `past_sequence_length` positions (0 at prefill) and the present one more per new token
    (Concat), with `attention_mask` [batch, past_sequence_length + sequence_length] (1 = attend);
  * static: the cache always holds `max_cache` positions; the new keys and values are written at `cache_position`
    [sequence_length] (ScatterND) and positions past it are masked — every shape static, one token a step.
Attention is decomposed as exporters write it (MatMul, Mul by 1/sqrt(d), Add of the mask, Softmax, MatMul), with a
learned position embedding (Gather by position_ids) instead of rotary, RMSNorm and a SwiGLU MLP. A
`genai_config.json` (onnxruntime-genai's format) is written beside the model. `build` also writes the other mask and
scale forms exporters use (MASK_FORMS, SCALE_FORMS; `mask_min` the value masked scores get), the same attention in
each.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass

import numpy as np

from tools.onnx_nodes import NodeList

MASK_MIN = float(np.finfo(np.float32).min)   # what exporters fill masked scores with
# how the additive mask [batch, 1, seq, keys] is made from `seen` (key <= position, and attention_mask when growing)
MASK_FORMS = {
    "where": "Where(seen, 0, min)",
    "one_minus": "(1 - Cast(seen, float)) * min",
    "less": "Cast(position < key, float) * min",
    "greater": "Cast(key > position, float) * min",
}
# where the scale 1/sqrt(d) goes: on the scores before the mask is added, or on their sum
SCALE_FORMS = {
    "mul": "Mul(Q K^T, 1/sqrt(d)) + mask",
    "div": "Div(Q K^T, sqrt(d)) + mask",
    "mul_before": "Mul(Q K^T + mask, 1/sqrt(d))",
    "div_before": "Div(Q K^T + mask, sqrt(d))",
}


@dataclass(frozen=True)
class KvShape:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    intermediate: int = 172
    vocab: int = 256
    max_cache: int = 32        # static: the cache's length; growing: the position table's length

    def __post_init__(self):
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not a multiple of heads {self.heads}")
        if min(self.layers, self.hidden, self.heads, self.intermediate, self.vocab, self.max_cache) < 1:
            raise ValueError("every size is at least 1")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def _weights(shape: KvShape, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h, i = shape.hidden, shape.intermediate

    def w(*dims, fan_in=None):
        return (rng.standard_normal(dims) / np.sqrt(fan_in or dims[0])).astype(np.float32)
    out = {"model.embed_tokens.weight": w(shape.vocab, h, fan_in=1),
           "model.embed_positions.weight": w(shape.max_cache, h, fan_in=4)}
    for k in range(shape.layers):
        p = f"model.layers.{k}"
        out[f"{p}.input_layernorm.weight"] = (1 + 0.1 * rng.standard_normal(h)).astype(np.float32)
        for m in "qkvo":
            out[f"{p}.self_attn.{m}_proj"] = w(h, h)
        out[f"{p}.post_attention_layernorm.weight"] = (1 + 0.1 * rng.standard_normal(h)).astype(np.float32)
        out[f"{p}.mlp.gate_proj"], out[f"{p}.mlp.up_proj"] = w(h, i), w(h, i)
        out[f"{p}.mlp.down_proj"] = w(i, h)
    out["model.norm.weight"] = np.ones(h, np.float32)
    out["lm_head"] = w(h, shape.vocab)
    return out


def build(shape: KvShape = KvShape(), layout: str = "growing", seed: int = 0, mask: str = "where",
          scale: str = "mul", mask_min: float = MASK_MIN):
    """The decoder as an onnx ModelProto, its mask written as MASK_FORMS[mask] and scaled as SCALE_FORMS[scale]."""
    from onnx import TensorProto, helper, numpy_helper
    if layout not in ("growing", "static"):
        raise ValueError(f"layout {layout}: growing or static")
    if mask not in MASK_FORMS or scale not in SCALE_FORMS:
        raise ValueError(f"mask {mask} / scale {scale}: one of {sorted(MASK_FORMS)} / {sorted(SCALE_FORMS)}")
    static = layout == "static"
    n, d, hid = shape.heads, shape.head_dim, shape.hidden
    weights = _weights(shape, seed)
    consts = {"pow_two": np.array(2.0, np.float32), "rms_eps": np.array(1e-6, np.float32),
              "attn_scale": np.array(1 / np.sqrt(d), np.float32), "heads_shape": np.array([0, -1, n, d], np.int64),
              "hidden_shape": np.array([0, -1, hid], np.int64), "zero_f": np.array(0.0, np.float32),
              "mask_min": np.array(mask_min, np.float32),
              "axes_1": np.array([1], np.int64), "axes_2": np.array([2], np.int64), "axes_0": np.array([0], np.int64)}
    if not static:
        consts.update(one_i=np.array(1, np.int64), zero_i=np.array(0, np.int64))
    if mask != "where":
        del consts["zero_f"]
    if mask == "one_minus":
        consts["one_f"] = np.array(1.0, np.float32)
    if scale.startswith("div"):
        del consts["attn_scale"]
        consts["attn_sqrt"] = np.array(np.sqrt(d), np.float32)
    if static:
        consts["cache_range"] = np.arange(shape.max_cache, dtype=np.int64)
        # ScatterND indices: (0, head, position) for every head; the position column comes from cache_position
        consts["head_index"] = np.stack([np.zeros(n, np.int64), np.arange(n, dtype=np.int64)], axis=1)
        consts["index_cols"] = np.array([n, 1], np.int64)
        consts["update_shape"] = np.array([n, d], np.int64)
    built = NodeList()
    nodes, node, rms_norm = built.nodes, built.node, built.rms_norm

    # the additive mask [batch, 1, seq, keys]: key j is seen by the token at position p when j <= p (and, growing,
    # when attention_mask[j] is 1)
    if static:
        keys = "cache_range"
    else:
        total = node("Gather", [node("Shape", ["attention_mask"], "/model/Shape"), "one_i"], "/model/Gather_total")
        keys = node("Range", ["zero_i", total, "one_i"], "/model/Range")
    key_row = node("Unsqueeze", [keys, "axes_0"], "/model/Unsqueeze_keys")                       # [1, keys]
    pos_col = node("Unsqueeze", ["position_ids", "axes_2"], "/model/Unsqueeze_pos")               # [b, s, 1]
    f32 = TensorProto.FLOAT
    if mask in ("where", "one_minus"):
        seen = node("LessOrEqual", [key_row, pos_col], "/model/LessOrEqual")                      # [b, s, keys]
    else:
        args = [pos_col, key_row] if mask == "less" else [key_row, pos_col]
        hidden = node(mask.capitalize(), args, f"/model/{mask.capitalize()}")                    # [b, s, keys]
    if not static:
        attended = node("Unsqueeze", [node("Cast", ["attention_mask"], "/model/Cast_mask", to=TensorProto.BOOL),
                                      "axes_1"], "/model/Unsqueeze_mask")                          # [b, 1, keys]
        if mask in ("where", "one_minus"):
            seen = node("And", [seen, attended], "/model/And")
        else:
            hidden = node("Or", [hidden, node("Not", [attended], "/model/Not")], "/model/Or")
    if mask == "where":
        add = node("Where", [seen, "zero_f", "mask_min"], "/model/Where")
    elif mask == "one_minus":
        unseen = node("Sub", ["one_f", node("Cast", [seen], "/model/Cast_seen", to=f32)], "/model/Sub_unseen")
        add = node("Mul", [unseen, "mask_min"], "/model/Mul_mask")
    else:
        add = node("Mul", [node("Cast", [hidden], "/model/Cast_hidden", to=f32), "mask_min"], "/model/Mul_mask")
    additive = node("Unsqueeze", [add, "axes_1"], "/model/Unsqueeze_4d")                          # [b, 1, s, keys]
    if static:
        pos_index = node("Reshape", [node("Expand", [node("Reshape", ["cache_position", "axes_1"],
                                                          "/model/Reshape_pos"), "index_cols"], "/model/Expand_pos"),
                                     "index_cols"], "/model/Reshape_pos_cols")                    # [heads, 1]
        indices = node("Concat", ["head_index", pos_index], "/model/Concat_index", axis=1)         # [heads, 3]

    x = node("Add", [node("Gather", ["model.embed_tokens.weight", "input_ids"], "/model/embed_tokens/Gather"),
                     node("Gather", ["model.embed_positions.weight", "position_ids"], "/model/embed_positions/Gather")],
             "/model/Add_embed")
    presents = []
    for k in range(shape.layers):
        p, scope = f"model.layers.{k}", f"/model/layers.{k}"
        a = rms_norm(x, f"{p}.input_layernorm.weight", f"{scope}/input_layernorm")
        heads = {}
        for m in "qkv":
            proj = node("MatMul", [a, f"{p}.self_attn.{m}_proj"], f"{scope}/self_attn/{m}_proj/MatMul")
            heads[m] = node("Transpose", [node("Reshape", [proj, "heads_shape"], f"{scope}/self_attn/Reshape_{m}")],
                            f"{scope}/self_attn/Transpose_{m}", perm=[0, 2, 1, 3])               # [b, n, s, d]
        cache = {}
        for m, io in (("k", "key"), ("v", "value")):
            past, present = f"past_key_values.{k}.{io}", f"present.{k}.{io}"
            if static:   # one new token: its [n, d] rows written at (0, head, cache_position)
                rows = node("Reshape", [heads[m], "update_shape"], f"{scope}/self_attn/Reshape_update_{m}")
                nodes.append(helper.make_node("ScatterND", [past, indices, rows], [present],
                                              name=f"{scope}/self_attn/ScatterND_{m}"))
            else:
                nodes.append(helper.make_node("Concat", [past, heads[m]], [present],
                                              name=f"{scope}/self_attn/Concat_{m}", axis=2))
            cache[m] = present
            presents.append(present)
        kt = node("Transpose", [cache["k"]], f"{scope}/self_attn/Transpose_kt", perm=[0, 1, 3, 2])
        scores = node("MatMul", [heads["q"], kt], f"{scope}/self_attn/MatMul")
        op, factor = ("Mul", "attn_scale") if scale.startswith("mul") else ("Div", "attn_sqrt")
        if scale.endswith("_before"):
            logits = node(op, [node("Add", [scores, additive], f"{scope}/self_attn/Add"), factor], f"{scope}/self_attn/{op}")
        else:
            logits = node("Add", [node(op, [scores, factor], f"{scope}/self_attn/{op}"), additive], f"{scope}/self_attn/Add")
        probs = node("Softmax", [logits], f"{scope}/self_attn/Softmax", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, cache["v"]], f"{scope}/self_attn/MatMul_1")],
                   f"{scope}/self_attn/Transpose_ctx", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "hidden_shape"], f"{scope}/self_attn/Reshape_ctx")
        x = node("Add", [x, node("MatMul", [ctx, f"{p}.self_attn.o_proj"], f"{scope}/self_attn/o_proj/MatMul")],
                 f"{scope}/Add")
        m = rms_norm(x, f"{p}.post_attention_layernorm.weight", f"{scope}/post_attention_layernorm")
        gate = node("MatMul", [m, f"{p}.mlp.gate_proj"], f"{scope}/mlp/gate_proj/MatMul")
        act = node("Mul", [gate, node("Sigmoid", [gate], f"{scope}/mlp/act_fn/Sigmoid")], f"{scope}/mlp/act_fn/Mul")
        up = node("MatMul", [m, f"{p}.mlp.up_proj"], f"{scope}/mlp/up_proj/MatMul")
        down = node("MatMul", [node("Mul", [act, up], f"{scope}/mlp/Mul"), f"{p}.mlp.down_proj"],
                    f"{scope}/mlp/down_proj/MatMul")
        x = node("Add", [x, down], f"{scope}/Add_1")
    x = rms_norm(x, "model.norm.weight", "/model/norm")
    nodes.append(helper.make_node("MatMul", [x, "lm_head"], ["logits"], name="/lm_head/MatMul"))

    i64 = TensorProto.INT64
    seq = 1 if static else "sequence_length"
    past_len = shape.max_cache if static else "past_sequence_length"
    present_len = shape.max_cache if static else "total_sequence_length"
    inputs = [helper.make_tensor_value_info("input_ids", i64, ["batch_size", seq])]
    if not static:
        inputs.append(helper.make_tensor_value_info("attention_mask", i64, ["batch_size", "total_sequence_length"]))
    inputs.append(helper.make_tensor_value_info("position_ids", i64, ["batch_size", seq]))
    if static:
        inputs.append(helper.make_tensor_value_info("cache_position", i64, [seq]))
    outputs = [helper.make_tensor_value_info("logits", f32, ["batch_size", seq, shape.vocab])]
    for k in range(shape.layers):
        for io in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{k}.{io}", f32,
                                                        ["batch_size", n, past_len, d]))
            outputs.append(helper.make_tensor_value_info(f"present.{k}.{io}", f32, ["batch_size", n, present_len, d]))
    inits = [numpy_helper.from_array(v, name) for name, v in {**weights, **consts}.items()]
    graph = helper.make_graph(nodes, f"kv_decoder_{layout}", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                             producer_name="atc-py kv_decoder")


def genai_config(shape: KvShape, layout: str, filename: str) -> dict:
    """onnxruntime-genai's genai_config.json for the decoder (its input/output naming, past_present_share_buffer
    for the static cache)."""
    inputs = {"input_ids": "input_ids", "position_ids": "position_ids",
              "past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"}
    if layout == "growing":
        inputs["attention_mask"] = "attention_mask"
    else:
        inputs["cache_position"] = "cache_position"
    return {"model": {
        "type": "llama", "vocab_size": shape.vocab, "context_length": shape.max_cache,
        "decoder": {"filename": filename, "num_hidden_layers": shape.layers, "num_attention_heads": shape.heads,
                    "num_key_value_heads": shape.heads, "head_size": shape.head_dim, "hidden_size": shape.hidden,
                    "inputs": inputs,
                    "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                                "present_value_names": "present.%d.value"}}},
        "search": {"do_sample": False, "max_length": shape.max_cache, "past_present_share_buffer": layout == "static"}}


def write(out_dir: str, shape: KvShape = KvShape(), layout: str = "growing", seed: int = 0,
          name: str | None = None) -> str:
    """OUT_DIR/<name>.onnx and OUT_DIR/genai_config.json; returns the model's path."""
    import onnx
    os.makedirs(out_dir, exist_ok=True)
    name = name or f"decoder_{layout}"
    path = os.path.join(out_dir, f"{name}.onnx")
    onnx.save_model(build(shape, layout, seed), path)
    with open(os.path.join(out_dir, "genai_config.json"), "w") as f:
        json.dump(genai_config(shape, layout, os.path.basename(path)), f, indent=1)
    return path


def greedy_reference(session, layout: str, shape: KvShape, prompt: np.ndarray, new_tokens: int) -> np.ndarray:
    """onnxruntime's greedy loop on the decoder (`session` an InferenceSession): the tokens om-run --generate must
    give. Growing: the whole prompt at once, then one token a step; static: one token a step throughout."""
    n, d = shape.heads, shape.head_dim
    length = 0 if layout == "growing" else shape.max_cache
    past = {f"past_key_values.{k}.{io}": np.zeros((1, n, length, d), np.float32)
            for k in range(shape.layers) for io in ("key", "value")}
    out, pos = [], 0
    feed_ids = [prompt] if layout == "growing" else [prompt[:, i:i + 1] for i in range(prompt.shape[1])]
    while len(out) < new_tokens:
        ids = feed_ids.pop(0) if feed_ids else np.array([[out[-1]]], np.int64)
        s = ids.shape[1]
        feeds = {"input_ids": ids, "position_ids": np.arange(pos, pos + s, dtype=np.int64)[None], **past}
        if layout == "growing":
            feeds["attention_mask"] = np.ones((1, pos + s), np.int64)
        else:
            feeds["cache_position"] = np.arange(pos, pos + s, dtype=np.int64)
        res = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
        pos += s
        past = {f"past_key_values.{k}.{io}": res[f"present.{k}.{io}"] for k in range(shape.layers)
                for io in ("key", "value")}
        if not feed_ids:
            out.append(int(np.argmax(res["logits"][0, -1])))
    return np.array([out], np.int64)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--layout", choices=["growing", "static"], default="growing")
    for k, v in KvShape().__dict__.items():
        ap.add_argument(f"--{k.replace('_', '-')}", type=int, default=v)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        shape = KvShape(**{k: getattr(args, k) for k in KvShape().__dict__})
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(write(args.out_dir, shape, args.layout, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
