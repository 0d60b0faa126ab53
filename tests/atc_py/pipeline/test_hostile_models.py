"""atc-py against malformed models and flags: a specific code naming the node and
field for every invalid model, no fold that exhausts memory or time, E19999 only for real internal faults."""
from __future__ import annotations

import os
import time
from functools import partial

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.proto import tf_graph_pb2 as tf
from tests.helpers import MODELS
from tests.helpers.onnx_builders import onnx_model

SOC = {"ge.socVersion": "Ascend910B1"}


model = partial(onnx_model, opset=17, ir_version=8)


def t(name, shape, dt=TP.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


X4, Y = t("x", [1, 3, 8, 8]), t("y", None)


def build(m, **options):
    return atc_py.build(m, {**SOC, **options})


def expect(m, code: str, *words: str, **options):
    with pytest.raises(AtcError) as e:
        build(m, **options)
    msg = str(e.value)
    assert e.value.code == code and all(w in msg for w in words), msg
    return msg


def pool(**attrs):
    return model([helper.make_node("MaxPool", ["x"], ["y"], **attrs)], [X4], [Y])


@pytest.mark.parametrize("attrs,words", [
    ({"kernel_shape": [0, 2]}, ["kernel_shape"]),
    ({"kernel_shape": [2, 2], "pads": [2, 0, 0, 0]}, ["smaller than the kernel"]),
    ({"kernel_shape": [2, 2], "dilations": [0, 1]}, ["dilations"]),
    ({"kernel_shape": [2, 2], "strides": [0, 1]}, ["strides"]),
    ({"kernel_shape": [2, 2], "pads": [0, 0]}, ["pads"]),
])
def test_invalid_window_attributes_name_the_node(attrs, words):
    """These compiled before (MaxPool kernel 0 gave garbage output) or crashed in the adapter."""
    expect(pool(**attrs), "E14001", "MaxPool_0", "MaxPool", *words)


def test_a_conv_with_zero_strides_or_wrong_pads_is_rejected():
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    for attrs in ({"strides": [0, 0]}, {"pads": [1, 1]}, {"dilations": [1, 0]}):
        m = model([helper.make_node("Conv", ["x", "w"], ["y"], **attrs)], [X4], [Y], [w])
        expect(m, "E14001", "Conv")


def test_attribute_of_the_wrong_type_is_e13014():
    m = model([helper.make_node("Softmax", ["x"], ["y"], axis=1.5)], [X4], [Y])
    expect(m, "E13014", "axis", "Softmax")


def test_input_dtype_outside_the_schema_is_rejected():
    m = model([helper.make_node("Softmax", ["x"], ["y"])], [t("x", [2, 3], TP.INT32)], [Y])
    expect(m, "E14001", "Softmax", "int32")


@pytest.mark.parametrize("dims,data,words", [
    ([4, 3, 3, 3], np.ones(54, np.float32).tobytes(), ["raw_data", "needs 432"]),
    ([2**33, 2**33], b"", ["would need more than"]),
    ([-1, 3], b"", ["negative dimension"]),
])
def test_initializers_are_checked_against_their_shape(dims, data, words):
    w = onnx.TensorProto(name="w", data_type=TP.FLOAT, dims=dims, raw_data=data)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"])], [X4], [Y], [w])
    expect(m, "E10041", "initializer 'w'", *words)


def test_two_nodes_writing_one_tensor_and_undefined_inputs():
    relu = helper.make_node("Relu", ["x"], ["y"], name="a")
    twin = helper.make_node("Relu", ["x"], ["y"], name="b")
    expect(model([relu, twin], [X4], [Y]), "E10041", "'y'", "one producer")
    expect(model([helper.make_node("Relu", ["nowhere"], ["y"])], [X4], [Y]), "E10041", "nowhere")


def test_an_input_without_a_shape_is_not_a_scalar():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", TP.FLOAT, None)], [Y])
    expect(m, "E10001", "--input_shape")
    assert build(m, input_shape="x:2,3").graph.net_output.inputs[0].desc.shape == (2, 3)


def test_nul_in_an_external_data_path(tmp_path):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    w.data_location = TP.EXTERNAL
    w.ClearField("raw_data")
    for k, v in (("location", "a\0b.bin"), ("offset", "0")):
        e = w.external_data.add()
        e.key, e.value = k, v
    p = tmp_path / "m.onnx"
    p.write_bytes(model([helper.make_node("Conv", ["x", "w"], ["y"])], [X4], [Y], [w]).SerializeToString())
    expect(str(p), "E10041", "not a file name")


@pytest.mark.parametrize("location,links,words", [
    ("loop", [("loop", "loop")], "a loop of symbolic links"),
    ("a", [("a", "b"), ("b", "a")], "a loop of symbolic links"),
    ("loop/w.bin", [("loop", "loop")], "a loop of symbolic links"),
    ("x" * 300, [], "longer than the file system allows"),
    ("/".join(["d"] * 2500), [], "longer than the file system allows"),
])
def test_external_data_locations_the_file_system_cannot_resolve(tmp_path, location, links, words):
    """Symlink loops and over-long names raised from pathlib (E19999): E10041 naming the tensor and why."""
    for name, target in links:
        os.symlink(target, tmp_path / name)
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    w.data_location = TP.EXTERNAL
    w.ClearField("raw_data")
    for k, v in (("location", location), ("offset", "0"), ("length", "432")):
        e = w.external_data.add()
        e.key, e.value = k, v
    p = tmp_path / "m.onnx"
    p.write_bytes(model([helper.make_node("Conv", ["x", "w"], ["y"])], [X4], [Y], [w]).SerializeToString())
    msg = expect(str(p), "E10041", "m.onnx", "tensor 'w'", "cannot be resolved", words)
    assert len(msg) < 600


def test_duplicate_opsets_and_unknown_opset():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [X4], [Y])
    m.opset_import.add(domain="", version=13)
    expect(m, "E16005")
    m2 = model([helper.make_node("Relu", ["x"], ["y"])], [X4], [Y], opset=1000)
    expect(m2, "E10041", "opset 1000")


def test_tensors_no_device_holds_are_rejected():
    shape = numpy_helper.from_array(np.array([2**20, 2**20, 2**10], np.int64), "s")
    m = model([helper.make_node("ConstantOfShape", ["s"], ["c"]), helper.make_node("Add", ["x", "c"], ["y"])],
              [t("x", [1])], [Y], [shape])
    expect(m, "E14001", "more than any Ascend device has")


def _bomb(nodes, inits):
    return model(nodes + [helper.make_node("ReduceSum", ["c"], ["r"], keepdims=0),
                          helper.make_node("Add", ["x", "r"], ["y"])], [t("x", [1])], [Y], inits)


def test_big_folds_stay_on_the_device_and_compile_fast():
    """Finding 5: folding ConstantOfShape / Expand / Tile ran out of memory, a MatMul fold ran for minutes."""
    n = 4096
    one = numpy_helper.from_array(np.array([1.0], np.float32), "one")
    mm = _bomb([helper.make_node("ConstantOfShape", ["s"], ["a"], value=one), helper.make_node("MatMul", ["a", "a"], ["c"])],
               [numpy_helper.from_array(np.array([n, n], np.int64), "s")])
    t0 = time.perf_counter()
    res = build(mm)
    assert time.perf_counter() - t0 < 20
    assert [nd.op_type for nd in res.graph.nodes if nd.op_type in ("MatMulV2", "BatchMatMulV2")] == ["MatMulV2"]
    tile = _bomb([helper.make_node("Tile", ["v", "rep"], ["c"])],
                 [numpy_helper.from_array(np.ones((2, 2), np.float32), "v"),
                  numpy_helper.from_array(np.array([4096, 4096], np.int64), "rep")])
    res = build(tile, fold_size_limit=str(1 << 20))
    assert any(nd.op_type == "TileD" for nd in res.graph.nodes)   # 256 MiB > 1 MiB: left to the device
    assert not any(nd.op_type == "TileD" for nd in build(tile).graph.nodes)   # within the default: folded


def test_range_beyond_the_fold_limit_is_an_error_not_an_allocation():
    vals = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in (("a", 0.0), ("b", 1e15), ("d", 1e-3))]
    m = _bomb([helper.make_node("Range", ["a", "b", "d"], ["c"])], vals)
    expect(m, "E14001", "Range", "fold size limit")


@pytest.mark.parametrize("flag,value,code", [("debug_sink_nops", "1e8", "E10003"),
                                             ("debug_sink_nops", "100000000", "E10003"),
                                             ("fold_size_limit", "-1", "E10003"),
                                             ("fold_size_limit", "99999999999999", "E10003")])
def test_numeric_flags_are_bounded(atc, tmp_path, flag, value, code):
    out = tmp_path / "m"
    rc, stdout, _ = atc(f"--model={MODELS / 'small_cnn.onnx'}", "--framework=5", f"--output={out}",
                        "--soc_version=Ascend910B1", f"--{flag}={value}")
    assert rc == 255 and code in stdout and not (tmp_path / "m.om").exists()


def test_a_plugin_that_exits_is_an_error_and_writes_nothing(atc, tmp_path):
    plugin = tmp_path / "bye.py"
    plugin.write_text("import sys\nsys.exit(0)\n")
    out = tmp_path / "m"
    rc, stdout, _ = atc(f"--model={MODELS / 'small_cnn.onnx'}", "--framework=5", f"--output={out}",
                        "--soc_version=Ascend910B1", f"--op_plugin={plugin}")
    assert rc == 255 and "E10001" in stdout and "sys.exit(0)" in stdout and not (tmp_path / "m.om").exists()


def _tf_graph():
    g = tf.GraphDef()
    x = g.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = tf.DT_FLOAT
    x.attr["shape"].shape.dim.add().size = 4
    r = g.node.add(name="r", op="Relu", input=["x"])
    r.attr["T"].type = tf.DT_FLOAT
    return g


def test_tf_input_references_are_checked():
    """Finding 6: `x:-1` silently took the last output."""
    for ref, code in (("x:-1", "E12009"), ("x:9", "E14001"), ("nosuch", "E12009"), ("x:y", "E12009")):
        g = _tf_graph()
        g.node[1].input[0] = ref
        with pytest.raises(AtcError) as e:
            atc_py.build(g, {**SOC, "ge.frameworkType": "3"})
        assert e.value.code == code, str(e.value)


def test_tf_attribute_of_the_wrong_kind():
    g = _tf_graph()
    s = g.node.add(name="s", op="Squeeze", input=["r"])
    s.attr["squeeze_dims"].s = b"S"
    with pytest.raises(AtcError, match=r"E14001.*squeeze_dims"):
        atc_py.build(g, {**SOC, "ge.frameworkType": "3"})


def test_internal_faults_are_e19999_with_the_node_and_a_traceback_under_debug(monkeypatch):
    from atc_py.frontend.onnx.adapter import ADAPTERS
    from atc_py.frontend.onnx.adapters import activation  # noqa: F401  (registers Relu)
    cls = ADAPTERS[("", "Relu")]

    def broken(ctx):
        raise KeyError("a bug of ours")
    monkeypatch.setattr(cls, "impl_for", classmethod(lambda c, opset: broken))
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [X4], [Y])
    msg = expect(m, "E19999", "node r (Relu)", "a bug of ours")
    assert "Traceback" not in msg
    monkeypatch.setenv("ATC_PY_DEBUG", "1")
    with pytest.raises(KeyError):
        build(m)
