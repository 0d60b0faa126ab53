"""torchvision detectors with their post-processing (tools/real_models/detection_models.py): RetinaNet, FCOS, SSD and
Faster R-CNN exported with box decoding, score thresholds, batched NMS inside an If, top-k and the final Gathers.
The candidate counts are known only at run time, so the indices of TopK, NonZero and NMS, the If that merges the
NMS branches, tensors of unknown rank and empty tensors (Faster R-CNN keeps no box here) all have to come out
right. fp32 builds equal torch's own detections and onnxruntime's; the default (fp16) build finds the same confident
detections."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import atc_py
from runner.loader import load_model
from runner.sim.host import Simulation

from .conftest import ROOT

DATA = ROOT / "tests" / "data" / "detection"
NAMES = ["retinanet", "fcos", "ssd", "fasterrcnn"]


def run(name, mode, tmp_path):
    res = atc_py.build(str(DATA / f"{name}.onnx"), {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": mode,
                                                    "input_shape": "images:3,64,64"})
    assert res.summary["unknown_subgraphs"] >= 1      # the post-processing runs on the host executor
    p = tmp_path / f"{name}_{mode}.om"
    p.write_bytes(res.om)
    ref = np.load(DATA / f"{name}.npz")
    model = load_model(str(p))
    with np.errstate(all="ignore"):
        outs, _ = Simulation(model).run([ref["images"]])
    return dict(zip([io.name for io in model.outputs], outs)), ref


@pytest.mark.parametrize("name", NAMES)
def test_detectors_with_post_processing_match_torch_in_fp32(name, tmp_path):
    got, ref = run(name, "must_keep_origin_dtype", tmp_path)
    sess = ort.InferenceSession(str(DATA / f"{name}.onnx"), providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"images": ref["images"]})))
    for key in ("boxes", "scores", "labels"):
        assert got[key].shape == ref[key].shape == want[key].shape, key
        assert got[key].dtype == want[key].dtype, key
        np.testing.assert_allclose(got[key], ref[key], rtol=1e-4, atol=1e-4 * max(1.0, np.abs(ref[key]).max(initial=0)))
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want[key]).max(initial=0)))


@pytest.mark.parametrize("name", NAMES)
def test_detectors_in_the_default_build_find_the_same_top_detections(name, tmp_path):
    """In fp16 the confident detections are torch's: each of the reference's top 4 is among ours with its label, its
    box within 1 % of the image and its score within 2e-3. Lower ranks whose scores nearly tie may swap places, as
    they do in torch's own fp16 (autocast) run of these detectors."""
    got, ref = run(name, "force_fp16", tmp_path)
    assert [got[k].shape[1:] for k in ("boxes", "scores", "labels")] == [(4,), (), ()]
    assert got["boxes"].shape[0] == got["scores"].shape[0] == got["labels"].shape[0]
    assert got["labels"].dtype == np.int64 and np.isfinite(got["scores"]).all()
    for k in range(min(4, ref["boxes"].shape[0])):
        match = [j for j in range(min(8, got["boxes"].shape[0]))
                 if got["labels"][j] == ref["labels"][k] and abs(got["scores"][j] - ref["scores"][k]) <= 2e-3
                 and np.abs(got["boxes"][j] - ref["boxes"][k]).max() <= 0.64]
        assert match, (name, k, ref["boxes"][k], ref["scores"][k])
