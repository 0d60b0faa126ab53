"""Sizes computed from the run's values, down to 0: a detector's selection (score threshold -> NonZero -> Gather,
k = min(limit, candidates) -> TopK, NMS -> Gather of its selection) where the threshold leaves no candidate, a few
or all of them, and the ops a count feeds (Slice, Tile, Range, ConstantOfShape, Expand, Split, ReduceSum, Pad,
CumSum, ArgMax, batched MatMul with m, k or n the count, Softmax and ReduceMax over it). TopK's k arrives as a tensor, so its tiling reads the value the host executor computed (k = 0 for
no candidate), not the attribute form's default; every shape after it follows onnxruntime's, empty included, in
both precisions and with tiling sink on."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import atc_py
from atc_py.ir.graph import TensorDesc
from atc_py.ops import get_op
from atc_py.ops.core.base import TilingContext
from atc_py.platform.soc import load_soc
from om_run.load.loader import load_model
from om_run.sim.host import Simulation

N = 64
RNG = np.random.default_rng(5)
SCORES = RNG.permutation(N).astype(np.float32) / N                 # distinct: one order in every precision
XY = RNG.uniform(0, 40, (N, 2)).astype(np.float32)
BOXES = np.concatenate([XY, XY + RNG.uniform(4, 16, (N, 2)).astype(np.float32)], 1)


def selection_model():
    """scores [N], boxes [N, 4], threshold [1] -> the kept scores, their boxes and the boxes NMS keeps of them."""
    i64 = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)  # noqa: E731
    nodes = [
        helper.make_node("Greater", ["scores", "thr"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Reshape", ["nz", "minus1"], ["idx"]),
        helper.make_node("Gather", ["scores", "idx"], ["s"]),
        helper.make_node("Gather", ["boxes", "idx"], ["b"]),
        helper.make_node("Shape", ["s"], ["count"]),
        helper.make_node("Concat", ["limit", "count"], ["both"], axis=0),
        helper.make_node("ReduceMin", ["both"], ["k0"], keepdims=0),
        helper.make_node("Reshape", ["k0", "one"], ["k"]),
        helper.make_node("TopK", ["s", "k"], ["top", "order"]),
        helper.make_node("Gather", ["b", "order"], ["top_boxes"]),
        helper.make_node("Unsqueeze", ["top_boxes", "zero"], ["b3"]),
        helper.make_node("Unsqueeze", ["top", "zero_one"], ["s3"]),
        helper.make_node("NonMaxSuppression", ["b3", "s3", "max_out", "iou"], ["sel"]),
        helper.make_node("Gather", ["sel", "two"], ["keep"], axis=1),
        helper.make_node("Gather", ["top_boxes", "keep"], ["nms_boxes"]),
    ]
    inits = [i64("minus1", [-1]), i64("limit", [10]), i64("one", [1]), i64("zero", [0]), i64("zero_one", [0, 1]),
             i64("max_out", [100]), helper.make_tensor("iou", TensorProto.FLOAT, [1], [0.3]),
             helper.make_tensor("two", TensorProto.INT64, [], [2])]
    g = helper.make_graph(nodes, "selection",
                          [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [N]),
                           helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [N, 4]),
                           helper.make_tensor_value_info("thr", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                           for n in ("top", "top_boxes", "nms_boxes")], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def count_model():
    """x [N], threshold [1] -> what the count of x > threshold sizes."""
    i64 = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)  # noqa: E731
    nodes = [
        helper.make_node("Greater", ["x", "thr"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Shape", ["nz"], ["shape"]),
        helper.make_node("Slice", ["shape", "one", "two"], ["count"]),
        helper.make_node("Slice", ["x", "zero", "count"], ["head"]),
        helper.make_node("Concat", ["count", "one"], ["reps"], axis=0),
        helper.make_node("Tile", ["mat", "reps"], ["tiled"]),
        helper.make_node("Squeeze", ["count"], ["n"]),
        helper.make_node("Range", ["zero0", "n", "one0"], ["range"]),
        helper.make_node("ConstantOfShape", ["count"], ["filled"],
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.5])),
        helper.make_node("Concat", ["count", "three"], ["eshape"], axis=0),
        helper.make_node("Expand", ["row", "eshape"], ["expanded"]),
        helper.make_node("Split", ["tiled", "splits"], ["left", "right"], axis=1),
        helper.make_node("ReduceSum", ["tiled", "zero"], ["sums"], keepdims=0),
        helper.make_node("Concat", ["count", "count"], ["pads"], axis=0),
        helper.make_node("Pad", ["head", "pads"], ["padded"]),
        helper.make_node("Gather", ["x", "range"], ["gathered"]),
        helper.make_node("CumSum", ["head", "zero0"], ["cumsum"]),
        helper.make_node("ArgMax", ["tiled"], ["argmax"], axis=1, keepdims=0),
        helper.make_node("Unsqueeze", ["head", "zero_two"], ["column"]),          # [2, count, 1]
        helper.make_node("MatMul", ["column", "w"], ["batched"]),                 # m = count
        helper.make_node("Transpose", ["column"], ["line"], perm=[0, 2, 1]),      # [2, 1, count]
        helper.make_node("MatMul", ["line", "column"], ["inner"]),                # k = count
        helper.make_node("MatMul", ["column", "line"], ["outer"]),                # m = n = count
        helper.make_node("Softmax", ["line"], ["softmax"], axis=-1),              # over count elements
        helper.make_node("LogSoftmax", ["line"], ["logsoftmax"], axis=-1),
        helper.make_node("ReduceMax", ["line"], ["rowmax"], axes=[2], keepdims=0),
    ]
    inits = [i64("one", [1]), i64("two", [2]), i64("zero", [0]), i64("three", [3]), i64("splits", [1, 2]),
             i64("zero_two", [0, 2]), helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 2], [0.5, -2]),
             helper.make_tensor("zero0", TensorProto.INT64, [], [0]), helper.make_tensor("one0", TensorProto.INT64, [], [1]),
             helper.make_tensor("mat", TensorProto.FLOAT, [2, 3], [0, 5, 2, 3, 1, 4]),
             helper.make_tensor("row", TensorProto.FLOAT, [3], [1, 2, 3])]
    outs = ["head", "tiled", "range", "filled", "expanded", "left", "right", "sums", "padded", "gathered", "cumsum",
            "argmax", "batched", "inner", "outer", "softmax", "logsoftmax", "rowmax"]
    g = helper.make_graph(nodes, "counted", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N]),
                                             helper.make_tensor_value_info("thr", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info(o, TensorProto.INT64 if o in ("range", "argmax")
                                                         else TensorProto.FLOAT, None) for o in outs], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def model():
    return selection_model()


OPTIONS = pytest.mark.parametrize("options", [{"ge.exec.precision_mode": "force_fp32"}, {},
                                              {"ge.tiling_schedule_optimize": "1"}],
                                  ids=["force_fp32", "default", "tiling_sink"])


@OPTIONS
def test_what_a_count_sizes_follows_it_down_to_zero(options, tmp_path):
    m = count_model()
    res = atc_py.build(m, {"ge.socVersion": "Ascend910B1", **options})
    p = tmp_path / "count.om"
    p.write_bytes(res.om)
    sim = Simulation(load_model(str(p)))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = (np.arange(N) / N).astype(np.float32)
    for thr, count in ((2.0, 0), (0.9, 6), (-1.0, N)):
        feed = [x, np.array([thr], np.float32)]
        want = sess.run(None, dict(zip(("x", "thr"), feed)))
        with np.errstate(divide="ignore"):   # the log of an empty sum, as onnxruntime's: -inf
            got, _ = sim.run(feed)
        assert want[0].shape == (count,)
        for name, g, w in zip([o.name for o in m.graph.output], got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (thr, name, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3, err_msg=name)


@OPTIONS
def test_selection_sizes_follow_the_values_down_to_zero(model, options, tmp_path):
    res = atc_py.build(model, {"ge.socVersion": "Ascend910B1", **options})
    p = tmp_path / "sel.om"
    p.write_bytes(res.om)
    sim = Simulation(load_model(str(p)))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for thr, kept in ((2.0, 0), (0.93, 4), (-1.0, 10)):
        feed = {"scores": SCORES, "boxes": BOXES, "thr": np.array([thr], np.float32)}
        want = sess.run(None, feed)
        got, _ = sim.run(list(feed.values()))
        assert want[0].shape == (kept,)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (thr, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3)


def test_topk_with_k_as_a_tensor_tiles_with_its_value():
    """TopK(x, k)'s tiling packs the k the host executor read (0 of an empty x is valid), not TopKV2's default 1."""
    spec = get_op("TopK")
    soc = load_soc("Ascend910B1")
    for n, k in ((0, 0), (7, 3)):
        ins = [TensorDesc((n,), "float32", "ND", "ND"), TensorDesc((1,), "int64", "ND", "ND")]
        outs = [TensorDesc((k,), "float32", "ND", "ND"), TensorDesc((k,), "int64", "ND", "ND")]
        tiling = spec.tiling(TilingContext(ins, outs, {"dim": -1, "largest": True, "sorted": True}, soc,
                                           {1: np.array([k], np.int64)}))
        assert get_op("TopKV2").tiling_struct.unpack(tiling.tiling_data)["k"] == k
