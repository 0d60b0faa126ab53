"""models/gears/: two deployments with gears (a vision model with AIPP and dynamic batch, a BERT with dynamic dims) (make demo compiles them and runs every gear
against onnxruntime's outputs; tests/atc_py/options/test_gears.py does the same).

* vision_net.onnx: a MobileNet-style classifier, NCHW float input with a symbolic batch; deployed with AIPP
  (vision_aipp.cfg: RGB888_U8 images, mean / 1/std normalisation) and --dynamic_batch_size="1,2,4". The
  expected outputs are onnxruntime's on the normalised images (AIPP's arithmetic in numpy).
* bert_tiny.onnx: a one-layer BERT encoder as Hugging Face exports it (token ids and attention mask int64
  [batch, seq], positions from Shape/Range, head reshapes from Shape/Concat, Erf GELU, pooler), deployed with
  --dynamic_dims over (batch, seq) of both inputs.

Random weights (seeded). `python models/make_gear_models.py` rewrites the models (committed);
`python models/make_gear_models.py DIR` writes inputs and onnxruntime's outputs at every gear into DIR.
"""
from __future__ import annotations

import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent / "gears"
OPSET, IR_VERSION = 17, 8
VISION_BATCHES = (1, 2, 4)
BERT_GEARS = ((1, 16), (2, 32), (4, 64))      # (batch, seq)
MEAN = (123.675, 116.28, 103.53)               # ImageNet's, in 0..255 units
STD = (58.395, 57.12, 57.375)


def _w(rng, name, shape, scale):
    return numpy_helper.from_array((scale * rng.standard_normal(shape)).astype(np.float32), name)


def vision_net() -> onnx.ModelProto:
    rng = np.random.default_rng(21)
    n = helper.make_node
    inits = [_w(rng, "c1_w", (16, 3, 3, 3), 0.2), _w(rng, "c1_b", (16,), 0.1),
             numpy_helper.from_array((1 + 0.1 * rng.standard_normal(16)).astype(np.float32), "bn_g"),
             _w(rng, "bn_b", (16,), 0.1), _w(rng, "bn_m", (16,), 0.1),
             numpy_helper.from_array((1 + 0.2 * rng.random(16)).astype(np.float32), "bn_v"),
             _w(rng, "dw1_w", (16, 1, 3, 3), 0.3), _w(rng, "pw1_w", (32, 16, 1, 1), 0.25),
             _w(rng, "dw2_w", (32, 1, 3, 3), 0.3), _w(rng, "pw2_w", (64, 32, 1, 1), 0.2),
             _w(rng, "fc_w", (10, 64), 0.3), _w(rng, "fc_b", (10,), 0.1)]
    nodes = [n("Conv", ["image", "c1_w", "c1_b"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
             n("BatchNormalization", ["c1", "bn_g", "bn_b", "bn_m", "bn_v"], ["b1"], name="bn1"),
             n("Relu", ["b1"], ["r1"], name="relu1"),
             n("Conv", ["r1", "dw1_w"], ["d1"], name="dw1", pads=[1, 1, 1, 1], strides=[2, 2], group=16),
             n("Relu", ["d1"], ["rd1"], name="relu_dw1"),
             n("Conv", ["rd1", "pw1_w"], ["p1"], name="pw1"), n("Relu", ["p1"], ["rp1"], name="relu_pw1"),
             n("Conv", ["rp1", "dw2_w"], ["d2"], name="dw2", pads=[1, 1, 1, 1], strides=[2, 2], group=32),
             n("Relu", ["d2"], ["rd2"], name="relu_dw2"),
             n("Conv", ["rd2", "pw2_w"], ["p2"], name="pw2"), n("Relu", ["p2"], ["rp2"], name="relu_pw2"),
             n("GlobalAveragePool", ["rp2"], ["gap"], name="gap"), n("Flatten", ["gap"], ["flat"], name="flatten"),
             n("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
             n("Softmax", ["logits"], ["prob"], name="softmax", axis=-1)]
    g = helper.make_graph(nodes, "vision_net", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                             ["N", 3, 224, 224])],
                          [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                             producer_name="atc-py-samples")


AIPP_CFG = """aipp_op {
  aipp_mode : static
  input_format : RGB888_U8
  src_image_size_w : 224
  src_image_size_h : 224
  mean_chn_0 : 124
  mean_chn_1 : 116
  mean_chn_2 : 104
  var_reci_chn_0 : 0.017125
  var_reci_chn_1 : 0.017507
  var_reci_chn_2 : 0.017429
}
"""


def bert_tiny() -> onnx.ModelProto:
    rng = np.random.default_rng(22)
    d, h, hd, ff, vocab, maxpos = 32, 2, 16, 64, 100, 128
    n = helper.make_node
    c = numpy_helper.from_array
    inits = [_w(rng, "word_emb", (vocab, d), 0.5), _w(rng, "pos_emb", (maxpos, d), 0.5),
             c(np.ones(d, np.float32), "ln0_g"), c(np.zeros(d, np.float32), "ln0_b"),
             _w(rng, "wq", (d, d), 0.2), _w(rng, "wk", (d, d), 0.2), _w(rng, "wv", (d, d), 0.2),
             _w(rng, "wo", (d, d), 0.2), _w(rng, "bq", (d,), 0.1), _w(rng, "bk", (d,), 0.1), _w(rng, "bv", (d,), 0.1),
             _w(rng, "bo", (d,), 0.1), c(np.ones(d, np.float32), "ln1_g"), c(np.zeros(d, np.float32), "ln1_b"),
             _w(rng, "w1", (d, ff), 0.2), _w(rng, "b1", (ff,), 0.1), _w(rng, "w2", (ff, d), 0.2), _w(rng, "b2", (d,), 0.1),
             c(np.ones(d, np.float32), "ln2_g"), c(np.zeros(d, np.float32), "ln2_b"),
             _w(rng, "wp", (d, d), 0.2), _w(rng, "bp", (d,), 0.1),
             c(np.array([0], np.int64), "i0"), c(np.array([2], np.int64), "i2"),
             c(np.array(0, np.int64), "s0"), c(np.array(1, np.int64), "s1"),
             c(np.array([h, hd], np.int64), "heads"), c(np.array([d], np.int64), "hidden"),
             c(np.array(np.sqrt(hd), np.float32), "scale"), c(np.array(1.0, np.float32), "one"),
             c(np.array(-10000.0, np.float32), "neg"), c(np.array(0.5, np.float32), "half"),
             c(np.array(np.sqrt(2.0), np.float32), "sqrt2"), c(np.array([1, 2], np.int64), "mask_axes")]
    nodes = [
        # embeddings: words + positions 0..S-1 (S from the ids' shape, as exporters write it)
        n("Gather", ["word_emb", "input_ids"], ["we"], name="word_embeddings"),
        n("Shape", ["input_ids"], ["ids_shape"], name="ids_shape"),
        n("Gather", ["ids_shape", "s1"], ["seq"], name="seq_len", axis=0),
        n("Range", ["s0", "seq", "s1"], ["pos_ids"], name="position_ids"),
        n("Gather", ["pos_emb", "pos_ids"], ["pe"], name="position_embeddings"),
        n("Add", ["we", "pe"], ["emb"], name="emb_add"),
        n("LayerNormalization", ["emb", "ln0_g", "ln0_b"], ["x0"], name="emb_ln", axis=-1, epsilon=1e-12),
        # attention mask -> additive bias [B, 1, 1, S]
        n("Unsqueeze", ["attention_mask", "mask_axes"], ["m4"], name="mask_unsqueeze"),
        n("Cast", ["m4"], ["mf"], name="mask_cast", to=TensorProto.FLOAT),
        n("Sub", ["one", "mf"], ["minv"], name="mask_invert"), n("Mul", ["minv", "neg"], ["mbias"], name="mask_bias"),
        # q, k, v: [B, S, D] -> [B, H, S, hd] with the shape built from Shape(x)[0:2] ++ [H, hd]
        n("Shape", ["x0"], ["x_shape"], name="x_shape"),
        n("Slice", ["x_shape", "i0", "i2"], ["bs"], name="batch_seq"),
        n("Concat", ["bs", "heads"], ["split_shape"], name="split_shape", axis=0),
        n("Concat", ["bs", "hidden"], ["merge_shape"], name="merge_shape", axis=0)]
    for t in ("q", "k", "v"):
        nodes += [n("MatMul", ["x0", f"w{t}"], [f"{t}0"], name=f"{t}_proj"),
                  n("Add", [f"{t}0", f"b{t}"], [f"{t}1"], name=f"{t}_bias"),
                  n("Reshape", [f"{t}1", "split_shape"], [f"{t}2"], name=f"{t}_split"),
                  n("Transpose", [f"{t}2"], [f"{t}3"], name=f"{t}_perm",
                    perm=[0, 2, 3, 1] if t == "k" else [0, 2, 1, 3])]
    nodes += [
        n("MatMul", ["q3", "k3"], ["qk"], name="qk"), n("Div", ["qk", "scale"], ["qks"], name="qk_scale"),
        n("Add", ["qks", "mbias"], ["qkm"], name="qk_mask"), n("Softmax", ["qkm"], ["attn"], name="attn", axis=-1),
        n("MatMul", ["attn", "v3"], ["ctx0"], name="attn_v"),
        n("Transpose", ["ctx0"], ["ctx1"], name="ctx_perm", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx1", "merge_shape"], ["ctx2"], name="ctx_merge"),
        n("MatMul", ["ctx2", "wo"], ["o0"], name="o_proj"), n("Add", ["o0", "bo"], ["o1"], name="o_bias"),
        n("Add", ["x0", "o1"], ["h1"], name="residual1"),
        n("LayerNormalization", ["h1", "ln1_g", "ln1_b"], ["x1"], name="attn_ln", axis=-1, epsilon=1e-12),
        n("MatMul", ["x1", "w1"], ["f0"], name="fc1"), n("Add", ["f0", "b1"], ["f1"], name="fc1_bias"),
        n("Div", ["f1", "sqrt2"], ["g0"], name="gelu_div"), n("Erf", ["g0"], ["g1"], name="gelu_erf"),
        n("Add", ["g1", "one"], ["g2"], name="gelu_add"), n("Mul", ["f1", "g2"], ["g3"], name="gelu_mul"),
        n("Mul", ["g3", "half"], ["g4"], name="gelu_half"),
        n("MatMul", ["g4", "w2"], ["f2"], name="fc2"), n("Add", ["f2", "b2"], ["f3"], name="fc2_bias"),
        n("Add", ["x1", "f3"], ["h2"], name="residual2"),
        n("LayerNormalization", ["h2", "ln2_g", "ln2_b"], ["last_hidden_state"], name="ffn_ln", axis=-1,
          epsilon=1e-12),
        n("Gather", ["last_hidden_state", "s0"], ["cls"], name="cls_token", axis=1),
        n("MatMul", ["cls", "wp"], ["p0"], name="pooler"), n("Add", ["p0", "bp"], ["p1"], name="pooler_bias"),
        n("Tanh", ["p1"], ["pooler_output"], name="pooler_tanh")]
    g = helper.make_graph(nodes, "bert_tiny",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
                           helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
                          [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", d]),
                           helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, ["batch", d])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                             producer_name="atc-py-samples")


def aipp_reference(images: np.ndarray) -> np.ndarray:
    """What vision_aipp.cfg's AIPP computes from uint8 NHWC RGB images: NCHW float (x - mean) * var_reci."""
    mean = np.array([124, 116, 104], np.float32)
    var = np.array([0.017125, 0.017507, 0.017429], np.float32)
    return ((images.astype(np.float32) - mean) * var).transpose(0, 3, 1, 2).copy()


def write_models() -> None:
    """models/gears/*.onnx and the AIPP config (committed)."""
    HERE.mkdir(exist_ok=True)
    for name, model in (("vision_net", vision_net()), ("bert_tiny", bert_tiny())):
        onnx.checker.check_model(model)
        (HERE / f"{name}.onnx").write_bytes(model.SerializeToString(deterministic=True))
    (HERE / "vision_aipp.cfg").write_text(AIPP_CFG)


def write_data(out: pathlib.Path) -> None:
    """Inputs and onnxruntime's outputs at every gear, into `out` (make demo, tests): uint8 images for the AIPP
    model, token ids with a padded tail for BERT."""
    import onnxruntime as ort
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(23)
    sess = ort.InferenceSession(str(HERE / "vision_net.onnx"), providers=["CPUExecutionProvider"])
    for b in VISION_BATCHES:
        images = rng.integers(0, 256, (b, 224, 224, 3), dtype=np.uint8)
        np.savez(out / f"vision_net.b{b}.inputs.npz", image=images)
        np.savez(out / f"vision_net.b{b}.expected.npz", prob=sess.run(None, {"image": aipp_reference(images)})[0])
    sess = ort.InferenceSession(str(HERE / "bert_tiny.onnx"), providers=["CPUExecutionProvider"])
    for b, s in BERT_GEARS:
        ids = rng.integers(0, 100, (b, s), dtype=np.int64)
        mask = np.ones((b, s), np.int64)
        mask[:, s - s // 4:] = 0        # the last quarter is padding
        np.savez(out / f"bert_tiny.b{b}s{s}.inputs.npz", input_ids=ids, attention_mask=mask)
        hidden, pooled = sess.run(None, {"input_ids": ids, "attention_mask": mask})
        np.savez(out / f"bert_tiny.b{b}s{s}.expected.npz", last_hidden_state=hidden, pooler_output=pooled)


if __name__ == "__main__":
    import sys
    if len(sys.argv) > 1:
        write_data(pathlib.Path(sys.argv[1]))
    else:
        write_models()
