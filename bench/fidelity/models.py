"""Whole models of the fidelity check: onnx's `light` models (ResNet-50, DenseNet-121: the real layers with
constant-filled weights, shipped with the onnx package) at any batch size."""
from __future__ import annotations

import pathlib

import onnx
from onnx import numpy_helper

LIGHT = pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def with_batch(model: onnx.ModelProto, batch: int) -> onnx.ModelProto:
    """The model with its data inputs, outputs and Reshape targets at `batch` instead of 1 (shapes in
    between are inferred again by the compiler)."""
    g = model.graph
    inits = {i.name for i in g.initializer}
    for v in list(g.input) + list(g.output):
        dims = v.type.tensor_type.shape.dim
        if v.name not in inits and dims and dims[0].dim_value == 1:
            dims[0].dim_value = batch
    del g.value_info[:]
    reshape_shapes = {n.input[1] for n in g.node if n.op_type == "Reshape" and len(n.input) > 1}
    for i, init in enumerate(g.initializer):
        if init.name in reshape_shapes:
            shape = numpy_helper.to_array(init).copy()
            if shape.ndim == 1 and len(shape) and shape[0] == 1:
                shape[0] = batch
                g.initializer[i].CopyFrom(numpy_helper.from_array(shape, init.name))
    return model


def light_model(name: str, batch: int = 1) -> onnx.ModelProto:
    return with_batch(onnx.load(str(LIGHT / f"light_{name}.onnx")), batch)


def light_resnet50(batch: int = 1) -> onnx.ModelProto:
    return light_model("resnet50", batch)
