"""How a fixture's outputs are judged, one measure per kind of fixture; shared by the tests and the report table.

Detections are compared as sets: reduced precision may swap two near-tied scores, which moves a detection to
another rank without changing it, so a rank-by-rank comparison would measure the swap, not the error."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FP16_UNIT = 2.0 ** -11   # fp16's rounding unit (half an ulp at 1.0): the least an fp16 run can be expected to cost


@dataclass(frozen=True)
class DetectionError:
    box: float     # pixels: how far the farthest reference box is from the nearest box of its label
    score: float   # that detection's score difference, the largest over the reference detections

    def within(self, limit: "DetectionError", image_size: float, factor: float = 2.0) -> bool:
        """At most `factor` x `limit` on both measures, each limit taken as at least fp16's own rounding of the
        values (FP16_UNIT of the image size for boxes, of 1.0 for scores)."""
        return self.box <= factor * max(limit.box, FP16_UNIT * image_size) and \
            self.score <= factor * max(limit.score, FP16_UNIT)


def detection_error(boxes, scores, labels, ref_boxes, ref_scores, ref_labels, margin: float = 0.0,
                    reach: float = float("inf")) -> DetectionError:
    """For each reference detection the detection of the same label whose box is nearest (max-norm over its
    corners); the largest of those distances, and the largest score difference of those pairs. No detection of a
    label the reference has: infinite. A reference detection scoring less than `margin` above the lowest reference
    score with no box of its label within `reach` pixels is not counted: where thousands of candidates crowd the
    cutoff (SSD's 300 of ~27,000), a score error of that size trades it for a near-tied candidate just outside the
    reference's set."""
    box = score = 0.0
    boxes, ref_boxes = np.asarray(boxes, np.float64), np.asarray(ref_boxes, np.float64)
    floor = float(np.min(ref_scores)) + margin if len(ref_scores) else 0.0
    for k in range(len(ref_boxes)):
        same = np.nonzero(np.asarray(labels) == ref_labels[k])[0]
        dist = np.abs(boxes[same] - ref_boxes[k]).max(axis=1)
        if ref_scores[k] < floor and not (dist <= reach).any():
            continue
        if not len(same):
            return DetectionError(float("inf"), float("inf"))
        j = same[int(np.argmin(dist))]
        box = max(box, float(dist.min()))
        score = max(score, abs(float(scores[j]) - float(ref_scores[k])))
    return DetectionError(box, score)


def against_autocast(boxes, scores, labels, ref, image_size: float,
                     factor: float = 2.0) -> tuple[DetectionError, DetectionError]:
    """(these detections' error, torch autocast's) against a fixture's fp32 detections `ref` (its npz): a reference
    detection within `factor` x autocast's score error of the cutoff that these lack (no box of its label within
    `factor` x autocast's box error) is not counted, as reduced precision may trade it for a near-tied one."""
    want = [ref[k] for k in ("boxes", "scores", "labels")]
    torch16 = detection_error(ref["boxes_autocast"], ref["scores_autocast"], ref["labels_autocast"], *want)
    ours = detection_error(boxes, scores, labels, *want, margin=factor * max(torch16.score, FP16_UNIT),
                           reach=factor * max(torch16.box, FP16_UNIT * image_size))
    return ours, torch16


def output_steps(model, values: dict | None = None) -> list[float]:
    """A quantized ONNX model's output steps: for each output, the step of the last quantization on its path (float
    ops after it — a LayerNorm, a Tanh — move values by less than a step where the quantized values agree). A
    static model's is the scale of that DequantizeLinear; a dynamically quantized one's is one unit of the last
    integer matmul's int32 sums: the scale the Cast of MatMulInteger / ConvInteger is multiplied by (the
    activation's run-time scale times the weight's), whose value `values` holds (tensor name -> a run's value,
    onnx.reference's with that tensor made an output: scale_tensors names them)."""
    inits = _initializers(model)
    values = {**(values or {}), **inits}
    steps = []
    for tensor in _step_tensors(model):
        if tensor is not None and tensor in values:
            steps.append(float(np.max(values[tensor])))
    return steps


def scale_tensors(model) -> list[str]:
    """The run-time scales output_steps needs the values of (a dynamically quantized model's)."""
    inits = _initializers(model)
    return [t for t in _step_tensors(model) if t is not None and t not in inits]


def _initializers(model) -> dict:
    from onnx import numpy_helper
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


INTEGER_MATMULS = ("MatMulInteger", "ConvInteger")


def _step_tensors(model) -> list[str | None]:
    """Per output, the tensor holding its step: a DequantizeLinear's scale, or the scale an integer matmul's Cast
    sums are multiplied by; None where the path holds neither."""
    prod = {o: n for n in model.graph.node for o in n.output}

    def integer_sums(name: str) -> bool:
        node = prod.get(name)
        if node is not None and node.op_type == "Cast":
            node = prod.get(node.input[0])
        return node is not None and node.op_type in INTEGER_MATMULS

    out = []
    for output in model.graph.output:
        todo, seen, found = [output.name], set(), None
        while todo and found is None:
            name = todo.pop()
            node = prod.get(name)
            if node is None or name in seen:
                continue
            seen.add(name)
            if node.op_type == "DequantizeLinear":
                found = node.input[1]
            elif node.op_type == "Mul" and any(integer_sums(i) for i in node.input):
                found = next(i for i in node.input if not integer_sums(i))
            else:
                todo.extend(i for i in node.input if i)
        out.append(found)
    return out


def rel_err(got, ref) -> float:
    """max |got - ref| / max |ref|: the error measure of the float fixtures."""
    ref = np.asarray(ref, np.float64)
    return float(np.abs(np.asarray(got, np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))
