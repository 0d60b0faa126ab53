"""Vision and detection ops beyond what onnx's node cases cover, through atc-py + om-run against onnxruntime
(or onnx's reference where onnxruntime has no kernel): NonMaxSuppression's count of boxes known only after its
kernel (the dynamic partition reads it back and the next op runs with it), MaxRoiPool, RoiAlign with adaptive
sampling, GlobalLpPool, MaxPool indices round-tripped through MaxUnpool, GridSample past the borders, a strided
grouped DeformConv, Col2Im and Resize with static parameters."""
from __future__ import annotations

from functools import partial

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper
from onnx.reference import ReferenceEvaluator

import atc_py
from atc_conformance.backend import AtcBackend
from atc_py.common.errors import AtcError
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers.onnx_builders import onnx_model

RNG = np.random.default_rng(5)
F, I64 = TP.FLOAT, TP.INT64
ORIGIN = {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}


model = partial(onnx_model, opset=17, ir_version=8)


def ort_run(m, feeds):
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def check(m, feeds, want=None, rtol=1e-5, atol=1e-5):
    want = want if want is not None else ort_run(m, feeds)
    got = AtcBackend.run_model(m, list(feeds.values()))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def test_nms_count_comes_from_its_kernel_and_feeds_the_next_op(tmp_path):
    """How many boxes survive is known only once the kernel ran: the node runs in the dynamic partition, the host
    reads the real shape back (a stream sync) and the Gather after it gets that shape."""
    corner = RNG.random((2, 20, 2)) * 10
    boxes = np.concatenate([corner, corner + RNG.random((2, 20, 2)) * 4 + 6], axis=2).astype(np.float32)
    scores = RNG.random((2, 3, 20)).astype(np.float32)
    nodes = [helper.make_node("NonMaxSuppression", ["b", "s", "k", "iou", "th"], ["sel"]),
             helper.make_node("Gather", ["sel", "col"], ["box_idx"], axis=1)]
    m = model(nodes, [("b", F, [2, 20, 4]), ("s", F, [2, 3, 20])], [("sel", I64), ("box_idx", I64)],
              [("k", np.array([4], np.int64)), ("iou", np.array([0.3], np.float32)),
               ("th", np.array([0.2], np.float32)), ("col", np.array(2, np.int64))], opset=11)
    res = atc_py.build(m, ORIGIN)
    assert res.summary["unknown_subgraphs"] >= 1
    p = tmp_path / "nms.om"
    p.write_bytes(res.om)
    outs, stats = Simulation(load_model(str(p))).run([boxes, scores])
    want = ort_run(m, {"b": boxes, "s": scores})
    assert 0 < len(want[0]) < 2 * 3 * 4
    for g, w in zip(outs, want):
        np.testing.assert_array_equal(g, w)
    assert any("output shape" in e.name for e in stats.host_events)
    with pytest.raises(AtcError) as e:   # timing only: no kernel result, so no shape to go on with
        Simulation(load_model(str(p)), compute=False).run(None)
    assert e.value.code == "E30004" and "output shape comes from its kernel" in str(e.value)


def test_max_roi_pool_matches_onnxruntime():
    m = model([helper.make_node("MaxRoiPool", ["x", "r"], ["y"], pooled_shape=[3, 2], spatial_scale=0.5)],
              [("x", F, [2, 3, 12, 10]), ("r", F, [4, 5])], [("y", F)])
    rois = np.array([[0, 1, 1, 9, 15], [1, 0, 0, 19, 23], [1, 4.6, 3.3, 5.1, 3.9], [0, -4, -2, 30, 30]], np.float32)
    check(m, {"x": RNG.standard_normal((2, 3, 12, 10)).astype(np.float32), "r": rois}, rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_adaptive_sampling_matches_onnxruntime(mode):
    node = helper.make_node("RoiAlign", ["x", "r", "i"], ["y"], output_height=3, output_width=4, sampling_ratio=0,
                            spatial_scale=0.25, mode=mode)
    m = model([node], [("x", F, [2, 2, 9, 11]), ("r", F, [3, 4]), ("i", I64, [3])], [("y", F)], opset=16)
    rois = np.array([[0, 0, 30, 20], [5.5, 3.2, 41, 37], [-4, -4, 8, 12]], np.float32)
    check(m, {"x": RNG.standard_normal((2, 2, 9, 11)).astype(np.float32), "r": rois, "i": np.array([1, 0, 1])},
          rtol=1e-4)


def test_global_lp_pool_matches_onnxruntime():
    m = model([helper.make_node("GlobalLpPool", ["x"], ["y"], p=3)], [("x", F, [2, 3, 5, 4])], [("y", F)])
    check(m, {"x": RNG.standard_normal((2, 3, 5, 4)).astype(np.float32)}, rtol=1e-4)


def test_maxpool_indices_round_trip_through_maxunpool():
    nodes = [helper.make_node("MaxPool", ["x"], ["p", "idx"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("MaxUnpool", ["p", "idx", "shape"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1])]
    m = model(nodes, [("x", F, [2, 3, 7, 7])], [("p", F), ("idx", I64), ("y", F)],
              [("shape", np.array([2, 3, 7, 7], np.int64))])
    check(m, {"x": RNG.standard_normal((2, 3, 7, 7)).astype(np.float32)}, rtol=0, atol=0)


@pytest.mark.parametrize("mode,padding", [("bicubic", "reflection"), ("bilinear", "border"), ("nearest", "zeros")])
def test_grid_sample_past_the_borders_matches_onnxruntime(mode, padding):
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=0)
    m = model([node], [("x", F, [2, 3, 5, 6]), ("g", F, [2, 4, 7, 2])], [("y", F)], opset=16)
    grid = (RNG.random((2, 4, 7, 2)) * 3.2 - 1.6).astype(np.float32)
    check(m, {"x": RNG.standard_normal((2, 3, 5, 6)).astype(np.float32), "g": grid}, rtol=1e-4, atol=1e-5)


def test_strided_grouped_deform_conv_with_mask_matches_the_reference():
    node = helper.make_node("DeformConv", ["x", "w", "off", "b", "mask"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1], dilations=[1, 2], group=2, offset_group=2)
    x = RNG.standard_normal((1, 4, 7, 8)).astype(np.float32)
    oh, ow = 4, 3
    feeds = {"x": x, "off": (RNG.standard_normal((1, 2 * 9 * 2, oh, ow)) * 1.5).astype(np.float32),
             "mask": RNG.random((1, 2 * 9, oh, ow)).astype(np.float32)}
    m = model([node], [("x", F, [1, 4, 7, 8]), ("off", F, [1, 36, oh, ow]), ("mask", F, [1, 18, oh, ow])], [("y", F)],
              [("w", RNG.standard_normal((6, 2, 3, 3)).astype(np.float32)), ("b", RNG.standard_normal(6).astype(np.float32))],
              opset=19)
    check(m, feeds, want=ReferenceEvaluator(m).run(None, feeds), rtol=1e-4, atol=1e-4)


def test_col2im_and_resize_with_static_parameters():
    """Known image / block shapes and Resize sizes become attributes (no dynamic partition)."""
    nodes = [helper.make_node("Col2Im", ["x", "img", "blk"], ["c"], strides=[2, 1], pads=[1, 0, 1, 2]),
             helper.make_node("Resize", ["c", "", "", "sz"], ["y"], mode="cubic", antialias=1, exclude_outside=1,
                              cubic_coeff_a=-0.5)]
    m = model(nodes, [("x", F, [1, 2 * 6, 18])], [("y", F)],
              [("img", np.array([6, 5], np.int64)), ("blk", np.array([3, 2], np.int64)),
               ("sz", np.array([1, 2, 4, 3], np.int64))], opset=18)
    feeds = {"x": RNG.standard_normal((1, 12, 18)).astype(np.float32)}
    res = atc_py.build(m, ORIGIN)
    assert res.summary["unknown_subgraphs"] == 0
    check(m, feeds, want=ReferenceEvaluator(m).run(None, feeds), rtol=1e-4, atol=1e-5)


def test_run_time_sizes_beyond_the_device_or_the_kernel_are_clear_errors():
    """A crop target computed at run time asks for 10^15 elements: E30004 before anything is allocated; a roi
    scaled far beyond its map asks RoiAlign for an absurd sampling grid: E30004 naming the roi."""
    m = model([helper.make_node("CenterCropPad", ["x", "shape"], ["y"])], [("x", F, [4, 5]), ("shape", I64, [2])],
              [("y", F)], opset=18)
    with pytest.raises(AtcError) as e:
        AtcBackend.run_model(m, [np.ones((4, 5), np.float32), np.array([10 ** 8, 10 ** 7], np.int64)])
    assert e.value.code == "E30004" and "more than the device's" in str(e.value)
    node = helper.make_node("RoiAlign", ["x", "r", "i"], ["y"], output_height=7, output_width=7, spatial_scale=1e6)
    m = model([node], [("x", F, [1, 8, 9, 9]), ("r", F, [1, 4]), ("i", I64, [1])], [("y", F)], opset=16)
    with pytest.raises(AtcError) as e:
        AtcBackend.run_model(m, [np.ones((1, 8, 9, 9), np.float32), np.array([[0, 0, 50, 50]], np.float32),
                                 np.array([0])])
    assert e.value.code == "E30004" and "roi 0 needs" in str(e.value)


def test_detection_post_processing_keeps_index_dtypes_through_value_dependent_ops(tmp_path):
    """Box decoding as torchvision's detectors write it: TopK with K = min(N, 5) computed from the graph, NonZero of a
    score threshold, NonMaxSuppression's selected indices and ArgMax, each feeding a Gather or a logical op. Their
    index outputs are int64 whatever is known at compile time (TopK's used to be typed as its values' float32)."""
    nodes = [helper.make_node("Shape", ["scores"], ["s"]),
             helper.make_node("Gather", ["s", "two"], ["n"], axis=0),
             helper.make_node("Min", ["n", "cap"], ["k0"]),
             helper.make_node("Reshape", ["k0", "one_d"], ["k"]),
             helper.make_node("TopK", ["scores", "k"], ["top", "idx"], axis=2),
             helper.make_node("Reshape", ["idx", "flat"], ["idx_flat"]),
             helper.make_node("Gather", ["boxes_2d", "idx_flat"], ["top_boxes"], axis=0),
             helper.make_node("Squeeze", ["boxes", "zero_d"], ["boxes_2d"]),
             helper.make_node("Greater", ["scores", "thr"], ["above"]),
             helper.make_node("NonZero", ["above"], ["nz"]),
             helper.make_node("Gather", ["nz", "two"], ["nz_pos"], axis=0),
             helper.make_node("Gather", ["boxes_2d", "nz_pos"], ["kept"], axis=0),
             helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou"], ["sel"]),
             helper.make_node("Gather", ["sel", "two"], ["sel_idx"], axis=1),
             helper.make_node("Gather", ["boxes_2d", "sel_idx"], ["nms_boxes"], axis=0),
             helper.make_node("ArgMax", ["scores"], ["best"], axis=2, keepdims=0),
             helper.make_node("Equal", ["best", "idx_first"], ["same"]),
             helper.make_node("Not", ["same"], ["differs"])]
    inits = [("two", np.array(2, np.int64)), ("cap", np.array(5, np.int64)), ("one_d", np.array([1], np.int64)),
             ("flat", np.array([-1], np.int64)), ("zero_d", np.array([0], np.int64)), ("thr", np.array(0.7, np.float32)),
             ("max_out", np.array([3], np.int64)), ("iou", np.array([0.5], np.float32)),
             ("idx_first", np.array([0], np.int64))]
    m = model(nodes, [("boxes", F, [1, "N", 4]), ("scores", F, [1, 1, "N"])],
              [("top_boxes", F), ("kept", F), ("nms_boxes", F), ("differs", TP.BOOL), ("top", F)], inits)
    corner = RNG.random((1, 12, 2)) * 10
    boxes = np.concatenate([corner, corner + 1 + RNG.random((1, 12, 2)) * 4], axis=2).astype(np.float32)
    scores = RNG.random((1, 1, 12)).astype(np.float32)
    # N unknown at compile time (a detector's candidate count): K, the NonZero count and NMS's count come at run time
    res = atc_py.build(m, {**ORIGIN, "input_shape_range": "boxes:[1,1~64,4];scores:[1,1,1~64]"})
    p = tmp_path / "post.om"
    p.write_bytes(res.om)
    outs, _ = Simulation(load_model(str(p))).run([boxes, scores])
    for g, w in zip(outs, ort_run(m, {"boxes": boxes, "scores": scores})):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_an_empty_selection_flows_through_matmul_fused_ops_and_concat(tmp_path):
    """A detector that keeps no box: NonZero of a threshold nothing passes -> Gather of 0 rows -> MatMul, a fused
    Add + Relu, a Concat of two empty halves: every kernel takes the empty tensors (a cube grid of no tiles, an
    AscGraph launch of no rows, a Concat of 0-row inputs) and gives onnxruntime's (0, n) results."""
    nodes = [helper.make_node("Greater", ["scores", "thr"], ["keep"]),
             helper.make_node("NonZero", ["keep"], ["nz"]),
             helper.make_node("Reshape", ["nz", "flat"], ["idx"]),
             helper.make_node("Gather", ["feats", "idx"], ["rows"], axis=0),
             helper.make_node("MatMul", ["rows", "w"], ["proj"]),
             helper.make_node("Add", ["proj", "b"], ["pb"]),
             helper.make_node("Relu", ["pb"], ["r"]),
             helper.make_node("Concat", ["r", "rows"], ["y"], axis=1)]
    inits = [("thr", np.array(2.0, np.float32)), ("flat", np.array([-1], np.int64)),
             ("w", RNG.standard_normal((8, 6)).astype(np.float32)), ("b", RNG.standard_normal(6).astype(np.float32))]
    m = model(nodes, [("scores", F, ["N"]), ("feats", F, ["N", 8])], [("y", F)], inits)
    res = atc_py.build(m, {**ORIGIN, "input_shape_range": "scores:[1~16];feats:[1~16,8]"})
    p = tmp_path / "empty.om"
    p.write_bytes(res.om)
    sim = Simulation(load_model(str(p)))
    for scores in (RNG.random(5).astype(np.float32), np.array([0.5, 2.5, 3.0], np.float32)):   # none kept, two kept
        feats = RNG.standard_normal((len(scores), 8)).astype(np.float32)
        (got,), _ = sim.run([scores, feats])
        want = ort_run(m, {"scores": scores, "feats": feats})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
