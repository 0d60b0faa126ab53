"""Small ONNX models written in a line: the one builder the op, pass and import tests share.

Inputs and outputs may be ValueInfoProtos or short forms: "name" (float, shape unknown), (name, shape) (float),
(name, elem_type) (shape unknown) or (name, elem_type, shape). Initializers are (name, array-like) pairs, made
arrays of `init_dtype` when it is given (the float-only tests write their weights as Python lists)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, ValueInfoProto, helper, numpy_helper


def value_info(spec) -> ValueInfoProto:
    if isinstance(spec, ValueInfoProto):
        return spec
    if isinstance(spec, str):
        return helper.make_tensor_value_info(spec, TensorProto.FLOAT, None)
    if len(spec) == 3:
        return helper.make_tensor_value_info(*spec)
    name, second = spec
    if isinstance(second, (int, np.integer)) and not isinstance(second, bool):
        return helper.make_tensor_value_info(name, int(second), None)
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, second)


def onnx_model(nodes, inputs, outputs, inits=(), opset: int = 17, ir_version: int | None = 8, init_dtype=None,
               name: str = "g"):
    """A one-graph model of `nodes` at the default domain's `opset` (ir_version None: onnx's current one)."""
    tensors = [init if not isinstance(init, tuple) else
               numpy_helper.from_array(np.asarray(init[1], init_dtype), init[0]) for init in inits]
    graph = helper.make_graph(nodes, name, [value_info(s) for s in inputs], [value_info(s) for s in outputs], tensors)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if ir_version is not None:
        model.ir_version = ir_version
    return model
