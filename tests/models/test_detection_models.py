"""torchvision detectors with their post-processing (tools/real_models/detection_models.py): RetinaNet, FCOS, SSD,
Faster R-CNN and SSDlite320 exported with box decoding, score thresholds, batched NMS inside an If, top-k and the
final Gathers (SSDlite: 90 per-class top-ks whose ~27,000 boxes all go to one NMS).
The candidate counts are known only at run time, so the indices of TopK, NonZero and NMS, the If that merges the
NMS branches, tensors of unknown rank and empty tensors (Faster R-CNN keeps no box here) all have to come out
right. fp32 builds equal torch's own detections and onnxruntime's; the default (fp16) build is within twice torch's
own fp16 (autocast) error."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

import atc_py
from atc_py.passes.precision import selection_region
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import ROOT
from tools.real_models.checks import against_autocast

DATA = ROOT / "tests" / "data" / "detection"
NAMES = ["retinanet", "fcos", "ssd", "fasterrcnn", pytest.param("ssdlite", marks=pytest.mark.heavy)]


def build_and_run(model, options: dict, images, tmp_path) -> dict:
    res = atc_py.build(model, {"ge.socVersion": "Ascend910B1", "input_shape": "images:3,64,64", **options})
    assert res.summary["unknown_subgraphs"] >= 1      # the post-processing runs on the host executor
    p = tmp_path / "detector.om"
    p.write_bytes(res.om)
    om = load_model(str(p))
    with np.errstate(all="ignore"):
        outs, _ = Simulation(om).run([images])
    return dict(zip([io.name for io in om.outputs], outs))


def run(name, mode, tmp_path):
    ref = np.load(DATA / f"{name}.npz")
    return build_and_run(str(DATA / f"{name}.onnx"), {"ge.exec.precision_mode": mode}, ref["images"], tmp_path), ref


def onnxruntime_outputs(model, images) -> dict:
    sess = ort.InferenceSession(model if isinstance(model, str) else model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"images": images})))


@pytest.mark.parametrize("mode", ["must_keep_origin_dtype", "force_fp32"])
@pytest.mark.parametrize("name", NAMES)
def test_detectors_with_post_processing_match_torch_in_fp32(name, mode, tmp_path):
    got, ref = run(name, mode, tmp_path)
    want = onnxruntime_outputs(str(DATA / f"{name}.onnx"), ref["images"])
    for key in ("boxes", "scores", "labels"):
        assert got[key].shape == ref[key].shape == want[key].shape, key
        assert got[key].dtype == want[key].dtype, key
        np.testing.assert_allclose(got[key], ref[key], rtol=1e-4, atol=1e-4 * max(1.0, np.abs(ref[key]).max(initial=0)))
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want[key]).max(initial=0)))


@pytest.mark.parametrize("name", NAMES)
def test_detectors_in_the_default_build_stay_within_twice_torchs_fp16_error(name, tmp_path):
    """The default (fp16) build against torch's fp32 detections, measured as torch's own fp16 inference under
    autocast is (tools/real_models/checks.detection_error: each reference detection to the nearest box of its
    label): within 2x of autocast's error on boxes and on scores; a reference detection within 2x autocast's score
    error of the lowest kept score that the build lacks is not counted (SSDlite keeps 300 of ~27,000 crowded
    candidates: fp16 may trade the last for a near-tied one, as autocast may). The arithmetic the top-k, the thresholds and the NMS decide on (scores, box
    decoding) keeps fp32 (passes/precision.selection_region)."""
    got, ref = run(name, "force_fp16", tmp_path)
    assert [got[k].shape[1:] for k in ("boxes", "scores", "labels")] == [(4,), (), ()]
    assert got["boxes"].shape[0] == got["scores"].shape[0] == got["labels"].shape[0]
    assert got["labels"].dtype == np.int64 and np.isfinite(got["scores"]).all()
    ours, torch16 = against_autocast(got["boxes"], got["scores"], got["labels"], ref, image_size=64)
    assert ours.within(torch16, image_size=64), (name, ours, torch16)


def test_fcos_scores_and_box_decoding_keep_fp32_in_the_default_build():
    """FCOS: the class and centerness sigmoids, their product and its sqrt (what the threshold and the top-k read)
    and the box decoding feeding the NMS compute in fp32; the head's convolutions in fp16."""
    res = atc_py.build(str(DATA / "fcos.onnx"), {"ge.socVersion": "Ascend910B1", "input_shape": "images:3,64,64"})
    kept = {n.op_type for n in res.graph.nodes if n.name in selection_region(res.graph)}
    assert {"Sigmoid", "Mul", "Sqrt", "Sub", "Add", "Maximum", "Minimum"} <= kept
    dtypes = {(n.op_type, n.outputs[0].desc.dtype) for n in res.graph.nodes if n.name in selection_region(res.graph)}
    assert ("Sigmoid", "float32") in dtypes and ("Sqrt", "float32") in dtypes
    assert all(n.outputs[0].desc.dtype == "float16" for n in res.graph.nodes if n.op_type == "Conv2D")


def test_near_tied_scores_keep_their_order_in_the_default_build(tmp_path):
    """Scores 5e-6 apart (FCOS's sqrt(sigmoid(class) * sigmoid(centerness))) tie in fp16, whose step is 5e-4 there:
    computed in fp16 the top-k would order them by index. Kept in fp32 they rank as in onnxruntime."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Sigmoid", ["a"], ["sa"]), helper.make_node("Sigmoid", ["b"], ["sb"]),
             helper.make_node("Mul", ["sa", "sb"], ["p"]), helper.make_node("Sqrt", ["p"], ["s"]),
             helper.make_node("TopK", ["s", "k"], ["v", "i"])]
    k = helper.make_tensor("k", TensorProto.INT64, [1], [16])
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [64]) for n in "ab"],
                          [helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("i", TensorProto.INT64, None)], [k])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    a = (0.2 + 2e-5 * np.arange(64)).astype(np.float32)
    b = np.full(64, 0.3, np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"a": a, "b": b})
    res = atc_py.build(m, {"ge.socVersion": "Ascend910B1"})
    p = tmp_path / "tk.om"
    p.write_bytes(res.om)
    got, _ = Simulation(load_model(str(p))).run([a, b])
    assert list(got[1]) == list(want[1]) == list(range(63, 47, -1))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


def with_score_threshold(name: str, threshold: float):
    """The detector with every score threshold (the Constants its Greater nodes compare scores with) set to
    `threshold`."""
    m = onnx.load(str(DATA / f"{name}.onnx"))
    consts = {n.output[0]: n for n in m.graph.node if n.op_type == "Constant"}
    changed = 0
    for n in m.graph.node:
        if n.op_type == "Greater" and n.input[1] in consts:
            t = consts[n.input[1]].attribute[0].t
            t.CopyFrom(numpy_helper.from_array(np.full(numpy_helper.to_array(t).shape, threshold, np.float32), t.name))
            changed += 1
    assert changed == 2   # one per feature level
    return m


@pytest.mark.parametrize("options", [{"ge.exec.precision_mode": "force_fp32"}, {},
                                     {"ge.tiling_schedule_optimize": "1"},
                                     {"ge.tiling_schedule_optimize": "1", "ge.exec.precision_mode": "force_fp32"}],
                         ids=["force_fp32", "default", "tiling_sink", "tiling_sink_force_fp32"])
@pytest.mark.parametrize("threshold", [2.0, 0.9], ids=["no_candidate", "a_few"])
def test_fcos_whose_threshold_leaves_no_candidate_or_a_few_gives_onnxruntimes_detections(threshold, options,
                                                                                         tmp_path):
    """k = min(1000, candidates) feeds TopK: with no score above the threshold k is 0 and every output is empty
    ([0, 4] boxes), as onnxruntime's; with a few, their boxes (the default build's fp16 head within a pixel of
    the 64-pixel image, its scores kept fp32)."""
    m = with_score_threshold("fcos", threshold)
    images = np.load(DATA / "fcos.npz")["images"]
    want = onnxruntime_outputs(m, images)
    got = build_and_run(m, options, images, tmp_path)
    assert (want["boxes"].shape[0] == 0) == (threshold > 1) and want["boxes"].shape[0] <= 5
    fp32 = options.get("ge.exec.precision_mode") == "force_fp32"
    tolerance = {"boxes": 1e-3 if fp32 else 1.0, "scores": 1e-5 if fp32 else 5e-3, "labels": 0}
    for key, atol in tolerance.items():
        assert got[key].shape == want[key].shape and got[key].dtype == want[key].dtype, key
        np.testing.assert_allclose(got[key], want[key], rtol=0, atol=atol, err_msg=key)


def test_ssdlite_hands_its_nms_tens_of_thousands_of_boxes():
    """Nearly every anchor passes SSDlite's 0.001 threshold with random weights: each of the 90 classes keeps its
    top 300 and the batched NMS inside the If takes them all (onnxruntime's count of the If's boxes)."""
    m = onnx.load(str(DATA / "ssdlite.onnx"))
    branch = next(n for n in m.graph.node if n.op_type == "If")
    m.graph.output.append(onnx.helper.make_tensor_value_info(branch.input[0], onnx.TensorProto.BOOL, None))
    boxes = next(i for a in branch.attribute if a.name == "else_branch" for n in a.g.node if n.op_type == "ReduceMax"
                 for i in n.input)
    m.graph.output.append(onnx.helper.make_tensor_value_info(boxes, onnx.TensorProto.FLOAT, None))
    out = onnxruntime_outputs(m, np.load(DATA / "ssdlite.npz")["images"])
    assert out[boxes].shape[0] > 20_000 and not out[branch.input[0]]
