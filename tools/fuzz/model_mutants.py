"""Malformed models for atc-py: small ONNX graphs (one op each, plus the samples) and TensorFlow GraphDefs,
changed the ways broken exporters and hostile files change them — attribute values and types, initializer
sizes and dtypes, external-data paths, graph wiring (undefined inputs, two producers of one tensor, cycles,
inputs without a shape), opsets, constant folds that would need terabytes, raw byte flips; and models asking for
far more work than their file holds (work_models.py).
"""
from __future__ import annotations

import pathlib
import random

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from atc_py.proto import tf_graph_pb2 as tf

from .om_mutants import INTS, interesting_int
from .work_models import onnx_work_bomb, tf_work_bomb

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPSET = 17


def _model(nodes, inputs, outputs, inits=(), opset=OPSET) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _t(name, shape, dt=TP.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def _c(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def base_onnx_models() -> dict[str, onnx.ModelProto]:
    """Small valid models, one per op family the mutations target."""
    x4, y = _t("x", [1, 3, 8, 8]), _t("y", None)
    w = _c("w", np.ones((4, 3, 3, 3), np.float32))
    m = {
        "conv": _model([helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                         strides=[1, 1], dilations=[1, 1], group=1)], [x4], [y], [w]),
        "maxpool": _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                                            pads=[0, 0, 0, 0])], [x4], [y]),
        "avgpool": _model([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[1, 1],
                                            pads=[1, 1, 1, 1])], [x4], [y]),
        "reshape": _model([helper.make_node("Reshape", ["x", "s"], ["y"])], [x4], [y], [_c("s", np.array([1, -1]))]),
        "transpose": _model([helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], [x4], [y]),
        "softmax": _model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [x4], [y]),
        "concat": _model([helper.make_node("Concat", ["x", "x"], ["y"], axis=1)], [x4], [y]),
        "gather": _model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], [x4], [y],
                         [_c("i", np.array([0, 2]))]),
        "slice": _model([helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [x4], [y],
                        [_c("st", np.array([0])), _c("en", np.array([2])), _c("ax", np.array([1])),
                         _c("sp", np.array([1]))]),
        "matmul": _model([helper.make_node("MatMul", ["x", "b"], ["y"])], [_t("x", [2, 8])], [y],
                         [_c("b", np.ones((8, 4), np.float32))]),
        "gemm": _model([helper.make_node("Gemm", ["x", "b"], ["y"], transB=1, alpha=1.0)], [_t("x", [2, 8])], [y],
                       [_c("b", np.ones((4, 8), np.float32))]),
        "split": _model([helper.make_node("Split", ["x", "sp"], ["y", "z"], axis=1)], [x4], [y, _t("z", None)],
                        [_c("sp", np.array([1, 2]))]),
        "reduce": _model([helper.make_node("ReduceMean", ["x", "ax"], ["y"], keepdims=1)], [x4], [y],
                         [_c("ax", np.array([2, 3]))], opset=18),
        "batchnorm": _model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-5)],
                            [x4], [y], [_c(n, np.ones(3, np.float32)) for n in "sbmv"]),
        "cast": _model([helper.make_node("Cast", ["x"], ["y"], to=TP.FLOAT16)], [x4], [y]),
        "topk": _model([helper.make_node("TopK", ["x", "k"], ["y", "z"], axis=-1)], [x4], [y, _t("z", None)],
                       [_c("k", np.array([3]))]),
        "pad": _model([helper.make_node("Pad", ["x", "p"], ["y"])], [x4], [y], [_c("p", np.array([0, 0, 1, 1] * 2))]),
        "tile": _model([helper.make_node("Tile", ["x", "r"], ["y"])], [x4], [y], [_c("r", np.array([1, 1, 2, 2]))]),
        "expand": _model([helper.make_node("Expand", ["x", "s"], ["y"])], [x4], [y], [_c("s", np.array([2, 3, 8, 8]))]),
        "resize": _model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest")], [x4], [y],
                         [_c("sc", np.array([1, 1, 2, 2], np.float32))]),
        "cos": _model([helper.make_node("ConstantOfShape", ["s"], ["c"], value=_c("v", np.array([1.0], np.float32))),
                       helper.make_node("Add", ["x", "c"], ["y"])], [_t("x", [2, 3])], [y],
                      [_c("s", np.array([2, 3]))]),
        "range": _model([helper.make_node("Range", ["a", "b", "d"], ["r"]), helper.make_node("Cast", ["r"], ["rf"], to=1),
                         helper.make_node("Add", ["x", "rf"], ["y"])], [_t("x", [5])], [y],
                        [_c("a", np.array(0.0, np.float32)), _c("b", np.array(5.0, np.float32)),
                         _c("d", np.array(1.0, np.float32))]),
        "layernorm": _model([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=1e-5)],
                            [x4], [y], [_c("s", np.ones(8, np.float32)), _c("b", np.zeros(8, np.float32))]),
        "cumsum": _model([helper.make_node("CumSum", ["x", "a"], ["y"])], [x4], [y], [_c("a", np.array(1))]),
        "convtranspose": _model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[3, 3],
                                                  strides=[2, 2])], [x4], [y], [_c("w", np.ones((3, 2, 3, 3), np.float32))]),
        "depthtospace": _model([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)], [_t("x", [1, 4, 2, 2])], [y]),
        "squeeze": _model([helper.make_node("Unsqueeze", ["x", "a"], ["y"])], [x4], [y], [_c("a", np.array([0]))]),
        "argmax": _model([helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=1)], [x4], [y]),
        "lrn": _model([helper.make_node("LRN", ["x"], ["y"], size=3)], [x4], [y]),
        "einsum_like": _model([helper.make_node("Flatten", ["x"], ["y"], axis=1)], [x4], [y]),
    }
    for name in ("small_cnn", "small_transformer", "inception_block"):
        p = ROOT / "models" / f"{name}.onnx"
        if p.is_file():
            m[name] = onnx.load(str(p))
    return m


# -- ONNX mutations --------------------------------------------------------------------------------------------
def _mut_attr(node: onnx.NodeProto, rng: random.Random) -> str:
    if node.attribute and rng.random() < 0.85:
        a = node.attribute[rng.randrange(len(node.attribute))]
    else:
        a = node.attribute.add()
        a.name = rng.choice(["axis", "perm", "kernel_shape", "strides", "pads", "to", "x_unknown"])
        a.type = onnx.AttributeProto.INT
    kind = rng.choice(["value", "value", "value", "type", "drop", "lenlist"])
    if kind == "drop":
        node.attribute.remove(a)
        return f"drop attr {a.name}"
    if kind == "type":
        a.type = rng.choice([onnx.AttributeProto.FLOAT, onnx.AttributeProto.STRING, onnx.AttributeProto.INTS,
                             onnx.AttributeProto.INT, onnx.AttributeProto.TENSOR, onnx.AttributeProto.GRAPH, 0])
        return f"attr {a.name} type {a.type}"
    if a.type == onnx.AttributeProto.INT:
        a.i = max(-2**63, min(2**63 - 1, interesting_int(rng)))
    elif a.type == onnx.AttributeProto.INTS:
        n = len(a.ints)
        del a.ints[:]
        a.ints.extend(max(-2**63, min(2**63 - 1, rng.choice([0, -1, 1, 2**31, 2**40, rng.randrange(-3, 10)])))
                      for _ in range(n if kind != "lenlist" else rng.choice([0, 1, 3, 9])))
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([0.0, -1.0, float("nan"), float("inf"), 1e38])
    elif a.type == onnx.AttributeProto.STRING:
        a.s = rng.choice([b"", b"garbage", b"\xff\xfe", b"NOTSET", b"linear", b"cubic"])
    elif a.type == onnx.AttributeProto.TENSOR:
        a.t.data_type = rng.choice([0, 1, 7, 8, 13, 40])
    return f"attr {a.name}"


def _mut_init(model: onnx.ModelProto, rng: random.Random) -> str:
    inits = model.graph.initializer
    if not inits:
        return "no initializer"
    t = inits[rng.randrange(len(inits))]
    kind = rng.choice(["dims", "dims", "dtype", "truncate", "external", "huge_dims", "typed_len"])
    if kind == "dims" and t.dims:
        t.dims[rng.randrange(len(t.dims))] = rng.choice([0, -1, 2, 7, 2**31, 2**33])
    elif kind == "huge_dims":
        del t.dims[:]
        t.dims.extend([2**20, 2**20, rng.choice([1, 2**12])])
    elif kind == "dtype":
        t.data_type = rng.choice([0, 1, 2, 6, 7, 8, 9, 10, 11, 13, 16, 17, 22, 40])
    elif kind == "truncate":
        if t.raw_data:
            t.raw_data = t.raw_data[:len(t.raw_data) // 2]
        else:
            del t.dims[:]
            t.dims.extend([1000])
    elif kind == "typed_len":
        if t.data_type == TP.FLOAT:
            n = len(t.raw_data) // 4 if t.raw_data else len(t.float_data)
            t.ClearField("raw_data")
            del t.float_data[:]
            t.float_data.extend([1.0] * (n + 3))
    else:
        t.data_location = TP.EXTERNAL
        del t.external_data[:]
        loc = rng.choice(["../outside.bin", "/etc/hostname", "a\0b.bin", "missing.bin", "data.bin", "",
                          "sub/../../x.bin", "/dev/zero", "."])
        for k, v in (("location", loc), ("offset", rng.choice(["0", "-8", "99999999999", "x"])),
                     ("length", rng.choice(["", "4", "-1", "1099511627776"]))):
            e = t.external_data.add()
            e.key, e.value = k, v
        t.ClearField("raw_data")
    return f"init {t.name} {kind}"


def _mut_graph(model: onnx.ModelProto, rng: random.Random) -> str:
    g = model.graph
    kind = rng.choice(["undefined_input", "two_writers", "reorder", "input_no_shape", "input_elem", "input_dim",
                       "output_undefined", "opset", "dup_opset", "op_type", "domain", "empty_graph", "dup_node_name",
                       "cycle"])
    nodes = g.node
    if kind == "undefined_input" and nodes:
        n = nodes[rng.randrange(len(nodes))]
        if n.input:
            n.input[rng.randrange(len(n.input))] = "no_such_tensor"
    elif kind == "two_writers" and len(nodes) >= 1:
        n = nodes[rng.randrange(len(nodes))]
        extra = onnx.NodeProto()
        extra.CopyFrom(n)
        extra.name = n.name + "_twin"
        nodes.append(extra)
    elif kind == "reorder" and len(nodes) > 1:
        items = list(nodes)
        rng.shuffle(items)
        del nodes[:]
        nodes.extend(items)
    elif kind == "input_no_shape" and g.input:
        g.input[0].type.tensor_type.ClearField("shape")
    elif kind == "input_elem" and g.input:
        g.input[0].type.tensor_type.elem_type = rng.choice([0, 8, 13, 16, 17, 40])
    elif kind == "input_dim" and g.input and g.input[0].type.tensor_type.shape.dim:
        d = g.input[0].type.tensor_type.shape.dim[0]
        c = rng.random()
        if c < 0.4:
            d.dim_value = rng.choice([0, -3, 2**31, 2**40])
        else:
            d.dim_param = "N"
    elif kind == "output_undefined" and g.output:
        g.output[0].name = "nowhere"
    elif kind == "opset":
        model.opset_import[0].version = rng.choice([0, 1, 6, 29, 1000, -1])
    elif kind == "dup_opset":
        o = model.opset_import.add()
        o.domain, o.version = "", 13
    elif kind == "op_type" and nodes:
        nodes[rng.randrange(len(nodes))].op_type = rng.choice(["", "NoSuchOp", "conv", "Loop"])
    elif kind == "domain" and nodes:
        nodes[rng.randrange(len(nodes))].domain = rng.choice(["com.x", "ascend", "ai.onnx.ml", "\0"])
    elif kind == "empty_graph":
        del g.node[:]
    elif kind == "dup_node_name" and len(nodes) > 1:
        nodes[1].name = nodes[0].name
    elif kind == "cycle" and nodes:
        n = nodes[0]
        if n.input and n.output:
            n.input[0] = nodes[-1].output[0] if nodes[-1].output else n.output[0]
    return f"graph {kind}"


def _bomb(rng: random.Random) -> tuple[onnx.ModelProto, str]:
    """Constant folds whose result or work is far beyond reason."""
    big = rng.choice([2**16, 2**20, 2**31])
    kind = rng.choice(["cos", "range", "expand", "tile", "pad", "resize", "matmul", "dims"])
    x, y = _t("x", [1]), _t("y", None)
    if kind == "cos":
        nodes = [helper.make_node("ConstantOfShape", ["s"], ["c"]), helper.make_node("ReduceSum", ["c"], ["r"], keepdims=0),
                 helper.make_node("Add", ["x", "r"], ["y"])]
        inits = [_c("s", np.array([big, big], np.int64))]
    elif kind == "range":
        nodes = [helper.make_node("Range", ["a", "b", "d"], ["c"]), helper.make_node("ReduceSum", ["c"], ["r"], keepdims=1),
                 helper.make_node("Add", ["x", "r"], ["y"])]
        inits = [_c("a", np.array(0.0, np.float32)), _c("b", np.array(1e15, np.float32)), _c("d", np.array(1e-3, np.float32))]
    elif kind == "expand":
        nodes = [helper.make_node("Expand", ["v", "s"], ["c"]), helper.make_node("ReduceSum", ["c"], ["r"], keepdims=0),
                 helper.make_node("Add", ["x", "r"], ["y"])]
        inits = [_c("v", np.ones(1, np.float32)), _c("s", np.array([big, big, big], np.int64))]
    elif kind == "tile":
        nodes = [helper.make_node("Tile", ["v", "s"], ["c"]), helper.make_node("ReduceSum", ["c"], ["r"], keepdims=0),
                 helper.make_node("Add", ["x", "r"], ["y"])]
        inits = [_c("v", np.ones((2, 2), np.float32)), _c("s", np.array([big, big], np.int64))]
    elif kind == "pad":
        nodes = [helper.make_node("Pad", ["v", "p"], ["c"]), helper.make_node("ReduceSum", ["c"], ["r"], keepdims=0),
                 helper.make_node("Add", ["x", "r"], ["y"])]
        inits = [_c("v", np.ones((2, 2), np.float32)), _c("p", np.array([big, big, big, big], np.int64))]
    elif kind == "resize":
        nodes = [helper.make_node("Resize", ["v", "", "sc"], ["c"]), helper.make_node("ReduceSum", ["c"], ["r"], keepdims=0),
                 helper.make_node("Add", ["x", "r"], ["y"])]
        inits = [_c("v", np.ones((1, 1, 4, 4), np.float32)), _c("sc", np.array([1, 1, big, big], np.float32))]
    elif kind == "matmul":
        n = rng.choice([2048, 4096])
        nodes = [helper.make_node("ConstantOfShape", ["s"], ["a"], value=_c("one", np.array([1.0], np.float32))),
                 helper.make_node("MatMul", ["a", "a"], ["m"]), helper.make_node("MatMul", ["m", "m"], ["m2"]),
                 helper.make_node("ReduceSum", ["m2"], ["r"], keepdims=0), helper.make_node("Add", ["x", "r"], ["y"])]
        inits = [_c("s", np.array([n, n], np.int64))]
    else:
        nodes = [helper.make_node("Reshape", ["x", "s"], ["y"])]
        inits = [_c("s", np.array([2**33, 2**33], np.int64))]
    return _model(nodes, [x], [y], inits), f"bomb {kind} {big}"


def onnx_mutant(bases: dict[str, onnx.ModelProto], rng: random.Random) -> tuple[bytes, str]:
    r = rng.random()
    if r < 0.08:
        m, what = _bomb(rng)
        return m.SerializeToString(), what
    if r < 0.11:                       # work by reference: If trees, loops unrolled into tens of thousands of nodes
        return onnx_work_bomb(rng)
    name = rng.choice(sorted(bases))
    model = onnx.ModelProto()
    model.CopyFrom(bases[name])
    whats = []
    for _ in range(rng.choice([1, 1, 2])):
        r = rng.random()
        if r < 0.5 and model.graph.node:
            whats.append(_mut_attr(model.graph.node[rng.randrange(len(model.graph.node))], rng))
        elif r < 0.7:
            whats.append(_mut_init(model, rng))
        else:
            whats.append(_mut_graph(model, rng))
    data = model.SerializeToString()
    if rng.random() < 0.07:
        b = bytearray(data)
        for _ in range(rng.choice([1, 4, 16])):
            b[rng.randrange(len(b))] = rng.randrange(256)
        data = bytes(b)
        whats.append("byte flips")
    return data, f"{name}: " + "; ".join(whats)


# -- TensorFlow mutations ------------------------------------------------------------------------------------
def base_tf_models() -> dict[str, bytes]:
    out = {}
    for p in sorted((ROOT / "tests" / "data" / "tf").glob("*.pb")) + [ROOT / "models" / "tf_lenet.pb"]:
        if p.is_file():
            out[p.stem] = p.read_bytes()
    return out


def tf_mutant(bases: dict[str, bytes], rng: random.Random) -> tuple[bytes, str]:
    if rng.random() < 0.05:            # library functions naming each other twice: 2^depth copies
        return tf_work_bomb(rng)
    name = rng.choice(sorted(bases))
    g = tf.GraphDef()
    g.ParseFromString(bases[name])
    nodes = g.node
    kind = rng.choice(["attr", "attr", "input_ref", "placeholder_shape", "op", "drop_node", "const_value", "fill",
                       "dup_name", "bytes"])
    n = nodes[rng.randrange(len(nodes))]
    if kind == "attr" and n.attr:
        key = rng.choice(sorted(n.attr))
        a = n.attr[key]
        c = rng.random()
        if c < 0.3:
            a.Clear()
            a.i = max(-2**63, min(2**63 - 1, interesting_int(rng)))
        elif c < 0.5:
            a.Clear()
            a.s = rng.choice([b"", b"SAME", b"VALID", b"NCHW", b"garbage", b"\xff"])
        elif c < 0.7:
            a.Clear()
            a.list.i.extend([rng.choice(INTS[:12]) for _ in range(rng.choice([0, 1, 4, 5]))])
        elif c < 0.85:
            a.Clear()
            a.type = rng.choice([0, 1, 2, 3, 9, 10, 14, 19, 23, 99])
        else:
            a.Clear()
            a.shape.dim.add().size = rng.choice([-1, 0, 2**40])
        kind += f" {key}"
    elif kind == "input_ref" and n.input:
        n.input[rng.randrange(len(n.input))] = rng.choice(
            [f"{nodes[0].name}:-1", f"{nodes[0].name}:99", "nosuch", "^nosuch", f"{nodes[0].name}:x", ""])
    elif kind == "placeholder_shape":
        for m in nodes:
            if m.op == "Placeholder":
                m.attr["shape"].shape.Clear()
                m.attr["shape"].shape.unknown_rank = rng.random() < 0.5
                if not m.attr["shape"].shape.unknown_rank:
                    m.attr["shape"].shape.dim.add().size = -1
                break
    elif kind == "op":
        n.op = rng.choice(["", "NoSuchOp", "Placeholder", "Const", "Identity"])
    elif kind == "drop_node" and len(nodes) > 1:
        del nodes[rng.randrange(len(nodes))]
    elif kind == "const_value":
        for m in nodes:
            if m.op == "Const":
                t = m.attr["value"].tensor
                c = rng.random()
                if c < 0.4 and t.tensor_shape.dim:
                    t.tensor_shape.dim[0].size = rng.choice([-1, 0, 2**40, 7])
                elif c < 0.7:
                    t.tensor_content = t.tensor_content[: len(t.tensor_content) // 2]
                else:
                    t.dtype = rng.choice([0, 7, 14, 20, 99])
                break
    elif kind == "fill":
        dims, val = nodes.add(), nodes.add()
        dims.name, dims.op = "bomb_dims", "Const"
        dims.attr["dtype"].type = 3
        t = dims.attr["value"].tensor
        t.dtype = 3
        t.tensor_shape.dim.add().size = 3
        t.int_val.extend([2**20, 2**20, 2**10])
        val.name, val.op = "bomb_val", "Const"
        val.attr["dtype"].type = 1
        val.attr["value"].tensor.dtype = 1
        val.attr["value"].tensor.float_val.append(1.0)
        f = nodes.add()
        f.name, f.op = "bomb_fill", "Fill"
        f.input.extend(["bomb_dims", "bomb_val"])
        f.attr["T"].type = 1
    elif kind == "dup_name" and len(nodes) > 1:
        nodes[-1].name = nodes[0].name
    data = g.SerializeToString()
    if kind == "bytes":
        b = bytearray(data)
        for _ in range(rng.choice([1, 4, 16])):
            b[rng.randrange(len(b))] = rng.randrange(256)
        data = bytes(b)
    return data, f"{name}: {kind}"
