"""TensorFlow ops beyond the testdata models: each small frozen graph in tests/data/tf_ops (written by TensorFlow 2.21
with tools/real_models/tf_op_cases.py, its outputs saved) compiles and matches TensorFlow; the ops TensorFlow
folds away when it freezes a tf.function (ClipByValue, ZerosLike/OnesLike) and the frontend's own rules
(unused Placeholders, a Conv1D filter computed from constants) are checked on GraphDefs built here."""
import json

import numpy as np
import pytest

from atc_py.proto import tf_graph_pb2 as tf
from tests.helpers import DATA
from tests.helpers.tf_models import build_and_run_tf

TF_OPS = DATA / "tf_ops"
CASES = json.loads((TF_OPS / "manifest.json").read_text())




@pytest.mark.parametrize("name", sorted(CASES))
def test_tf_op_case_matches_tensorflow(tmp_path, name):
    z = np.load(TF_OPS / f"{name}.npz")
    ins = [z[f"in_{k}"] for k in range(len(CASES[name]["inputs"]))]
    exp = [z[k] for k in sorted((k for k in z.files if k.startswith("out_")), key=lambda k: int(k[4:]))]
    r, outs = build_and_run_tf(tmp_path, str(TF_OPS / f"{name}.pb"), ins)
    assert len(outs) == len(exp)
    for k, (got, want) in enumerate(zip(outs, exp)):
        assert got.shape == want.shape, (name, k)
        assert got.dtype == want.dtype, (name, k)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} output {k}")


def test_cases_cover_the_issue_ops():
    ops = {op for c in CASES.values() for op in c["ops"]}
    for op in ("Einsum", "Erfc", "Erf", "SquaredDifference", "Range", "Conv2DBackpropInput", "Conv3D",
               "ResizeBilinear", "ResizeNearestNeighbor", "GatherNd", "ScatterNd", "OneHot", "TopKV2", "Cumsum",
               "Softplus", "Selu", "Sign", "Floor", "FloorDiv", "FloorMod", "LeakyRelu", "Relu6", "BroadcastTo",
               "Where", "SelectV2", "StopGradient", "PlaceholderWithDefault", "SpaceToBatchND", "BatchToSpaceND"):
        assert op in ops, op


def test_value_dependent_range_runs_in_the_dynamic_partition(tmp_path):
    """tf.range(reduce_sum(n)): the length is data: the Range node is unknown-shape, run by the host executor."""
    r, _ = build_and_run_tf(tmp_path, str(TF_OPS / "range_cumsum.pb"),
               [np.zeros((3, 4), np.float32), np.array([2, 3], np.int32)])
    assert r.summary["unknown_subgraphs"] >= 1


def _node(name, op, inputs=(), **attrs):
    n = tf.NodeDef(name=name, op=op, input=list(inputs))
    for k, v in attrs.items():
        n.attr[k].CopyFrom(v)
    return n


def _const(name, arr):
    arr = np.asarray(arr)
    t = tf.TensorProto(dtype={np.float32: tf.DT_FLOAT, np.int32: tf.DT_INT32}[arr.dtype.type],
                       tensor_shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=d) for d in arr.shape]),
                       tensor_content=arr.tobytes())
    return _node(name, "Const", value=tf.AttrValue(tensor=t), dtype=tf.AttrValue(type=t.dtype))


def _placeholder(name, shape, dtype=tf.DT_FLOAT):
    return _node(name, "Placeholder", dtype=tf.AttrValue(type=dtype),
                 shape=tf.AttrValue(shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=d) for d in shape])))


def test_clip_by_value_scalar_and_tensor_bounds(tmp_path):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    lo = np.array([-1, -0.5, 0, 0.5], np.float32)
    g = tf.GraphDef(node=[_placeholder("x", [3, 4]), _const("a", np.float32(-0.5)), _const("b", np.float32(0.75)),
                          _const("lo", lo), _const("hi", lo + 1), _node("c1", "ClipByValue", ["x", "a", "b"]),
                          _node("c2", "ClipByValue", ["x", "lo", "hi"])])
    r, outs = build_and_run_tf(tmp_path, g, [x], optimization_switch="autofuse:off")
    np.testing.assert_allclose(outs[0], np.clip(x, -0.5, 0.75))
    np.testing.assert_allclose(outs[1], np.clip(x, lo, lo + 1))
    kinds = [n.op_type for n in r.graph.nodes]
    assert "ClipByValue" in kinds and "Maximum" in kinds and "Minimum" in kinds


def test_zeros_like_ones_like_are_constants_of_the_shape(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = tf.GraphDef(node=[_placeholder("x", [2, 3]), _node("z", "ZerosLike", ["x"]), _node("o", "OnesLike", ["x"]),
                          _node("a", "AddV2", ["x", "o"]), _node("b", "Mul", ["x", "z"])])
    _, outs = build_and_run_tf(tmp_path, g, [x])
    np.testing.assert_array_equal(outs[0], x + 1)
    np.testing.assert_array_equal(outs[1], np.zeros_like(x))


def test_unused_placeholder_is_dropped_with_a_warning(tmp_path):
    g = tf.GraphDef(node=[_placeholder("x", [2, 3]), _placeholder("training", [], tf.DT_BOOL),
                          _placeholder("y", [2, 3]), _node("a", "AddV2", ["x", "y"])])
    x, y = np.ones((2, 3), np.float32), np.full((2, 3), 2, np.float32)
    r, outs = build_and_run_tf(tmp_path, g, [x, y])
    assert [n.name for n in r.graph.data_nodes] == ["x", "y"]
    assert r.summary["warnings"] == ["Placeholder training has no consumer: it is not made a model input"]
    np.testing.assert_array_equal(outs[0], x + y)


def test_unused_placeholder_warning_is_logged(atc, tmp_path):
    g = tf.GraphDef(node=[_placeholder("x", [2]), _placeholder("unused", [2]), _node("n", "Neg", ["x"])])
    (tmp_path / "g.pb").write_bytes(g.SerializeToString())
    code, out, _ = atc("--model", str(tmp_path / "g.pb"), "--framework=3", f"--output={tmp_path}/g",
                       "--soc_version=Ascend910B1", "--log=warning")
    assert code == 0
    assert "[WARNING] GE(atc-py): Placeholder unused has no consumer" in out


def test_conv1d_filter_through_expand_dims_of_a_big_constant_folds(tmp_path):
    """The Conv1D kernel (196 KB, more than import folds) reaches Conv2D through ExpandDims: the filter's
    layout change is a node the fold pass turns into a constant; no filter transform runs on the device."""
    r, _ = build_and_run_tf(tmp_path, str(TF_OPS / "conv1d_big_filter.pb"), [np.zeros((1, 9, 128), np.float32)])
    conv = next(n for n in r.graph.nodes if n.op_type == "Conv2D")
    assert conv.inputs[1].is_const
    assert not any(n.op_type == "TransposeD" and n.inputs[0].desc.shape == (1, 3, 128, 128) for n in r.graph.nodes)


def test_top_k_and_resize_take_values_computed_at_run_time(tmp_path):
    """TopKV2's k and ResizeBilinear's size fed as inputs: the value-dependent forms (TopK, Resize) read them
    when the model runs, in the dynamic-shape partition."""
    x = np.array([[3, 1, 4, 1, 5, 9], [2, 6, 5, 3, 5, 8]], np.float32)
    img = np.arange(2 * 3 * 4 * 1, dtype=np.float32).reshape(2, 3, 4, 1)
    g = tf.GraphDef(node=[_placeholder("x", [2, 6]), _placeholder("k", [], tf.DT_INT32),
                          _placeholder("img", [2, 3, 4, 1]), _placeholder("size", [2], tf.DT_INT32),
                          _node("t", "TopKV2", ["x", "k"]), _node("r", "ResizeBilinear", ["img", "size"],
                                                                  align_corners=tf.AttrValue(b=True))])
    r, outs = build_and_run_tf(tmp_path, g, [x, np.array(2, np.int32), img, np.array([5, 7], np.int32)])
    assert r.summary["unknown_subgraphs"] >= 1
    np.testing.assert_array_equal(outs[0], [[9, 5], [8, 6]])
    np.testing.assert_array_equal(outs[1], np.array([[5, 4], [5, 1]], np.int32))
    ys, xs = np.linspace(0, 2, 5), np.linspace(0, 3, 7)     # align_corners: corners map onto corners
    want = img[:, :, :, 0]
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, 2), np.minimum(x0 + 1, 3)
    fy, fx = (ys - y0)[None, :, None], (xs - x0)[None, None, :]
    top = want[:, y0][:, :, x0] * (1 - fx) + want[:, y0][:, :, x1] * fx
    bot = want[:, y1][:, :, x0] * (1 - fx) + want[:, y1][:, :, x1] * fx
    np.testing.assert_allclose(outs[2][..., 0], top * (1 - fy) + bot * fy, rtol=1e-5, atol=1e-5)
