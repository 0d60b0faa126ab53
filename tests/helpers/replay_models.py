"""Small random-weight models standing in for the models real ATC command lines convert: the inputs the line
names (names, dtypes, ranks, symbolic dims where the line makes them dynamic) and the nodes it refers to by name
(--out_nodes, --keep_dtype, --customize_dtypes, op_precision [ByNodeName]) with their op types.

Each input gets a stem (a 1x1 convolution when it is an image with a known channel count, else Relu after a Cast
to float); `ops` chain on input 0's stem; every named node reads input 0's stem and is a graph output."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from atc_py.proto import tf_graph_pb2 as tf

ONNX_DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "int32": TensorProto.INT32,
               "int64": TensorProto.INT64, "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL}
TF_DTYPES = {"float32": tf.DT_FLOAT, "int32": tf.DT_INT32, "int64": tf.DT_INT64, "uint8": tf.DT_UINT8}
ONNX_OPSET = 20


class OnnxBuilder:
    """Nodes and initializers of one ONNX graph; `weights` are deterministic random values."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def weights(self, name, shape):
        return self.const(name, (self.rng.standard_normal(shape) * 0.1).astype(np.float32))

    def const(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, inputs, name, out=None, **attrs):
        out = out or f"{name}:out"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out


def _channels(shape) -> int:
    if len(shape) < 4 or not isinstance(shape[1], int):
        raise ValueError(f"a convolution needs NC.. with a known C, not {shape}")
    return shape[1]


def _onnx_op(b: OnnxBuilder, op: str, x: str, shape, name: str, out=None) -> str:
    """`op` on tensor x (of `shape`), node `name`, keeping to what the op needs of the input's rank."""
    unary = {"Sigmoid", "Relu", "Tanh", "Gelu", "Erf", "Identity"}
    if op in unary:
        return b.node(op, [x], name, out)
    if op == "Softmax":
        return b.node(op, [x], name, out, axis=-1)
    if op in ("Mul", "Add", "Sub", "Div", "Pow"):
        return b.node(op, [x, b.const(f"{name}/c", np.float32(2.0))], name, out)
    if op == "Conv":
        c = _channels(shape)
        w = b.weights(f"{name}/w", [c, c] + [1] * (len(shape) - 2))
        return b.node("Conv", [x, w], name, out)
    if op == "Concat":
        return b.node("Concat", [x, x], name, out, axis=1 if len(shape) > 1 else 0)
    if op == "Reshape":
        return b.node("Reshape", [x, b.const(f"{name}/shape", np.array([0, -1], np.int64))], name, out)
    if op == "Resize":
        scales = b.const(f"{name}/scales", np.array([1, 1, 2, 2], np.float32))
        return b.node("Resize", [x, "", scales], name, out, mode="nearest")
    if op == "ReduceMean":
        return b.node("ReduceMean", [x, b.const(f"{name}/axes", np.array([-1], np.int64))], name, out, keepdims=1)
    if op == "Slice":
        args = [b.const(f"{name}/{k}", np.array(v, np.int64))
                for k, v in (("starts", [0]), ("ends", [1]), ("axes", [-1]))]
        return b.node("Slice", [x] + args, name, out)
    if op == "MatMul":
        return b.node("MatMul", [x, b.weights(f"{name}/w", [shape[-1], 8])], name, out)
    if op == "Gemm":
        flat = b.node("ReduceMean", [x, b.const(f"{name}/axes", np.array(list(range(2, len(shape))), np.int64))],
                      f"{name}/pool", keepdims=0) if len(shape) > 2 else x
        return b.node("Gemm", [flat, b.weights(f"{name}/w", [shape[1], 8])], name, out)
    if op == "InstanceNormalization":
        c = _channels(shape)
        return b.node(op, [x, b.weights(f"{name}/s", [c]), b.weights(f"{name}/b", [c])], name, out)
    if op == "LayerNormalization":
        return b.node(op, [x, b.weights(f"{name}/s", [shape[-1]])], name, out, axis=-1)
    if op == "GridSample":
        grid = b.weights(f"{name}/grid", [shape[0], 4, 4, 2])
        return b.node("GridSample", [x, grid], name, out)
    raise ValueError(f"no builder for op {op}")


def onnx_model(inputs, nodes=(), ops=(), seed=0):
    """ModelProto with `inputs` [(name, dtype, shape)], named `nodes` [(name, op[, output tensor])], `ops`."""
    b = OnnxBuilder(seed)
    graph_inputs, outputs, stems = [], [], []
    for i, (name, dtype, shape) in enumerate(inputs):
        graph_inputs.append(helper.make_tensor_value_info(name, ONNX_DTYPES[dtype], shape))
        x = name if dtype.startswith("float") else b.node("Cast", [name], f"cast_{i}", to=TensorProto.FLOAT)
        conv = len(shape) in (4, 5) and isinstance(shape[1], int)
        stems.append((_onnx_op(b, "Conv", x, shape, f"stem_conv_{i}") if conv else
                      b.node("Relu", [x], f"stem_relu_{i}"), shape))
    main, shape = stems[0]
    for k, op in enumerate(ops):
        main = _onnx_op(b, op, main, shape, f"extra_{k}_{op}")
    for i, (tensor, _) in enumerate(stems):
        outputs.append(b.node("Identity", [main if i == 0 else tensor], f"out_{i}", f"out_{i}"))
    for spec in nodes:
        name, op = spec[0], spec[1]
        outputs.append(_onnx_op(b, op, stems[0][0], stems[0][1], name, spec[2] if len(spec) > 2 else None))
    g = helper.make_graph(b.nodes, "replay", graph_inputs,
                          [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs], b.inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])


class TfBuilder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []

    def node(self, name, op, inputs=(), **attrs):
        n = tf.NodeDef(name=name, op=op, input=list(inputs))
        for k, v in attrs.items():
            n.attr[k].CopyFrom(v)
        self.nodes.append(n)
        return name

    def const(self, name, arr):
        dtype = {np.float32: tf.DT_FLOAT, np.int32: tf.DT_INT32}[arr.dtype.type]
        t = tf.TensorProto(dtype=dtype, tensor_content=arr.tobytes(),
                           tensor_shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=d) for d in arr.shape]))
        return self.node(name, "Const", value=tf.AttrValue(tensor=t), dtype=tf.AttrValue(type=dtype))

    def weights(self, name, shape):
        return self.const(name, (self.rng.standard_normal(shape) * 0.1).astype(np.float32))


def _tf_op(b: TfBuilder, op: str, x: str, shape, name: str) -> str:
    if op in ("Identity", "Sigmoid", "Relu", "Softmax"):
        return b.node(name, op, [x])
    if op in ("Mul", "RealDiv", "AddV2"):
        return b.node(name, op, [x, b.const(f"{name}/y", np.array(2.0, np.float32))])
    if op == "ConcatV2":
        return b.node(name, op, [x, x, b.const(f"{name}/axis", np.array(-1, np.int32))], N=tf.AttrValue(i=2))
    if op == "MatMul":
        return b.node(name, op, [x, b.weights(f"{name}/w", [shape[-1], 8])])
    if op == "Conv2D":
        c = shape[-1]
        return b.node(name, op, [x, b.weights(f"{name}/w", [1, 1, c, c])], strides=tf.AttrValue(
            list=tf.AttrValue.ListValue(i=[1, 1, 1, 1])), padding=tf.AttrValue(s=b"SAME"))
    raise ValueError(f"no TF builder for op {op}")


def tf_graph(inputs, nodes=(), ops=(), seed=0):
    """GraphDef with Placeholders `inputs` [(name, dtype, shape; -1 or a str for an unknown dim)], `ops` chained on
    input 0's stem and the named `nodes` [(name, op)] reading it; every unconsumed node is an output."""
    b = TfBuilder(seed)
    stems = []
    for i, (name, dtype, shape) in enumerate(inputs):
        dims = [d if isinstance(d, int) else -1 for d in shape]
        b.node(name, "Placeholder", dtype=tf.AttrValue(type=TF_DTYPES[dtype]), shape=tf.AttrValue(
            shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=d) for d in dims])))
        x = name if dtype == "float32" else b.node(f"cast_{i}", "Cast", [name], DstT=tf.AttrValue(type=tf.DT_FLOAT))
        if len(dims) == 4 and dims[-1] > 0:
            x = _tf_op(b, "Conv2D", x, dims, f"stem_conv_{i}")
        stems.append((b.node(f"stem_relu_{i}", "Relu", [x]), dims))
    main, shape = stems[0]
    for k, op in enumerate(ops):
        main = _tf_op(b, op, main, shape, f"extra_{k}_{op}")
    if not nodes:
        b.node("out_0", "Identity", [main])
    for name, op in nodes:
        _tf_op(b, op, main, shape, name)
    return tf.GraphDef(node=b.nodes)
