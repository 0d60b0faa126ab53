"""ONNX models with GE's HCCL collectives (custom domain `ascend`, opset 1), written in a line: the builder the
op, frontend, task and multi-device tests share.

    hcom_model("HcomAllReduce", (4, 8), reduction="sum", rank_size=2)

is x[4, 8] -> HcomAllReduce -> y. HcomBroadcast takes `n_tensors` inputs (x0, x1, ...) and gives as many outputs;
HcomSend reads x and the model returns Relu(x) beside it (a Send has no output); HcomReceive's tensor (its `shape`
and `dtype` attributes, dtype defaulting to the input's) is added to x: y = x + received."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from atc_py.ir.dtypes import dtype_from_onnx

DOMAIN = "ascend"


def hcom_node(op_type: str, inputs: list[str], outputs: list[str], name: str = "", **attrs):
    """One collective node of the `ascend` domain (attributes by GE's names; None values left out)."""
    return helper.make_node(op_type, inputs, outputs, name=name or op_type.lower(), domain=DOMAIN,
                            **{k: v for k, v in attrs.items() if v is not None})


def hcom_graph_model(nodes, inputs, outputs, opset: int = 17):
    """A model of `nodes` importing the default domain at `opset` and `ascend` at 1."""
    graph = helper.make_graph(nodes, "hccl", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(DOMAIN, 1)])
    model.ir_version = 8
    return model


def hcom_model(op_type: str, shape, elem_type: int = TensorProto.FLOAT, n_tensors: int = 1, name: str = "",
               **attrs):
    """x -> op_type -> y (see the module docstring for Broadcast, Send and Receive)."""
    def vi(n, s=shape):
        return helper.make_tensor_value_info(n, elem_type, list(s) if s is not None else None)
    if op_type == "HcomBroadcast":
        xs = [f"x{k}" for k in range(n_tensors)]
        ys = [f"y{k}" for k in range(n_tensors)]
        node = hcom_node(op_type, xs, ys, name, **attrs)
        return hcom_graph_model([node], [vi(x) for x in xs], [vi(y, None) for y in ys])
    if op_type == "HcomSend":
        nodes = [hcom_node(op_type, ["x"], [], name, **attrs), helper.make_node("Relu", ["x"], ["y"])]
        return hcom_graph_model(nodes, [vi("x")], [vi("y", None)])
    if op_type == "HcomReceive":
        attrs.setdefault("shape", list(shape))
        attrs.setdefault("dtype", elem_type)
        nodes = [hcom_node(op_type, [], ["r"], name, **attrs), helper.make_node("Add", ["x", "r"], ["y"])]
        return hcom_graph_model(nodes, [vi("x")], [vi("y", None)])
    node = hcom_node(op_type, ["x"], ["y"], name, **attrs)
    return hcom_graph_model([node], [vi("x")], [vi("y", None)])


def hcom_input(shape, elem_type: int = TensorProto.FLOAT, seed: int = 0) -> np.ndarray:
    """A deterministic input of the model's dtype (small integers, exact in every dtype)."""
    rng = np.random.default_rng(seed)
    return rng.integers(-8, 9, size=shape).astype(dtype_from_onnx(elem_type).np)
