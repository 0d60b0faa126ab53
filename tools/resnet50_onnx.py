"""ResNet-50 as torch.onnx.export writes torchvision's resnet50 in eval mode (BatchNorm folded into each Conv's
bias, node names /layer1/layer1.0/conv1/Conv ...), with random He-initialised weights, built with onnx.helper so
tests need no torch: conv1 7x7/2, max pool, bottlenecks [3, 4, 6, 3] (1x1, 3x3 with the stride, 1x1 x4; a 1x1
downsample where the shape changes), global average pool, flatten, fc."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BLOCKS = (3, 4, 6, 3)
WIDTHS = (64, 128, 256, 512)


def _scope(param: str) -> str:
    """torch.onnx's scope of a module: layer1.0.conv1 -> /layer1/layer1.0/conv1 (an index joins its parent)."""
    levels: list[str] = []
    for part in param.split("."):
        levels.append(f"{levels[-1].rsplit('/', 1)[-1]}.{part}" if part.isdigit() and levels else part)
    return "/" + "/".join(levels)


class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def conv(self, name: str, x: str, cin: int, cout: int, k: int, stride: int = 1) -> str:
        w = (self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        b = (self.rng.standard_normal(cout) * 0.05).astype(np.float32)
        self.inits += [numpy_helper.from_array(w, f"{name}.weight"), numpy_helper.from_array(b, f"{name}.bias")]
        scope = _scope(name)
        out = f"{scope}/Conv_output_0"
        self.nodes.append(helper.make_node("Conv", [x, f"{name}.weight", f"{name}.bias"], [out],
                                           name=f"{scope}/Conv", kernel_shape=[k, k],
                                           strides=[stride, stride], pads=[k // 2] * 4))
        return out

    def op(self, op_type: str, name: str, ins: list[str], **attrs) -> str:
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op_type, ins, [out], name=name, **attrs))
        return out


def resnet50(batch: int = 1, size: int = 224, seed: int = 0) -> onnx.ModelProto:
    b = _Builder(seed)
    x = b.conv("conv1", "x", 3, 64, 7, 2)
    x = b.op("Relu", "/relu/Relu", [x])
    x = b.op("MaxPool", "/maxpool/MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for li, (n, width) in enumerate(zip(BLOCKS, WIDTHS), start=1):
        for bi in range(n):
            stride = 2 if bi == 0 and li > 1 else 1
            p = f"layer{li}.{bi}"
            s = f"/layer{li}/layer{li}.{bi}"
            y = b.op("Relu", f"{s}/relu/Relu", [b.conv(f"{p}.conv1", x, cin, width, 1)])
            y = b.op("Relu", f"{s}/relu_1/Relu", [b.conv(f"{p}.conv2", y, width, width, 3, stride)])
            y = b.conv(f"{p}.conv3", y, width, width * 4, 1)
            short = b.conv(f"{p}.downsample.0", x, cin, width * 4, 1, stride) if bi == 0 else x
            x = b.op("Relu", f"{s}/relu_2/Relu", [b.op("Add", f"{s}/Add", [y, short])])
            cin = width * 4
    x = b.op("GlobalAveragePool", "/avgpool/GlobalAveragePool", [x])
    x = b.op("Flatten", "/Flatten", [x], axis=1)
    w = (b.rng.standard_normal((1000, 2048)) * np.sqrt(1.0 / 2048)).astype(np.float32)
    b.inits += [numpy_helper.from_array(w, "fc.weight"), numpy_helper.from_array(np.zeros(1000, np.float32), "fc.bias")]
    b.nodes.append(helper.make_node("Gemm", [x, "fc.weight", "fc.bias"], ["logits"], name="/fc/Gemm", alpha=1.0,
                                    beta=1.0, transB=1))
    g = helper.make_graph(b.nodes, "resnet50", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                              [batch, 3, size, size])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 1000])], b.inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
