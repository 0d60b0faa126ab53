"""Greedy non-maximum suppression as onnxruntime's NonMaxSuppression computes it, in memory linear in the boxes.

Candidates are taken by descending score (a tie keeps the lower index first) and each is compared only with the
boxes kept before it, never with every other box: a pairwise IoU matrix is quadratic in the boxes, and a detector's
batched NMS (torchvision offsets each class's boxes by class * (largest coordinate + 1), so classes never overlap)
hands it tens of thousands of them. The kept boxes are held in the order of their left edges, so a candidate is
compared only with the kept boxes whose left edge lies within the widest box of it (for offset classes: the kept
boxes of its own class). Candidates go in blocks of BLOCK: a block against the boxes kept before it at once (at
most PAIRS comparisons in memory at a time), then greedily within the block.

Every comparison is onnxruntime's SuppressByIOU in float32, operand for operand (max and min as std::max and
std::min, its early exits as its comparisons, union = (area of the candidate + area of the kept box) - the
intersection): a float64 IoU decides differently where the ratio lies within a float32 rounding of the threshold,
and the offset coordinates of a batched NMS are large enough that it does."""
from __future__ import annotations

import numpy as np

F32 = np.float32
BLOCK = 256           # candidates decided together
PAIRS = 1 << 19       # (candidate, kept box) comparisons held in memory at once


def _min_max(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """onnxruntime's MaxMin: (b, a) if a >= b else (a, b)."""
    ge = a >= b
    return np.where(ge, b, a), np.where(ge, a, b)


class BoxSet:
    """One batch's boxes [N, 4] as float32 edges and areas, and for each box the range of left edges a box
    overlapping it can have."""

    def __init__(self, boxes: np.ndarray, center: bool):
        b = np.asarray(boxes, F32)
        with np.errstate(all="ignore"):   # inf and NaN coordinates compare as onnxruntime's do
            if center:   # [x_center, y_center, width, height]
                hw, hh = b[:, 2] / F32(2), b[:, 3] / F32(2)
                self.x0, self.x1 = b[:, 0] - hw, b[:, 0] + hw
                self.y0, self.y1 = b[:, 1] - hh, b[:, 1] + hh
            else:        # [y1, x1, y2, x2], corners in either order
                self.x0, self.x1 = _min_max(b[:, 1], b[:, 3])
                self.y0, self.y1 = _min_max(b[:, 0], b[:, 2])
            self.area = (self.x1 - self.x0) * (self.y1 - self.y0)
        self.left = self.x0.astype(np.float64)
        right = self.x1.astype(np.float64)
        self.ordered = bool(b.shape[0]) and bool(np.isfinite(self.left).all() and np.isfinite(right).all())
        if self.ordered:
            # a box k can overlap box i only if x0[k] < x1[i] and x0[k] > x0[i] - the widest box (widened:
            # any superset of the boxes that can overlap is exact, the float32 comparison decides)
            widest = float((right - self.left).max(initial=0.0))
            self.reach = self.left - widest - 1e-6 * (np.abs(self.left) + widest) - 1e-30
            self.right = right

    def suppresses(self, i: np.ndarray, k: np.ndarray, iou_threshold: np.float32) -> np.ndarray:
        """SuppressByIOU(candidate i, kept box k) elementwise over broadcast index arrays."""
        x0i, x1i, y0i, y1i, ai = self.x0[i], self.x1[i], self.y0[i], self.y1[i], self.area[i]
        x0k, x1k, y0k, y1k, ak = self.x0[k], self.x1[k], self.y0[k], self.y1[k], self.area[k]
        ix0 = np.where(x0i < x0k, x0k, x0i)   # std::max(x1_min, x2_min)
        ix1 = np.where(x1k < x1i, x1k, x1i)   # std::min(x1_max, x2_max)
        iy0 = np.where(y0i < y0k, y0k, y0i)
        iy1 = np.where(y1k < y1i, y1k, y1i)
        with np.errstate(all="ignore"):
            inter = (ix1 - ix0) * (iy1 - iy0)
            union = (ai + ak) - inter
            iou = inter / union
        return ~(ix1 <= ix0) & ~(iy1 <= iy0) & ~(inter <= 0) & ~(ai <= 0) & ~(ak <= 0) & ~(union <= 0) \
            & (iou > iou_threshold)

    def _by_kept(self, blk: np.ndarray, kept: "Kept", thr: np.float32) -> np.ndarray:
        """Which candidates of `blk` a box kept before them suppresses."""
        n, k = blk.size, kept.idx.size
        out = np.zeros(n, bool)
        if k == 0:
            return out
        if self.ordered:
            lo = np.searchsorted(kept.left, self.reach[blk], "left")
            counts = np.maximum(np.searchsorted(kept.left, self.right[blk], "left") - lo, 0)
        else:   # non-finite edges: no order to trust, every kept box is compared
            lo, counts = np.zeros(n, np.int64), np.full(n, k, np.int64)
        ends = np.cumsum(counts)
        x0, y0, y1 = self.x0[blk], self.y0[blk], self.y1[blk]
        start = 0
        while start < n:   # as many candidates as fit PAIRS comparisons (at least one)
            base = ends[start - 1] if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, base + PAIRS, "right")))
            c = counts[start:stop]
            total = int(ends[stop - 1] - base)
            if total:
                cols = np.arange(total) + np.repeat(lo[start:stop] - (ends[start:stop] - c - base), c)
                # overlapping in y and to the right of the candidate's left edge: what any suppression needs
                near = np.flatnonzero((kept.y0[cols] < np.repeat(y1[start:stop], c))
                                      & (np.repeat(y0[start:stop], c) < kept.y1[cols])
                                      & (np.repeat(x0[start:stop], c) < kept.x1[cols]))
                if near.size:
                    rows = np.repeat(np.arange(start, stop), c)[near]
                    hit = self.suppresses(blk[rows], kept.idx[cols[near]], thr)
                    out[rows[hit]] = True
            start = stop
        return out

    def select(self, scores: np.ndarray, limit: int, iou_threshold: float, score_threshold: float | None) -> list[int]:
        """The kept indices of one class, in the order they were kept (descending score)."""
        s = np.asarray(scores, F32)
        cand = np.arange(s.size) if score_threshold is None else np.flatnonzero(s > F32(score_threshold))
        cand = cand[np.argsort(-s[cand], kind="stable")]   # ties: the lower index first
        thr = F32(iou_threshold)
        limit = min(limit, cand.size)
        order: list[int] = []
        kept = Kept()
        for start in range(0, cand.size, BLOCK):
            if len(order) >= limit:
                break
            blk = cand[start:start + BLOCK]
            alive = blk[~self._by_kept(blk, kept, thr)]
            within = self.suppresses(alive[None, :], alive[:, None], thr)   # [kept p, candidate q]
            dead = np.zeros(alive.size, bool)
            new = []
            for p in range(alive.size):   # greedily, in score order
                if dead[p]:
                    continue
                new.append(int(alive[p]))
                if len(order) + len(new) >= limit:
                    break
                dead |= within[p]
            order += new
            kept.add(self, np.array(new, np.int64))
        return order


class Kept:
    """The boxes kept so far by left edge, with the edges the pre-test reads (one gather per comparison)."""

    def __init__(self):
        self.left = np.empty(0)
        self.idx = np.empty(0, np.int64)
        self.x1 = self.y0 = self.y1 = np.empty(0, F32)

    def add(self, boxes: BoxSet, new: np.ndarray) -> None:
        new = new[np.argsort(boxes.left[new], kind="stable")]
        at = np.searchsorted(self.left, boxes.left[new])
        self.left = np.insert(self.left, at, boxes.left[new])
        self.idx = np.insert(self.idx, at, new)
        self.x1 = np.insert(self.x1, at, boxes.x1[new])
        self.y0 = np.insert(self.y0, at, boxes.y0[new])
        self.y1 = np.insert(self.y1, at, boxes.y1[new])
