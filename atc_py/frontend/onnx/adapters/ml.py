"""ai.onnx.ml adapters that are tensor ops in disguise: Binarizer (a comparison cast back to the input's type) and
ArrayFeatureExtractor (a gather on the last axis)."""
from __future__ import annotations

import numpy as np

from ..adapter import NodeCtx, OnnxOp, onnx_op

ML = "ai.onnx.ml"


@onnx_op("Binarizer", ML)
class Binarizer(OnnxOp):
    """1 where x > threshold, else 0, in x's type."""
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        x = ctx.input(0)
        threshold = ctx.make_const("threshold", np.array(float(ctx.attr("threshold", 0.0)), np.dtype(x.desc.dtype)))
        above = ctx.emit("Greater", [x, threshold], suffix="above")[0]
        return ctx.emit("Cast", [above], {"dst_type": x.desc.dtype})


@onnx_op("ArrayFeatureExtractor", ML)
class ArrayFeatureExtractor(OnnxOp):
    """x[..., indices] with the indices flattened; a vector's selection is one row ([1, k])."""
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        x, idx = ctx.input(0), ctx.input(1)
        flat = ctx.emit("Reshape", [idx, ctx.make_const("flat", np.array([-1], np.int64))], suffix="indices")[0]
        picked = ctx.emit("GatherV2D", [x, flat], {"axis": -1}, suffix="gather")[0]
        if len(x.desc.shape) != 1:
            return ctx.emit("Identity", [picked])
        return ctx.emit("Reshape", [picked, ctx.make_const("row", np.array([1, -1], np.int64))])
