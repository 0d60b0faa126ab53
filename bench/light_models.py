"""Random-weight copies of the onnx package's `light` models (the speed table's benchmark set).

As shipped, every weight of a light model is a ConstantOfShape of one value: CSE merges them and the numbers
are degenerate, which flatters compile time. Each ConstantOfShape here becomes an initializer of its shape
with values spread around the original value (value x U(0.5, 1.5), so signs and magnitudes stay — a BN
variance stays positive), seeded by the node's position: the same file every time.

`signed=True` (the numerics rows): filters and weight matrices (2-D and up) instead get zero-mean values at He
scale (normal, std sqrt(2 / fan_in)), as trained weights have; the all-positive copies make activations grow
layer by layer until a float16 build computes infinities and NaNs (the light ResNet-50 and SqueezeNet: every
output), which times numpy's float16 special-value paths, not the model. 1-D parameters (biases, BN) are
spread as above either way.
"""
from __future__ import annotations

import pathlib

import numpy as np
import onnx
from onnx import numpy_helper

LIGHT = pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
NAMES = ("resnet50", "vgg19", "inception_v1", "densenet121", "squeezenet", "shufflenet")


def randomized(name: str, signed: bool = False) -> onnx.ModelProto:
    m = onnx.load(str(LIGHT / f"light_{name}.onnx"))
    inits = {t.name: t for t in m.graph.initializer}
    rng = np.random.default_rng(0)
    keep = []
    for node in m.graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            keep.append(node)
            continue
        shape = [int(d) for d in numpy_helper.to_array(inits[node.input[0]])]
        value = numpy_helper.to_array(node.attribute[0].t).reshape(-1) if node.attribute else np.zeros(1, np.float32)
        if signed and len(shape) >= 2 and value.dtype.kind == "f":
            arr = (rng.standard_normal(shape) * np.sqrt(2.0 / max(1, int(np.prod(shape[1:]))))).astype(value.dtype)
        else:
            arr = (value[0] * rng.uniform(0.5, 1.5, shape)).astype(value.dtype)
        m.graph.initializer.append(numpy_helper.from_array(arr, node.output[0]))
    del m.graph.node[:]
    m.graph.node.extend(keep)
    used = {i for n in m.graph.node for i in n.input}
    live = [t for t in m.graph.initializer if t.name in used]
    del m.graph.initializer[:]
    m.graph.initializer.extend(live)
    names = {t.name for t in live}
    graph_inputs = [i for i in m.graph.input if i.name not in names and i.name in used]
    del m.graph.input[:]
    m.graph.input.extend(graph_inputs)
    return m


def write_all(d: pathlib.Path, names=NAMES, signed: bool = False) -> dict[str, pathlib.Path]:
    out = {}
    for n in names:
        p = pathlib.Path(d) / f"rand_{n}{'_signed' if signed else ''}.onnx"
        onnx.save(randomized(n, signed), str(p))
        out[n] = p
    return out
