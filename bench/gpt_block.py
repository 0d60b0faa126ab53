"""A GPT-2-style decoder block as an ONNX model (deterministic weights), for bench/autofuse.py.

Pre-LN block as torch.onnx.export writes GPT-2 at opset 17: LayerNormalization, fused QKV projection with
bias, causal mask added before Softmax, output projection with bias, residual, LayerNormalization, MLP with
GPT-2's tanh GELU spelled out (Pow, Mul, Add, Tanh), residual.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET, IR_VERSION = 17, 8


def gpt_block(batch: int = 1, seq: int = 64, d: int = 256, heads: int = 4) -> "onnx.ModelProto":  # noqa: F821
    rng = np.random.RandomState(11)
    hd = d // heads

    def w(name, shape, scale=0.05):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    def c(name, value, dtype=np.float32):
        return numpy_helper.from_array(np.asarray(value, dtype), name)

    mask = np.triu(np.full((seq, seq), -1e4, np.float32), 1)
    inits = [c("ln1_g", np.ones(d)), c("ln1_b", np.zeros(d)), w("w_qkv", (d, 3 * d)), w("b_qkv", (3 * d,)),
             w("w_o", (d, d)), w("b_o", (d,)), c("ln2_g", np.ones(d)), c("ln2_b", np.zeros(d)),
             w("w_fc", (d, 4 * d)), w("b_fc", (4 * d,)), w("w_proj", (4 * d, d)), w("b_proj", (d,)),
             c("split", [d, d, d], np.int64), c("heads_shape", [batch, seq, heads, hd], np.int64),
             c("merge_shape", [batch, seq, d], np.int64), c("scale", np.sqrt(hd)), c("mask", mask),
             c("three", 3.0), c("k_cube", 0.044715), c("k_tanh", np.sqrt(2 / np.pi)), c("one", 1.0), c("half", 0.5)]
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["ln1"], name="ln_1", axis=-1, epsilon=1e-5),
        n("MatMul", ["ln1", "w_qkv"], ["qkv0"], name="c_attn"),
        n("Add", ["qkv0", "b_qkv"], ["qkv"], name="c_attn_bias"),
        n("Split", ["qkv", "split"], ["q", "k", "v"], name="qkv_split", axis=-1),
        n("Reshape", ["q", "heads_shape"], ["q2"], name="q_heads"),
        n("Reshape", ["k", "heads_shape"], ["k2"], name="k_heads"),
        n("Reshape", ["v", "heads_shape"], ["v2"], name="v_heads"),
        n("Transpose", ["q2"], ["q3"], name="q_perm", perm=[0, 2, 1, 3]),
        n("Transpose", ["k2"], ["k3"], name="k_perm", perm=[0, 2, 3, 1]),
        n("Transpose", ["v2"], ["v3"], name="v_perm", perm=[0, 2, 1, 3]),
        n("MatMul", ["q3", "k3"], ["att0"], name="qk"), n("Div", ["att0", "scale"], ["att1"], name="qk_scale"),
        n("Add", ["att1", "mask"], ["att2"], name="causal_mask"),
        n("Softmax", ["att2"], ["att3"], name="att_softmax", axis=-1),
        n("MatMul", ["att3", "v3"], ["y0"], name="att_v"),
        n("Transpose", ["y0"], ["y1"], name="y_perm", perm=[0, 2, 1, 3]),
        n("Reshape", ["y1", "merge_shape"], ["y2"], name="y_merge"),
        n("MatMul", ["y2", "w_o"], ["o0"], name="c_proj"), n("Add", ["o0", "b_o"], ["o1"], name="c_proj_bias"),
        n("Add", ["x", "o1"], ["h1"], name="residual_1"),
        n("LayerNormalization", ["h1", "ln2_g", "ln2_b"], ["ln2"], name="ln_2", axis=-1, epsilon=1e-5),
        n("MatMul", ["ln2", "w_fc"], ["f0"], name="c_fc"), n("Add", ["f0", "b_fc"], ["f1"], name="c_fc_bias"),
        n("Pow", ["f1", "three"], ["g0"], name="gelu_pow"), n("Mul", ["g0", "k_cube"], ["g1"], name="gelu_mul_k"),
        n("Add", ["f1", "g1"], ["g2"], name="gelu_add"), n("Mul", ["g2", "k_tanh"], ["g3"], name="gelu_mul_s"),
        n("Tanh", ["g3"], ["g4"], name="gelu_tanh"), n("Add", ["g4", "one"], ["g5"], name="gelu_add_1"),
        n("Mul", ["f1", "half"], ["g6"], name="gelu_half"), n("Mul", ["g6", "g5"], ["g7"], name="gelu_out"),
        n("MatMul", ["g7", "w_proj"], ["p0"], name="mlp_proj"),
        n("Add", ["p0", "b_proj"], ["p1"], name="mlp_proj_bias"),
        n("Add", ["h1", "p1"], ["y"], name="residual_2"),
    ]
    graph = helper.make_graph(nodes, "gpt_block",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, d])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="atc-py-bench",
                             ir_version=IR_VERSION)
