"""A dynamically quantized Linear with the residual Add and LayerNorm after it, as onnxruntime's quantize_dynamic
writes one of a transformer exported through a 2-D matmul (torch's dynamo exporter, GPT-2's Conv1D): the autofuse
tests and om-run compare's tests build it by hand, so what it fuses into (a FusedAscBackend reading the int32
MatMulInteger sums, its scale and bias, then after the Reshape the residual Add and the LayerNorm) is known."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def dynamic_linear_residual_layernorm(rng, batch: int = 2, seq: int = 24, hidden: int = 96):
    """(model, feeds): x [batch, seq, hidden] -> DynamicQuantizeLinear -> MatMulInteger on [batch*seq, hidden]
    with int8 weights -> Cast -> Mul by x_scale * w_scale -> Add bias -> Reshape -> Add x (the residual) ->
    LayerNormalization -> DynamicQuantizeLinear (the next Linear's input). Outputs: the LayerNorm, the residual
    sum and the last quantized tensor."""
    n, h = batch * seq, hidden
    w = rng.integers(-64, 64, (h, h)).astype(np.int8)
    inits = [numpy_helper.from_array(w, "w_q"), numpy_helper.from_array(np.int8(0), "w_zp"),
             numpy_helper.from_array(np.float32(0.0123), "w_scale"),
             numpy_helper.from_array(rng.standard_normal(h).astype(np.float32), "bias"),
             numpy_helper.from_array(np.array([n, h], np.int64), "flat"),
             numpy_helper.from_array(np.array([batch, seq, h], np.int64), "unflat"),
             numpy_helper.from_array((rng.standard_normal(h) * 0.5 + 1).astype(np.float32), "gamma"),
             numpy_helper.from_array(rng.standard_normal(h).astype(np.float32), "beta")]
    node = helper.make_node
    nodes = [node("Reshape", ["x", "flat"], ["x2"], name="flatten"),
             node("DynamicQuantizeLinear", ["x2"], ["xq", "x_scale", "x_zp"], name="quantize_x"),
             node("MatMulInteger", ["xq", "w_q", "x_zp", "w_zp"], ["acc"], name="matmul"),
             node("Mul", ["x_scale", "w_scale"], ["scale"], name="scales"),
             node("Cast", ["acc"], ["acc_f"], to=TensorProto.FLOAT, name="cast"),
             node("Mul", ["acc_f", "scale"], ["scaled"], name="scale"),
             node("Add", ["scaled", "bias"], ["linear"], name="bias_add"),
             node("Reshape", ["linear", "unflat"], ["linear3"], name="unflatten"),
             node("Add", ["linear3", "x"], ["residual"], name="residual_add"),
             node("LayerNormalization", ["residual", "gamma", "beta"], ["normed"], axis=-1, epsilon=1e-12,
                  name="layernorm"),
             node("DynamicQuantizeLinear", ["normed"], ["next_q", "next_scale", "next_zp"], name="quantize_next")]
    f = TensorProto.FLOAT
    graph = helper.make_graph(nodes, "dyn_linear", [helper.make_tensor_value_info("x", f, [batch, seq, h])],
                              [helper.make_tensor_value_info("normed", f, [batch, seq, h]),
                               helper.make_tensor_value_info("residual", f, [batch, seq, h]),
                               helper.make_tensor_value_info("next_q", TensorProto.UINT8, [batch, seq, h])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = (rng.standard_normal((batch, seq, h)) * 2).astype(np.float32)
    return model, {"x": x}
