"""A LLaMA-shaped decoder as an ONNX model with external data, written tensor by tensor.

    python tools/llm_model.py OUT_DIR [--preset 7b] [--layers N --hidden H --intermediate I --vocab V --heads A
                                       --seq S --dtype float16|float32 --seed K]

Names and layout follow an optimum export of a LLaMA model: input `input_ids` [1, seq] (int64), output `logits`
[1, seq, vocab]; the embedding `model.embed_tokens.weight`, per layer `model.layers.<i>.input_layernorm.weight`
and `...post_attention_layernorm.weight` (RMSNorm as Pow, ReduceMean, Add, Sqrt, Reciprocal, Mul, Mul), the
projections as MatMul with transposed [in, out] initializers `onnx::MatMul_<k>` (q, k, v, o, gate, up, down),
attention without rotary embedding (a causal mask initializer), a SwiGLU MLP (x * Sigmoid(x) * up), the final
`model.norm.weight` and `lm_head`. Tensors of 1 KiB and more go to one `<name>.onnx.data` file (onnx's own
threshold), each at a 64-byte aligned offset; smaller ones stay inside the model.

The model is never whole in memory: the graph holds only external-data references, and each tensor's values
are written straight to the data file in slices of a pool of random numbers (seeded, so a model is the same
bytes every time; no two tensors alike). The 7B shape (hidden 4096, intermediate 11008, 32 layers, vocab
32000, fp16) is 13.5 GB of weights.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict, dataclass

import numpy as np

try:
    from tools.onnx_nodes import NodeList
except ImportError:        # run as a script: python tools/llm_model.py
    from onnx_nodes import NodeList

EXTERNAL_MIN_BYTES = 1024     # onnx.save_model's size_threshold: smaller tensors stay inside the model
ALIGN = 64
POOL = 1 << 22                # random values every tensor is cut from (16 MiB of float32)
SLICE = 1 << 20               # elements written per step, each from its own random place in the pool


@dataclass(frozen=True)
class LlmShape:
    layers: int = 2
    hidden: int = 64
    intermediate: int = 172
    vocab: int = 256
    heads: int = 4
    seq: int = 8
    dtype: str = "float32"

    def __post_init__(self):
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not a multiple of heads {self.heads}")
        if self.dtype not in ("float16", "float32"):
            raise ValueError(f"dtype {self.dtype}: float16 or float32")
        if min(self.layers, self.hidden, self.intermediate, self.vocab, self.heads, self.seq) < 1:
            raise ValueError("every size is at least 1")

    def weight_shapes(self) -> list[tuple[str, tuple[int, ...], str]]:
        """(name, shape, kind) of every weight, in the order the data file holds them."""
        h, i = self.hidden, self.intermediate
        out = [("model.embed_tokens.weight", (self.vocab, h), "embed")]
        for k in range(self.layers):
            p = f"model.layers.{k}"
            out.append((f"{p}.input_layernorm.weight", (h,), "norm"))
            out += [(f"{p}.self_attn.{m}_proj", (h, h), "proj") for m in "qkvo"]
            out.append((f"{p}.post_attention_layernorm.weight", (h,), "norm"))
            out += [(f"{p}.mlp.gate_proj", (h, i), "proj"), (f"{p}.mlp.up_proj", (h, i), "proj"),
                    (f"{p}.mlp.down_proj", (i, h), "proj")]
        out += [("model.norm.weight", (h,), "norm"), ("lm_head", (h, self.vocab), "proj")]
        return out

    @property
    def weight_bytes(self) -> int:
        size = np.dtype(self.dtype).itemsize
        return sum(int(np.prod(s)) * size for _, s, _ in self.weight_shapes())


PRESETS = {
    "7b": LlmShape(layers=32, hidden=4096, intermediate=11008, vocab=32000, heads=32, seq=16, dtype="float16"),
    "7b-6layers": LlmShape(layers=6, hidden=4096, intermediate=11008, vocab=32000, heads=32, seq=16, dtype="float16"),
    "small": LlmShape(),
}


class _DataWriter:
    """Appends tensors to the data file and makes the TensorProtos pointing at them."""

    def __init__(self, path: str, seed: int):
        self.path = path
        self.f = open(path, "wb")
        self.offset = 0
        self.rng = np.random.default_rng(seed)
        self.pool = self.rng.standard_normal(POOL, dtype=np.float32)

    def _values(self, count: int, kind: str, fan_in: int, dtype) -> "np.ndarray":
        """Up to SLICE values at a time: pool slices at random places, scaled for the kind of weight."""
        for start in range(0, count, SLICE):
            n = min(SLICE, count - start)
            at = int(self.rng.integers(0, POOL - n + 1))
            base = self.pool[at:at + n]
            if kind == "norm":
                yield (1.0 + 0.1 * base).astype(dtype)
            else:
                yield (base * np.float32(1.0 / np.sqrt(fan_in) if kind == "proj" else 0.5)).astype(dtype)

    def tensor(self, name: str, shape: tuple[int, ...], kind: str, dtype):
        from onnx import TensorProto, helper
        count = int(np.prod(shape))
        nbytes = count * np.dtype(dtype).itemsize
        onnx_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        if nbytes < EXTERNAL_MIN_BYTES:
            values = np.concatenate(list(self._values(count, kind, shape[0], dtype))).reshape(shape)
            return helper.make_tensor(name, onnx_type, shape, values.tobytes(), raw=True)
        pad = -self.offset % ALIGN
        self.f.write(bytes(pad))
        self.offset += pad
        start = self.offset
        for chunk in self._values(count, kind, shape[0], dtype):
            self.f.write(chunk.tobytes())
        self.offset += nbytes
        t = TensorProto(name=name, data_type=onnx_type, dims=shape)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", os.path.basename(self.path)), ("offset", str(start)),
                           ("length", str(nbytes))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        return t

    def close(self) -> None:
        self.f.close()


def _graph(shape: LlmShape, inits: dict):
    """The decoder's nodes (optimum's node names), given its initializers by weight name."""
    from onnx import TensorProto, helper
    seq = shape.seq
    elem = TensorProto.FLOAT16 if shape.dtype == "float16" else TensorProto.FLOAT
    built = NodeList()
    nodes, node, rms_norm = built.nodes, built.node, built.rms_norm

    x = node("Gather", ["model.embed_tokens.weight", "input_ids"], "/model/embed_tokens/Gather")
    for k in range(shape.layers):
        p, scope = f"model.layers.{k}", f"/model/layers.{k}"
        a = rms_norm(x, f"{p}.input_layernorm.weight", f"{scope}/input_layernorm")
        q, kk, v = (node("MatMul", [a, inits[f"{p}.self_attn.{m}_proj"]], f"{scope}/self_attn/{m}_proj/MatMul")
                    for m in "qkv")
        q = node("Transpose", [node("Reshape", [q, "heads_shape"], f"{scope}/self_attn/Reshape")],
                 f"{scope}/self_attn/Transpose", perm=[0, 2, 1, 3])
        kk = node("Transpose", [node("Reshape", [kk, "heads_shape"], f"{scope}/self_attn/Reshape_1")],
                  f"{scope}/self_attn/Transpose_1", perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [v, "heads_shape"], f"{scope}/self_attn/Reshape_2")],
                 f"{scope}/self_attn/Transpose_2", perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, kk], f"{scope}/self_attn/MatMul"), "attn_scale"],
                      f"{scope}/self_attn/Mul")
        probs = node("Softmax", [node("Add", [scores, "causal_mask"], f"{scope}/self_attn/Add")],
                     f"{scope}/self_attn/Softmax", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v], f"{scope}/self_attn/MatMul_1")],
                   f"{scope}/self_attn/Transpose_3", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "hidden_shape"], f"{scope}/self_attn/Reshape_3")
        o = node("MatMul", [ctx, inits[f"{p}.self_attn.o_proj"]], f"{scope}/self_attn/o_proj/MatMul")
        x = node("Add", [x, o], f"{scope}/Add")
        m = rms_norm(x, f"{p}.post_attention_layernorm.weight", f"{scope}/post_attention_layernorm")
        gate = node("MatMul", [m, inits[f"{p}.mlp.gate_proj"]], f"{scope}/mlp/gate_proj/MatMul")
        act = node("Mul", [gate, node("Sigmoid", [gate], f"{scope}/mlp/act_fn/Sigmoid")], f"{scope}/mlp/act_fn/Mul")
        up = node("MatMul", [m, inits[f"{p}.mlp.up_proj"]], f"{scope}/mlp/up_proj/MatMul")
        down = node("MatMul", [node("Mul", [act, up], f"{scope}/mlp/Mul")], f"{scope}/mlp/down_proj/MatMul")
        nodes[-1].input.append(inits[f"{p}.mlp.down_proj"])
        x = node("Add", [x, down], f"{scope}/Add_1")
    x = rms_norm(x, "model.norm.weight", "/model/norm")
    nodes.append(helper.make_node("MatMul", [x, inits["lm_head"]], ["logits"], name="/lm_head/MatMul"))
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq])]
    outputs = [helper.make_tensor_value_info("logits", elem, [1, seq, shape.vocab])]
    return nodes, inputs, outputs


def write_model(out_dir: str, shape: LlmShape = LlmShape(), seed: int = 0, name: str = "model") -> dict:
    """Writes OUT_DIR/<name>.onnx and OUT_DIR/<name>.onnx.data; returns where, and the sizes."""
    from onnx import helper, numpy_helper
    os.makedirs(out_dir, exist_ok=True)
    model_path = os.path.join(out_dir, f"{name}.onnx")
    data = _DataWriter(model_path + ".data", seed)
    dtype = np.dtype(shape.dtype)
    tensors, inits = [], {}
    try:
        matmul_id = 100
        for wname, wshape, kind in shape.weight_shapes():
            init_name = wname
            if kind == "proj":   # optimum: a Linear's transposed weight is an anonymous MatMul input
                init_name, matmul_id = f"onnx::MatMul_{matmul_id}", matmul_id + 1
            inits[wname] = init_name
            tensors.append(data.tensor(init_name, wshape, kind, dtype))
        hd = shape.hidden // shape.heads
        mask = np.triu(np.full((shape.seq, shape.seq), -1e4 if dtype == np.float16 else -1e9, np.float32), 1)
        small = [numpy_helper.from_array(np.asarray(2.0, dtype), "pow_two"),
                 numpy_helper.from_array(np.asarray(1e-6 if dtype == np.float32 else 1e-5, dtype), "rms_eps"),
                 numpy_helper.from_array(np.asarray(1.0 / np.sqrt(hd), dtype), "attn_scale"),
                 numpy_helper.from_array(np.array([1, shape.seq, shape.heads, hd], np.int64), "heads_shape"),
                 numpy_helper.from_array(np.array([1, shape.seq, shape.hidden], np.int64), "hidden_shape")]
        mask = mask.astype(dtype)
        small.append(_external_mask(data, mask) if mask.nbytes >= EXTERNAL_MIN_BYTES
                     else numpy_helper.from_array(mask, "causal_mask"))
    finally:
        data.close()
    nodes, inputs, outputs = _graph(shape, inits)
    graph = helper.make_graph(nodes, "main_graph", inputs, outputs, tensors + small)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                              producer_name="tools/llm_model.py")
    with open(model_path, "wb") as f:
        f.write(model.SerializeToString())
    return {"model": model_path, "data": data.path, "weight_bytes": os.path.getsize(data.path),
            "shape": asdict(shape)}


def _external_mask(data: _DataWriter, mask: np.ndarray):
    """The causal mask to the data file as it is (not a random tensor)."""
    from onnx import TensorProto, helper
    pad = -data.offset % ALIGN
    data.f.write(bytes(pad) + mask.tobytes())
    start = data.offset + pad
    data.offset = start + mask.nbytes
    t = TensorProto(name="causal_mask", data_type=helper.np_dtype_to_tensor_dtype(mask.dtype), dims=mask.shape)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", os.path.basename(data.path)), ("offset", str(start)),
                       ("length", str(mask.nbytes))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--preset", choices=sorted(PRESETS))
    ap.add_argument("--name", default="model")
    ap.add_argument("--seed", type=int, default=0)
    for field in ("layers", "hidden", "intermediate", "vocab", "heads", "seq"):
        ap.add_argument(f"--{field}", type=int)
    ap.add_argument("--dtype", choices=("float16", "float32"))
    args = ap.parse_args(argv)
    base = asdict(PRESETS[args.preset] if args.preset else LlmShape())
    base.update({k: v for k, v in vars(args).items() if k in base and v is not None})
    try:
        shape = LlmShape(**base)
    except ValueError as exc:
        ap.error(str(exc))
    info = write_model(args.out_dir, shape, args.seed, args.name)
    print(f"{info['model']}: {shape.layers} layers, hidden {shape.hidden}, intermediate {shape.intermediate}, "
          f"vocab {shape.vocab}, {shape.dtype}; {info['data']}: {info['weight_bytes']} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
