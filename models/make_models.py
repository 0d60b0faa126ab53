"""Build the sample models deterministically (fixed seeds, no timestamps): python models/make_models.py."""
from __future__ import annotations

import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
OPSET = 17
IR_VERSION = 8  # the IR version of opset 17; onnxruntime reads it


def _init(rng, name, shape, scale=0.1):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def small_cnn() -> onnx.ModelProto:
    """Conv-BN-Relu-MaxPool, a residual block, AvgPool branch concat, GAP, Gemm, Softmax."""
    rng = np.random.RandomState(1)
    inits = [
        _init(rng, "conv1_w", (16, 3, 3, 3)), _init(rng, "conv1_b", (16,)),
        numpy_helper.from_array((1 + 0.1 * rng.standard_normal(16)).astype(np.float32), "bn_scale"),
        _init(rng, "bn_bias", (16,)), _init(rng, "bn_mean", (16,)),
        numpy_helper.from_array((1 + 0.1 * rng.random_sample(16)).astype(np.float32), "bn_var"),
        _init(rng, "conv2_w", (16, 16, 3, 3)), _init(rng, "conv3_w", (16, 16, 3, 3)),
        _init(rng, "dw_w", (16, 1, 3, 3)),
        _init(rng, "fc_w", (10, 32)), _init(rng, "fc_b", (10,)),
    ]
    nodes = [
        helper.make_node("Conv", ["input", "conv1_w", "conv1_b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["bn1"],
                         name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2_w"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "conv3_w"], ["c3"], name="conv3", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c3", "p1"], ["res"], name="residual_add"),
        helper.make_node("Relu", ["res"], ["r3"], name="relu3"),
        helper.make_node("Conv", ["r3", "dw_w"], ["dw"], name="depthwise", pads=[1, 1, 1, 1], group=16),
        helper.make_node("AveragePool", ["dw"], ["ap"], name="avgpool", kernel_shape=[3, 3], strides=[1, 1],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["r3", "ap"], ["cat"], name="concat", axis=1),
        helper.make_node("GlobalAveragePool", ["cat"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="atc-py-samples",
                             ir_version=IR_VERSION)


def small_transformer() -> onnx.ModelProto:
    """One pre-LN transformer encoder block: LayerNorm, 2-head self-attention, MLP with a sigmoid-GELU."""
    rng = np.random.RandomState(2)
    b, s, d, h = 2, 8, 32, 2
    hd = d // h
    inits = [
        numpy_helper.from_array(np.ones(d, np.float32), "ln1_g"), numpy_helper.from_array(np.zeros(d, np.float32), "ln1_b"),
        _init(rng, "wq", (d, d)), _init(rng, "wk", (d, d)), _init(rng, "wv", (d, d)), _init(rng, "wo", (d, d)),
        _init(rng, "bq", (d,)), _init(rng, "bo", (d,)),
        numpy_helper.from_array(np.ones(d, np.float32), "ln2_g"), numpy_helper.from_array(np.zeros(d, np.float32), "ln2_b"),
        _init(rng, "w1", (d, 4 * d)), _init(rng, "b1", (4 * d,)), _init(rng, "w2", (4 * d, d)), _init(rng, "b2", (d,)),
        numpy_helper.from_array(np.array([b, s, h, hd], np.int64), "heads_shape"),
        numpy_helper.from_array(np.array([b, s, d], np.int64), "merge_shape"),
        numpy_helper.from_array(np.array(np.sqrt(hd), np.float32), "scale"),
        numpy_helper.from_array(np.array(1.702, np.float32), "gelu_k"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(2.0, np.float32), "two"),
    ]
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["ln1"], name="ln1", axis=-1, epsilon=1e-5),
        n("MatMul", ["ln1", "wq"], ["q0"], name="q_proj"), n("Add", ["q0", "bq"], ["q1"], name="q_bias"),
        n("MatMul", ["ln1", "wk"], ["k0"], name="k_proj"), n("MatMul", ["ln1", "wv"], ["v0"], name="v_proj"),
        n("Reshape", ["q1", "heads_shape"], ["q2"], name="q_split"),
        n("Reshape", ["k0", "heads_shape"], ["k2"], name="k_split"),
        n("Reshape", ["v0", "heads_shape"], ["v2"], name="v_split"),
        n("Transpose", ["q2"], ["q3"], name="q_perm", perm=[0, 2, 1, 3]),
        n("Transpose", ["k2"], ["k3"], name="k_perm", perm=[0, 2, 3, 1]),
        n("Transpose", ["v2"], ["v3"], name="v_perm", perm=[0, 2, 1, 3]),
        n("MatMul", ["q3", "k3"], ["qk"], name="qk"), n("Div", ["qk", "scale"], ["qk_s"], name="qk_scale"),
        n("Softmax", ["qk_s"], ["attn"], name="attn_softmax", axis=-1),
        n("MatMul", ["attn", "v3"], ["ctx0"], name="attn_v"),
        n("Transpose", ["ctx0"], ["ctx1"], name="ctx_perm", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx1", "merge_shape"], ["ctx2"], name="ctx_merge"),
        n("MatMul", ["ctx2", "wo"], ["o0"], name="o_proj"), n("Add", ["o0", "bo"], ["o1"], name="o_bias"),
        n("Add", ["x", "o1"], ["h1"], name="residual1"),
        n("LayerNormalization", ["h1", "ln2_g", "ln2_b"], ["ln2"], name="ln2", axis=-1, epsilon=1e-5),
        n("MatMul", ["ln2", "w1"], ["f0"], name="fc1"), n("Add", ["f0", "b1"], ["f1"], name="fc1_bias"),
        n("Mul", ["f1", "gelu_k"], ["g0"], name="gelu_scale"), n("Sigmoid", ["g0"], ["g1"], name="gelu_sigmoid"),
        n("Mul", ["f1", "g1"], ["g2"], name="gelu_mul"),
        n("MatMul", ["g2", "w2"], ["f2"], name="fc2"), n("Add", ["f2", "b2"], ["f3"], name="fc2_bias"),
        n("Add", ["h1", "f3"], ["h2"], name="residual2"),
        # a tanh-gated head: tanh(h2) * 2 - 1 ... exercises Tanh, Sub
        n("Tanh", ["h2"], ["t0"], name="head_tanh"), n("Mul", ["t0", "two"], ["t1"], name="head_scale"),
        n("Sub", ["t1", "one"], ["y"], name="head_shift"),
    ]
    graph = helper.make_graph(nodes, "small_transformer",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, s, d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, s, d])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="atc-py-samples",
                             ir_version=IR_VERSION)


DECODER = dict(tokens=8, heads=2, head_dim=16, cache=64, experts=4, layers=2)


def decoder_step() -> onnx.ModelProto:
    """One decode step of a small MoE decoder: per layer IncreFlashAttention over a KV cache and a
    GroupedMatmul MoE. `actual_seq_lengths` (= seq_lens + 1) and `group_list` (= CumSum of per-expert
    token counts) are computed on the device from graph inputs, so without tiling sink the host must
    fetch them before it can tile the attention and the MoE."""
    rng = np.random.RandomState(3)
    c = DECODER
    b, n, d, s, g = c["tokens"], c["heads"], c["head_dim"], c["cache"], c["experts"]
    hd = n * d
    nd = helper.make_node
    inits = [numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(0, np.int64), "axis0"),
             numpy_helper.from_array(np.array([b, n, 1, d], np.int64), "q_shape"),
             numpy_helper.from_array(np.array([b, hd], np.int64), "o_shape")]
    nodes = [nd("Add", ["seq_lens", "one"], ["lens"], name="lens_plus_one"),
             nd("CumSum", ["expert_counts", "axis0"], ["group_list"], name="group_list_cumsum")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, hd]),
              helper.make_tensor_value_info("seq_lens", TensorProto.INT64, [b]),
              helper.make_tensor_value_info("expert_counts", TensorProto.INT64, [g])]
    # input stage (static): LayerNorm -> projection -> bias -> tanh
    inits += [numpy_helper.from_array(np.ones(hd, np.float32), "ln_in_g"),
              numpy_helper.from_array(np.zeros(hd, np.float32), "ln_in_b"),
              _init(rng, "w_in", (hd, hd), 0.2), _init(rng, "b_in", (hd,))]
    nodes += [nd("LayerNormalization", ["x", "ln_in_g", "ln_in_b"], ["x_ln"], name="ln_in", axis=-1),
              nd("MatMul", ["x_ln", "w_in"], ["x_p"], name="in_proj"),
              nd("Add", ["x_p", "b_in"], ["x_b"], name="in_bias"),
              nd("Tanh", ["x_b"], ["h0"], name="in_act")]
    h = "h0"
    for layer in range(c["layers"]):
        p = f"l{layer}_"
        inputs += [helper.make_tensor_value_info(f"{p}k_cache", TensorProto.FLOAT, [b, n, s, d]),
                   helper.make_tensor_value_info(f"{p}v_cache", TensorProto.FLOAT, [b, n, s, d])]
        inits += [_init(rng, f"{p}wq", (hd, hd), 0.2), _init(rng, f"{p}wo", (hd, hd), 0.2),
                  _init(rng, f"{p}w_experts", (g, hd, hd), 0.2)]
        nodes += [
            nd("MatMul", [h, f"{p}wq"], [f"{p}q2d"], name=f"{p}q_proj"),
            nd("Reshape", [f"{p}q2d", "q_shape"], [f"{p}q"], name=f"{p}q_heads"),
            nd("IncreFlashAttention", [f"{p}q", f"{p}k_cache", f"{p}v_cache", "lens"], [f"{p}attn"],
               name=f"{p}ifa", domain="ascend", num_heads=n, input_layout="BNSD"),
            nd("Reshape", [f"{p}attn", "o_shape"], [f"{p}attn2d"], name=f"{p}attn_merge"),
            nd("MatMul", [f"{p}attn2d", f"{p}wo"], [f"{p}o"], name=f"{p}o_proj"),
            nd("Add", [h, f"{p}o"], [f"{p}h1"], name=f"{p}residual_attn"),
            nd("GroupedMatmul", [f"{p}h1", f"{p}w_experts", "group_list"], [f"{p}moe"], name=f"{p}moe",
               domain="ascend"),
            nd("Add", [f"{p}h1", f"{p}moe"], [f"{p}out"], name=f"{p}residual_moe"),
        ]
        h = f"{p}out"
    # output head (static): LayerNorm -> vocabulary projection -> bias -> softmax
    vocab = 48
    inits += [numpy_helper.from_array(np.ones(hd, np.float32), "ln_out_g"),
              numpy_helper.from_array(np.zeros(hd, np.float32), "ln_out_b"),
              _init(rng, "w_vocab", (hd, vocab), 0.2), _init(rng, "b_vocab", (vocab,))]
    nodes += [nd("LayerNormalization", [h, "ln_out_g", "ln_out_b"], ["h_ln"], name="ln_out", axis=-1),
              nd("MatMul", ["h_ln", "w_vocab"], ["logits0"], name="lm_head"),
              nd("Add", ["logits0", "b_vocab"], ["logits"], name="lm_bias"),
              nd("Softmax", ["logits"], ["probs"], name="probs", axis=-1)]
    graph = helper.make_graph(nodes, "decoder_step", inputs,
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [b, vocab])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("ascend", 1)],
                             producer_name="atc-py-samples", ir_version=IR_VERSION)


def decoder_inputs() -> dict[str, np.ndarray]:
    """Valid inputs for decoder_step: lengths within the cache, expert counts summing to the token count."""
    rng = np.random.RandomState(4)
    c = DECODER
    b, n, d, s = c["tokens"], c["heads"], c["head_dim"], c["cache"]
    feeds = {"x": rng.standard_normal((b, n * d)).astype(np.float32),
             "seq_lens": np.array([3, 17, 0, 40, 63 - 1, 5, 9, 30], np.int64),
             "expert_counts": np.array([3, 0, 4, 1], np.int64)}
    for layer in range(c["layers"]):
        feeds[f"l{layer}_k_cache"] = rng.standard_normal((b, n, s, d)).astype(np.float32)
        feeds[f"l{layer}_v_cache"] = rng.standard_normal((b, n, s, d)).astype(np.float32)
    return feeds


def superkernel() -> onnx.ModelProto:
    """An attention block whose projection, IncreFlashAttention and residual share one
    `_super_kernel_scope`: they fuse into a SUPER_KERNEL task (with sink, IFA's tiling task notifies the
    super kernel through an event address instead of wait/NOP/update/record)."""
    rng = np.random.RandomState(5)
    b, n, d, s = 4, 2, 16, 32
    hd = n * d
    nd = helper.make_node
    sk = {"_super_kernel_scope": "sk_attn"}
    inits = [numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array([b, n, 1, d], np.int64), "q_shape"),
             numpy_helper.from_array(np.array([b, hd], np.int64), "o_shape"),
             _init(rng, "wq", (hd, hd), 0.2), _init(rng, "wo", (hd, hd), 0.2)]
    nodes = [nd("Add", ["seq_lens", "one"], ["lens"], name="lens_plus_one"),
             nd("MatMul", ["x", "wq"], ["q2d"], name="q_proj", **sk),
             nd("Reshape", ["q2d", "q_shape"], ["q"], name="q_heads"),
             nd("IncreFlashAttention", ["q", "k_cache", "v_cache", "lens"], ["attn"], name="ifa", domain="ascend",
                num_heads=n, **sk),
             nd("Reshape", ["attn", "o_shape"], ["attn2d"], name="attn_merge"),
             nd("MatMul", ["attn2d", "wo"], ["o"], name="o_proj", **sk),
             nd("Add", ["x", "o"], ["y"], name="residual", **sk)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, hd]),
              helper.make_tensor_value_info("seq_lens", TensorProto.INT64, [b]),
              helper.make_tensor_value_info("k_cache", TensorProto.FLOAT, [b, n, s, d]),
              helper.make_tensor_value_info("v_cache", TensorProto.FLOAT, [b, n, s, d])]
    graph = helper.make_graph(nodes, "superkernel", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, hd])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("ascend", 1)],
                             producer_name="atc-py-samples", ir_version=IR_VERSION)


def superkernel_inputs() -> dict[str, np.ndarray]:
    rng = np.random.RandomState(6)
    return {"x": rng.standard_normal((4, 32)).astype(np.float32), "seq_lens": np.array([0, 7, 31, 12], np.int64),
            "k_cache": rng.standard_normal((4, 2, 32, 16)).astype(np.float32),
            "v_cache": rng.standard_normal((4, 2, 32, 16)).astype(np.float32)}


def custom_op() -> onnx.ModelProto:
    """Uses the example plugin's custom::RowScale (plugins/example_custom_ops.py), whose active-row count
    is computed on the device."""
    rng = np.random.RandomState(7)
    nd = helper.make_node
    inits = [numpy_helper.from_array(np.array([1], np.int64), "one"), _init(rng, "w", (32, 16), 0.2)]
    nodes = [nd("Add", ["valid_rows", "one"], ["active"], name="active_rows"),
             nd("Relu", ["x"], ["xr"], name="relu"),
             nd("RowScale", ["xr", "active"], ["scaled"], name="row_scale", domain="custom", scale=0.5),
             nd("MatMul", ["scaled", "w"], ["y"], name="proj")]
    graph = helper.make_graph(nodes, "custom_op",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32]),
                               helper.make_tensor_value_info("valid_rows", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("custom", 1)],
                             producer_name="atc-py-samples", ir_version=IR_VERSION)


def custom_op_inputs() -> dict[str, np.ndarray]:
    rng = np.random.RandomState(8)
    return {"x": rng.standard_normal((16, 32)).astype(np.float32), "valid_rows": np.array([10], np.int64)}


def inception_block() -> onnx.ModelProto:
    """An Inception-style block: four independent branches (1x1; 1x1->3x3; 1x1->5x5; maxpool->1x1) joined by
    a Concat, then GAP + Gemm. The branches run on separate streams."""
    rng = np.random.RandomState(9)
    nd = helper.make_node
    c = 64
    specs = {"b1_1x1": (64, c, 1), "b2_1x1": (48, c, 1), "b2_3x3": (64, 48, 3), "b3_1x1": (16, c, 1),
             "b3_5x5": (32, 16, 5), "b4_1x1": (32, c, 1)}
    inits = [_init(rng, f"{k}_w", (o, i, kk, kk), 0.05) for k, (o, i, kk) in specs.items()]
    inits += [_init(rng, f"{k}_b", (o,)) for k, (o, _, _) in specs.items()]
    inits += [_init(rng, "fc_w", (10, 192), 0.05), _init(rng, "fc_b", (10,))]

    def conv(name, x, y):
        k = specs[name][2]
        return [nd("Conv", [x, f"{name}_w", f"{name}_b"], [f"{y}_c"], name=name, pads=[k // 2] * 4),
                nd("Relu", [f"{y}_c"], [y], name=f"{name}_relu")]
    nodes = conv("b1_1x1", "x", "b1") + conv("b2_1x1", "x", "b2a") + conv("b2_3x3", "b2a", "b2") + \
        conv("b3_1x1", "x", "b3a") + conv("b3_5x5", "b3a", "b3") + \
        [nd("MaxPool", ["x"], ["b4a"], name="b4_pool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])] + \
        conv("b4_1x1", "b4a", "b4") + \
        [nd("Concat", ["b1", "b2", "b3", "b4"], ["cat"], name="concat", axis=1),
         nd("GlobalAveragePool", ["cat"], ["gap"], name="gap"), nd("Flatten", ["gap"], ["flat"], name="flatten"),
         nd("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(nodes, "inception_block",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 28, 28])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="atc-py-samples",
                             ir_version=IR_VERSION)


SAMPLES = {"small_cnn": small_cnn, "inception_block": inception_block, "small_transformer": small_transformer, "decoder_step": decoder_step,
           "superkernel": superkernel, "custom_op": custom_op}
INPUTS = {"decoder_step": decoder_inputs, "superkernel": superkernel_inputs, "custom_op": custom_op_inputs}


def rnn_loop() -> onnx.ModelProto:
    """An Elman RNN written as an ONNX Loop over 16 time steps (trip count constant, no condition): the
    body reads x[i], updates h = tanh(x[i] W + h U + b) and emits h as a scan output. Static: it compiles
    to a label loop (LABEL_SWITCH_BY_INDEX / LABEL_GOTO_EX) with h and the counter in device memory."""
    rng = np.random.default_rng(15)
    T, B, I, H = 16, 2, 8, 16  # noqa: E741 -- T, B, I, H: ONNX's names of the RNN sizes
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["xt"], axis=0),
         helper.make_node("MatMul", ["xt", "W"], ["xw"]),
         helper.make_node("MatMul", ["h", "U"], ["hu"]),
         helper.make_node("Add", ["xw", "hu"], ["s"]),
         helper.make_node("Add", ["s", "b"], ["sb"]),
         helper.make_node("Tanh", ["sb"], ["h_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["h_out"], ["h_scan"])],
        "rnn_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [B, H])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [B, H]),
         helper.make_tensor_value_info("h_scan", TensorProto.FLOAT, [B, H])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["T", "", "h0"], ["h_last", "h_all"], body=body)],
        "rnn_loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, B, I]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [B, H])],
        [helper.make_tensor_value_info("h_last", TensorProto.FLOAT, [B, H]),
         helper.make_tensor_value_info("h_all", TensorProto.FLOAT, [T, B, H])],
        [numpy_helper.from_array(np.array(T, np.int64), "T"), _init(rng, "W", (I, H), 0.3),
         _init(rng, "U", (H, H), 0.3), _init(rng, "b", (H,), 0.1)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


SAMPLES["rnn_loop"] = rnn_loop


def main() -> None:
    for name, make in SAMPLES.items():
        model = make()
        if name not in ("decoder_step", "superkernel", "custom_op"):  # custom domains: no schema to check
            onnx.checker.check_model(model)
        (HERE / f"{name}.onnx").write_bytes(model.SerializeToString(deterministic=True))
        print(f"wrote models/{name}.onnx")
        if name in INPUTS:
            np.savez(HERE / f"{name}.inputs.npz", **INPUTS[name]())
            print(f"wrote models/{name}.inputs.npz")


if __name__ == "__main__":
    main()
