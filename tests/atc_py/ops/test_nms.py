"""NonMaxSuppression against onnxruntime: score ties keep the lower index; torchvision's batched NMS (each class's
boxes offset by class * (largest coordinate + 1)) keeps overlapping boxes of different classes; the IoU is
onnxruntime's float32 arithmetic, which decides differently from a float64 IoU near the threshold at offset
coordinates; and tens of thousands of boxes (a detector whose every anchor passes the score threshold) run in
memory linear in the boxes, under an address-space limit a pairwise IoU matrix cannot fit in."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper

import atc_py
from atc_py.common.errors import AtcError
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import ROOT

RNG = np.random.default_rng(17)
GIB = 1 << 30


def nms_model(n_boxes, n_classes=1, limit=1 << 40, iou=0.5, score_threshold=None, center=0):
    names = ["b", "s", "k", "iou"] + (["t"] if score_threshold is not None else [])
    inits = [helper.make_tensor("k", TP.INT64, [1], [limit]), helper.make_tensor("iou", TP.FLOAT, [1], [iou])]
    if score_threshold is not None:
        inits.append(helper.make_tensor("t", TP.FLOAT, [1], [score_threshold]))
    g = helper.make_graph([helper.make_node("NonMaxSuppression", names, ["sel"], center_point_box=center)], "nms",
                          [helper.make_tensor_value_info("b", TP.FLOAT, [1, n_boxes, 4]),
                           helper.make_tensor_value_info("s", TP.FLOAT, [1, n_classes, n_boxes])],
                          [helper.make_tensor_value_info("sel", TP.INT64, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def batched_nms_model(n_boxes, iou=0.5):
    """torchvision's batched_nms as its export writes it: boxes + labels * (max(boxes) + 1), one NMS."""
    nodes = [helper.make_node("ReduceMax", ["boxes"], ["top"], keepdims=0),
             helper.make_node("Add", ["top", "one"], ["span"]),
             helper.make_node("Cast", ["labels"], ["lf"], to=TP.FLOAT),
             helper.make_node("Mul", ["lf", "span"], ["offset"]),
             helper.make_node("Unsqueeze", ["offset", "axis1"], ["offset2"]),
             helper.make_node("Add", ["boxes", "offset2"], ["shifted"]),
             helper.make_node("Unsqueeze", ["shifted", "axis0"], ["b"]),
             helper.make_node("Unsqueeze", ["scores", "axes01"], ["s"]),
             helper.make_node("NonMaxSuppression", ["b", "s", "k", "iou"], ["sel"]),
             helper.make_node("Gather", ["sel", "two"], ["keep"], axis=1)]
    inits = [helper.make_tensor("one", TP.FLOAT, [], [1.0]), helper.make_tensor("axis1", TP.INT64, [1], [1]),
             helper.make_tensor("axis0", TP.INT64, [1], [0]), helper.make_tensor("axes01", TP.INT64, [2], [0, 1]),
             helper.make_tensor("k", TP.INT64, [1], [1 << 40]), helper.make_tensor("iou", TP.FLOAT, [1], [iou]),
             helper.make_tensor("two", TP.INT64, [], [2])]
    g = helper.make_graph(nodes, "batched_nms", [helper.make_tensor_value_info("boxes", TP.FLOAT, [n_boxes, 4]),
                                                 helper.make_tensor_value_info("scores", TP.FLOAT, [n_boxes]),
                                                 helper.make_tensor_value_info("labels", TP.INT64, [n_boxes])],
                          [helper.make_tensor_value_info("keep", TP.INT64, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def run_both(m, feeds: dict, tmp_path, precision="force_fp32"):
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    p = tmp_path / "nms.om"
    p.write_bytes(atc_py.build(m, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": precision}).om)
    got, _ = Simulation(load_model(str(p))).run(list(feeds.values()))
    return got[0], want


def boxes_at(corners, sizes):
    return np.concatenate([corners, corners + sizes], axis=1).astype(np.float32)


def test_score_ties_keep_the_lower_index(tmp_path):
    """Three identical boxes of equal score at 1, 3 and 5: box 1 is kept, 3 and 5 suppressed; four apart boxes of
    one score come out by index; a higher score goes first whatever its index."""
    b = boxes_at(np.array([[0, 0], [50, 0], [100, 0], [50, 0], [150, 0], [50, 0], [200, 0], [250, 0]]),
                 np.full((8, 2), 10))
    s = np.array([0.5, 0.7, 0.5, 0.7, 0.5, 0.7, 0.5, 0.9], np.float32)
    got, want = run_both(nms_model(8), {"b": b[None], "s": s[None, None]}, tmp_path)
    np.testing.assert_array_equal(got, want)
    assert got[:, 2].tolist() == [7, 1, 0, 2, 4, 6]


def per_class_nms(boxes, scores, labels, iou):
    """torchvision's batched NMS without the offset trick: greedy NMS within each class, then every kept box by
    descending score (ties: the lower index)."""
    keep = []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        order = idx[np.argsort(-scores[idx], kind="stable")]
        kept = []
        for i in order:
            lo = np.maximum(boxes[kept, :2], boxes[i, :2])
            hi = np.minimum(boxes[kept, 2:], boxes[i, 2:])
            inter = np.prod(np.clip(hi - lo, 0, None), axis=1)
            area = np.prod(boxes[:, 2:] - boxes[:, :2], axis=1)
            if not (inter / (area[kept] + area[i] - inter) > iou).any():
                kept.append(i)
        keep += kept
    keep = np.array(keep)
    return keep[np.lexsort((keep, -scores[keep]))]


def test_batched_nms_offsets_keep_each_classs_boxes_apart(tmp_path):
    """Clusters of boxes shared by three classes, scores with ties: the offsets keep a box of one class from
    suppressing another class's; within a class the greedy order holds."""
    n = 120
    centre = RNG.uniform(0, 60, (6, 2))[RNG.integers(0, 6, n)]
    b = boxes_at(centre + RNG.normal(0, 3, (n, 2)), RNG.uniform(8, 14, (n, 2)))
    s = RNG.integers(0, 12, n).astype(np.float32) / 12
    labels = RNG.integers(0, 3, n).astype(np.int64)
    got, want = run_both(batched_nms_model(n), {"boxes": b, "scores": s, "labels": labels}, tmp_path)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, per_class_nms(b.astype(np.float64), s, labels, 0.5))
    assert len(set(labels[got])) == 3 and len(got) < n


def ort_iou(a, b):
    """onnxruntime's SuppressByIOU ratio of corner boxes [y1, x1, y2, x2] in a given float type."""
    inter = (np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1])) * \
            (np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]))
    union = ((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])) - inter
    return inter / union


def test_iou_is_onnxruntimes_float32_at_offset_coordinates(tmp_path):
    """Pairs of boxes a third of their width apart (IoU 1/2) at class-offset coordinates (~4e4), where the float32
    IoU and the float64 one fall on different sides of the threshold 0.5: the kept boxes are onnxruntime's."""
    n = 200_000
    corner = RNG.uniform(0, 800, (n, 2)).astype(np.float32) + np.float32(801) * RNG.integers(30, 60, (n, 1))
    size = RNG.uniform(10, 100, (n, 2)).astype(np.float32)
    a = boxes_at(corner, size)
    b = a.copy()
    shift = (size[:, 1] / 3 + RNG.normal(0, 1e-3, n)).astype(np.float32)
    b[:, 1] += shift
    b[:, 3] += shift
    half = np.float32(0.5)
    differ = np.flatnonzero((ort_iou(b, a) > half) != (ort_iou(b.astype(np.float64), a.astype(np.float64)) > 0.5))
    assert differ.size >= 8
    pick = differ[:8]
    boxes = np.concatenate([a[pick], b[pick]])                       # each a before its b (higher score)
    scores = np.concatenate([np.full(8, 0.9), np.full(8, 0.8)]).astype(np.float32)
    got, want = run_both(nms_model(16, iou=0.5), {"b": boxes[None], "s": scores[None, None]}, tmp_path)
    np.testing.assert_array_equal(got, want)
    kept_b = set(got[:, 2].tolist()) & set(range(8, 16))
    assert kept_b == {8 + k for k in range(8) if not ort_iou(b[pick[k:k + 1]], a[pick[k:k + 1]])[0] > half}


@pytest.mark.parametrize("precision", ["force_fp32", "force_fp16"])
def test_center_boxes_and_score_threshold_match_onnxruntime(precision, tmp_path):
    n = 300
    b = np.concatenate([RNG.uniform(0, 50, (n, 2)), RNG.uniform(0, 12, (n, 2))], axis=1).astype(np.float32)
    s = (RNG.integers(0, 40, (1, 3, n)) / 40).astype(np.float32)
    got, want = run_both(nms_model(n, 3, limit=25, iou=0.4, score_threshold=0.3, center=1),
                         {"b": b[None], "s": s}, tmp_path, precision)
    np.testing.assert_array_equal(got, want)


def test_non_finite_coordinates_compare_as_onnxruntimes(tmp_path):
    """Boxes with inf or NaN corners among finite ones: no left-edge order to go by, each candidate against every
    kept box, with onnxruntime's comparisons (a NaN IoU suppresses nothing)."""
    n = 200
    b = boxes_at(RNG.uniform(0, 30, (n, 2)), RNG.uniform(0, 15, (n, 2)))
    bad = RNG.random(b.shape) < 0.05
    b[bad] = RNG.choice(np.array([np.nan, np.inf, -np.inf], np.float32), int(bad.sum()))
    s = (RNG.integers(0, 10, (1, 1, n)) / 10).astype(np.float32)
    got, want = run_both(nms_model(n, iou=0.4), {"b": b[None], "s": s}, tmp_path)
    np.testing.assert_array_equal(got, want)


def test_an_iou_threshold_outside_0_1_is_a_coded_error(tmp_path):
    m = nms_model(4, iou=1.5)
    p = tmp_path / "nms.om"
    p.write_bytes(atc_py.build(m, {"ge.socVersion": "Ascend910B1"}).om)
    b = boxes_at(RNG.uniform(0, 10, (4, 2)), np.full((4, 2), 5))
    with pytest.raises(AtcError) as e:
        Simulation(load_model(str(p))).run([b[None], RNG.random((1, 1, 4)).astype(np.float32)])
    assert e.value.code == "E30004" and "iou_threshold 1.5 is outside [0, 1]" in str(e.value)


def limited_run(args: list[str], limit: int, cwd) -> tuple[subprocess.CompletedProcess, float]:
    """A tool run in a fresh interpreter whose address space is limited to `limit` bytes, and its wall time."""
    code = (f"import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); "
            f"sys.argv = {args!r}; import runpy; runpy.run_module(sys.argv[0], run_name='__main__')")
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("ATC_PY_DEBUG", None)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return proc, time.monotonic() - start


@pytest.mark.heavy
def test_nms_over_30000_boxes_runs_in_linear_memory(tmp_path):
    """30,000 boxes of 90 classes, batched (offset) as a detector's post-processing hands them over, nearly all
    kept: om-run under a 1.5 GiB address space (a float64 IoU matrix of these boxes alone is 7.2 GB) gives
    onnxruntime's selection in seconds."""
    n = 30_000
    corner = RNG.uniform(0, 320, (n, 2)).astype(np.float32)
    b = boxes_at(corner, RNG.uniform(1, 60, (n, 2)))
    b += (RNG.integers(0, 90, n) * (b.max() + 1)).astype(np.float32)[:, None]
    s = RNG.random((1, 1, n)).astype(np.float32)
    m = nms_model(n, iou=0.55)
    (tmp_path / "nms.om").write_bytes(atc_py.build(m, {"ge.socVersion": "Ascend910B1",
                                                       "ge.exec.precision_mode": "force_fp32"}).om)
    np.save(tmp_path / "b.npy", b[None])
    np.save(tmp_path / "s.npy", s)
    proc, seconds = limited_run(["om_run", "--model", "nms.om", "--input", "b.npy,s.npy", "--output", "out"],
                                int(1.5 * GIB), tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    got = np.load(next((tmp_path / "out").glob("*_output_0.npy")))
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"b": b[None], "s": s})[0]
    assert len(want) > n // 2
    np.testing.assert_array_equal(got, want)
    assert seconds < 60, seconds
