"""A model whose convolutions and GEMMs are big enough to be cut into pieces over the host threads."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def big_model():
    """Convolutions and GEMMs big enough to be cut into pieces: a 3x3 conv (64x576 @ 576x3136: column panels), a
    1x1 conv with a fused residual, a grouped 1x1 conv, a depthwise 3x3, max pooling, a channel shuffle, and a
    MatMul of 2048 rows (row panels) with a bias, plus elementwise work on 200k-element tensors."""
    rng = np.random.default_rng(7)

    def w(name, *shape, scale=0.1):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)
    inits = [w("w1", 64, 16, 3, 3), w("b1", 64), w("w2", 64, 64, 3, 3), w("w3", 64, 16, 1, 1), w("wd", 64, 1, 3, 3),
             w("m1", 3136, 96), w("mb", 96), numpy_helper.from_array(np.array([1, 4, 16, 56, 56], np.int64), "s5"),
             numpy_helper.from_array(np.array([1, 64, 3136], np.int64), "s3"),
             numpy_helper.from_array(np.array([1, 64, 56, 56], np.int64), "s4")]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["a2"]),
        helper.make_node("Conv", ["a2", "w3"], ["c3"], group=4),
        helper.make_node("Conv", ["c3", "wd"], ["c4"], group=64, pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["c4", "s5"], ["g5"]),
        helper.make_node("Transpose", ["g5"], ["t5"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t5", "s4"], ["sh"]),
        helper.make_node("MaxPool", ["sh"], ["mp"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Sigmoid", ["mp"], ["sg"]),
        helper.make_node("Reshape", ["sg", "s3"], ["f"]),
        helper.make_node("MatMul", ["f", "m1"], ["mm"]),
        helper.make_node("Add", ["mm", "mb"], ["y"])]
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 56, 56])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 96]),
                           helper.make_tensor_value_info("c2", TensorProto.FLOAT, [1, 64, 56, 56])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
