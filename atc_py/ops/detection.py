"""Detection: NonMaxSuppressionV6 (ONNX NonMaxSuppression; how many boxes survive is known only after the
kernel ran: GE's DEPEND_COMPUTE op, run by the host executor, AICPU as CANN's), ROIAlign (ONNX RoiAlign, avg
and max modes, half_pixel / output_half_pixel) and ROIPooling (ONNX MaxRoiPool)."""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import AICPU, KernelArgs, OpError, TilingContext, Work
from .core.registry import register
from .core.row_split import RowSplitOp
from .nms_greedy import BoxSet

MAX_SAMPLES = 1 << 26   # RoiAlign samples of one roi (a roi far larger than its map asks for absurd grids)


def _scalar(v, default, cast):
    if v is None:
        return default
    a = np.asarray(v).reshape(-1)
    return default if a.size == 0 else cast(a[0])


@register
class NonMaxSuppressionV6(RowSplitOp):
    """Per (batch, class): boxes above score_threshold by descending score (ties: lower index first), each kept
    unless its IoU with a kept box exceeds iou_threshold, at most max_output_boxes_per_class; output rows
    [batch, class, box] in that order. The comparisons are onnxruntime's, against the kept boxes only
    (nms_greedy: memory linear in the boxes)."""
    unknown_rank_aware = True   # its output is [-1, 3] int64 whatever it is given
    op_type = "NonMaxSuppressionV6"
    inputs = ("boxes", "scores", "max_output_size?", "iou_threshold?", "score_threshold?")
    outputs = ("selected_indices",)
    attrs = {"center_point_box": 0}
    engine = AICPU
    dtypes = ("float32", "float16", "int64", "int32")
    shape_from_compute = True

    def infer(self, node: Node) -> list[TensorDesc]:
        boxes, scores = node.input_desc(0), node.input_desc(1)
        same = lambda a, b: a == b or a < 0 or b < 0   # noqa: E731  (a dim unknown until run time fits any)
        if boxes.shape != (-2,) and (len(boxes.shape) != 3 or not same(boxes.shape[2], 4)):
            raise OpError(f"boxes must be [batch, boxes, 4], got {list(boxes.shape)}")
        if boxes.shape != (-2,) and scores.shape != (-2,) and (
                len(scores.shape) != 3 or not same(scores.shape[0], boxes.shape[0])
                or not same(scores.shape[2], boxes.shape[1])):
            raise OpError(f"scores {list(scores.shape)} must be [batch, classes, boxes] for boxes {list(boxes.shape)}")
        if int(self.attr(node, "center_point_box")) not in (0, 1):
            raise OpError(f"center_point_box must be 0 or 1, got {self.attr(node, 'center_point_box')}")
        for i in (2, 3, 4):
            d = node.input_desc(i) if i < len(node.inputs) else None
            if d is not None and d.numel > 1:
                raise OpError(f"input {self.inputs[i].rstrip('?')} must hold one value, got shape {list(d.shape)}")
        return [TensorDesc((-1, 3), "int64", "ND", "ND")]

    def rows(self, ctx: TilingContext) -> int:
        s = ctx.inputs[1].shape
        return int(s[0] * s[1])

    def compute(self, args: KernelArgs, inputs):
        boxes, scores = inputs[0], inputs[1]
        get = lambda i: inputs[i] if i < len(inputs) else None  # noqa: E731
        limit = max(_scalar(get(2), 0, int), 0)
        iou_thr = _scalar(get(3), 0.0, float)
        score_thr = _scalar(get(4), None, float)
        if not 0.0 <= iou_thr <= 1.0:
            raise OpError(f"iou_threshold {iou_thr} is outside [0, 1]")
        center = int(self.attr(args.attrs, "center_point_box")) == 1
        n_classes = scores.shape[1]
        picked = []
        sets: dict[int, BoxSet] = {}
        for row in range(self.covered_rows(args)):
            b, c = divmod(row, n_classes)
            if limit == 0 or boxes.shape[1] == 0:
                break
            if b not in sets:
                sets = {b: BoxSet(boxes[b], center)}   # one batch's geometry at a time
            picked += [(b, c, i) for i in sets[b].select(scores[b, c], limit, iou_thr, score_thr)]
        return [np.array(picked, np.int64).reshape(-1, 3)]

    def work(self, ctx: TilingContext) -> Work:
        n = ctx.inputs[0].shape[1]
        pairs = self.rows(ctx) * n * max(1, int(math.log2(max(n, 2)))) + ctx.inputs[0].shape[0] * n * n
        return Work(vector_ops=8 * pairs, bytes=ctx.inputs[0].nbytes + ctx.inputs[1].nbytes,
                    dtype=ctx.inputs[0].dtype)


def _axis_samples(start: float, bin_size: float, pooled: int, grid: int, size: int):
    """RoiAlign's bilinear taps along one axis of one roi: low/high indices, their weights and whether the
    sample lies in [-1, size] (outside, it counts 0), shaped (pooled, grid)."""
    pos = start + np.arange(pooled)[:, None] * bin_size + (np.arange(grid)[None, :] + 0.5) * bin_size / grid
    valid = (pos >= -1.0) & (pos <= size)
    pos = np.maximum(pos, 0.0)
    low = np.floor(pos).astype(np.int64)
    at_edge = low >= size - 1
    low = np.where(at_edge, size - 1, low)
    high = np.where(at_edge, size - 1, low + 1)
    frac = np.where(at_edge, 0.0, pos - low)
    return low, high, 1.0 - frac, frac, valid


@register
class ROIAlign(RowSplitOp):
    """ONNX RoiAlign: per roi and output cell, bilinear samples on a grid of sampling_ratio (or ceil(roi /
    output) when 0) points per axis, averaged (avg) or the largest weighted corner of each sample (max).
    half_pixel shifts roi corners by -0.5; output_half_pixel keeps them and widens rois to >= 1."""
    op_type = "ROIAlign"
    inputs = ("features", "rois", "rois_n")
    attrs = {"spatial_scale": 1.0, "pooled_height": 1, "pooled_width": 1, "sample_num": 0,
             "roi_end_mode": "half_pixel", "mode": "avg"}
    dtypes = ("float32", "float16", "float64", "int64", "int32")

    def infer(self, node: Node) -> list[TensorDesc]:
        x, rois, idx = node.input_desc(0), node.input_desc(1), node.input_desc(2)
        if len(x.shape) != 4 or len(rois.shape) != 2 or rois.shape[1] != 4 or tuple(idx.shape) != (rois.shape[0],):
            raise OpError(f"RoiAlign takes X [N,C,H,W], rois [R,4] and batch_indices [R], got {list(x.shape)}, "
                          f"{list(rois.shape)}, {list(idx.shape)}")
        ph, pw = int(self.attr(node, "pooled_height")), int(self.attr(node, "pooled_width"))
        if ph < 1 or pw < 1 or self.attr(node, "mode") not in ("avg", "max"):
            raise OpError(f"output {ph}x{pw} must be >= 1 and mode avg or max")
        if self.attr(node, "roi_end_mode") not in ("half_pixel", "output_half_pixel"):
            raise OpError(f"coordinate_transformation_mode '{self.attr(node, 'roi_end_mode')}' is not valid")
        return [TensorDesc((rois.shape[0], x.shape[1], ph, pw), x.dtype, "NCHW", "NCHW")]

    def compute(self, args: KernelArgs, inputs):
        x, rois, idx = inputs
        n, c, h, w = x.shape
        ph, pw = int(self.attr(args.attrs, "pooled_height")), int(self.attr(args.attrs, "pooled_width"))
        out = np.zeros(args.outputs[0].shape, x.dtype)
        end = self.covered_rows(args)
        if end == 0:
            return [out]
        b = idx[:end].astype(np.int64)
        if np.any((b < 0) | (b >= n)):
            raise OpError(f"batch index {b[(b < 0) | (b >= n)][0]} is outside [0, {n})")
        half = self.attr(args.attrs, "roi_end_mode") == "half_pixel"
        r = rois[:end].astype(np.float64) * float(self.attr(args.attrs, "spatial_scale")) - (0.5 if half else 0.0)
        rw, rh = r[:, 2] - r[:, 0], r[:, 3] - r[:, 1]
        if not half:
            rw, rh = np.maximum(rw, 1.0), np.maximum(rh, 1.0)
        if not np.isfinite(r).all():
            raise OpError("rois scaled by spatial_scale must be finite")
        ratio = int(self.attr(args.attrs, "sample_num"))
        gh = np.full(end, ratio) if ratio > 0 else np.ceil(rh / ph).astype(np.int64)
        gw = np.full(end, ratio) if ratio > 0 else np.ceil(rw / pw).astype(np.int64)
        gh, gw = np.maximum(gh, 1), np.maximum(gw, 1)
        avg = self.attr(args.attrs, "mode") == "avg"
        for k in range(end):   # one roi at a time: its sample grid is (C, ph, gh, pw, gw)
            if int(gh[k]) * int(gw[k]) * ph * pw * c > MAX_SAMPLES:
                raise OpError(f"roi {k} needs {int(gh[k])} x {int(gw[k])} samples per bin, more than the kernel "
                              f"takes ({MAX_SAMPLES} samples per roi)")
            ylo, yhi, hy, ly, vy = _axis_samples(r[k, 1], rh[k] / ph, ph, int(gh[k]), h)
            xlo, xhi, hx, lx, vx = _axis_samples(r[k, 0], rw[k] / pw, pw, int(gw[k]), w)
            f = x[b[k]].astype(np.float64)                           # (C, H, W)
            # samples laid out (C, ph, gh, pw, gw): y terms broadcast as (ph, gh, 1, 1), x terms as (pw, gw)
            terms = [wy[:, :, None, None] * wx * f[:, yi[:, :, None, None], xi]
                     for yi, wy in ((ylo, hy), (yhi, ly)) for xi, wx in ((xlo, hx), (xhi, lx))]
            inside = vy[:, :, None, None] & vx                       # outside [-1, size]: the sample is 0
            if avg:
                out[k] = np.where(inside, sum(terms), 0.0).sum(axis=(2, 4)) / (gh[k] * gw[k])
            else:
                out[k] = np.where(inside, np.maximum.reduce(terms), 0.0).max(axis=(2, 4))
        return [out]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.outputs[0].numel * 4 * 4 * max(1, int(self.attr(ctx.attrs, "sample_num")) ** 2)
        return w


@register
class ROIPooling(RowSplitOp):
    """ONNX MaxRoiPool (Caffe's ROI pooling): rois [R, 5] = (batch, x1, y1, x2, y2) scaled and rounded, each
    cell the max over its bin (clipped to the image; an empty bin is 0)."""
    op_type = "ROIPooling"
    inputs = ("x", "rois")
    attrs = {"pooled_h": 1, "pooled_w": 1, "spatial_scale": 1.0}

    def infer(self, node: Node) -> list[TensorDesc]:
        x, rois = node.input_desc(0), node.input_desc(1)
        if len(x.shape) != 4 or len(rois.shape) != 2 or rois.shape[1] != 5:
            raise OpError(f"MaxRoiPool takes X [N,C,H,W] and rois [R,5], got {list(x.shape)} and {list(rois.shape)}")
        ph, pw = int(self.attr(node, "pooled_h")), int(self.attr(node, "pooled_w"))
        if ph < 1 or pw < 1:
            raise OpError(f"pooled_shape {[ph, pw]} must be >= 1")
        return [TensorDesc((rois.shape[0], x.shape[1], ph, pw), x.dtype, "NCHW", "NCHW")]

    def compute(self, args: KernelArgs, inputs):
        x, rois = inputs
        n, _, h, w = x.shape
        ph, pw = int(self.attr(args.attrs, "pooled_h")), int(self.attr(args.attrs, "pooled_w"))
        scale = float(self.attr(args.attrs, "spatial_scale"))
        out = np.zeros(args.outputs[0].shape, x.dtype)

        def cpp_round(v):
            return np.where(v >= 0, np.floor(v + 0.5), np.ceil(v - 0.5)).astype(np.int64)
        for k in range(self.covered_rows(args)):
            b = int(rois[k, 0])
            if not 0 <= b < n:
                raise OpError(f"roi {k} names batch {b}, outside [0, {n})")
            x1, y1, x2, y2 = cpp_round(rois[k, 1:].astype(np.float64) * scale)
            bh, bw = max(y2 - y1 + 1, 1) / ph, max(x2 - x1 + 1, 1) / pw
            for i in range(ph):
                h0 = min(max(int(np.floor(i * bh)) + y1, 0), h)
                h1 = min(max(int(np.ceil((i + 1) * bh)) + y1, 0), h)
                for j in range(pw):
                    w0 = min(max(int(np.floor(j * bw)) + x1, 0), w)
                    w1 = min(max(int(np.ceil((j + 1) * bw)) + x1, 0), w)
                    if h1 > h0 and w1 > w0:
                        out[k, :, i, j] = x[b, :, h0:h1, w0:w1].max(axis=(1, 2))
        return [out]
