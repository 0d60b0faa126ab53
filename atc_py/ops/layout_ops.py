"""Data-movement ops: SpaceToDepth (DCR / CRD), ReverseSequence (each batch entry's first seq_len steps
reversed) and CenterCropPad (crop or zero-pad each axis to a target size around the centre; the target may be
computed at run time and then decides the output shape). Tiling splits dim 0 of the output over vector cores."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError, TilingContext, Work
from .core.registry import register
from .core.row_split import RowSplitOp, ints, norm_axis

MOVE = ("float32", "float16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool")


@register
class SpaceToDepth(RowSplitOp):
    op_type = "SpaceToDepth"
    inputs = ("x",)
    attrs = {"block_size": 2, "mode": "DCR", "data_format": "NCHW"}
    dtypes = MOVE

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        b = int(self.attr(node, "block_size"))
        if len(x.shape) != 4 or b < 1 or x.shape[2] % b or x.shape[3] % b:
            raise OpError(f"SpaceToDepth needs N,C,H,W with H and W divisible by blocksize {b}, got {list(x.shape)}")
        if self.attr(node, "mode") not in ("DCR", "CRD"):
            raise OpError(f"mode '{self.attr(node, 'mode')}' is not DCR or CRD")
        n, c, h, w = x.shape
        return [TensorDesc((n, c * b * b, h // b, w // b), x.dtype, x.format, x.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        b = int(self.attr(args.attrs, "block_size"))
        n, c, h, w = x.shape
        t = x.reshape(n, c, h // b, b, w // b, b)
        perm = (0, 3, 5, 1, 2, 4) if self.attr(args.attrs, "mode") == "DCR" else (0, 1, 3, 5, 2, 4)
        y = np.ascontiguousarray(t.transpose(perm)).reshape(args.outputs[0].shape)
        return [self.keep_covered(args, y)]


@register
class ReverseSequence(RowSplitOp):
    op_type = "ReverseSequence"
    inputs = ("x", "seq_lengths")
    attrs = {"seq_dim": 0, "batch_dim": 1}
    dtypes = MOVE + ("bfloat16",)

    def infer(self, node: Node) -> list[TensorDesc]:
        x, lens = node.input_desc(0), node.input_desc(1)
        rank = len(x.shape)
        if rank < 2:
            raise OpError(f"ReverseSequence takes rank >= 2, got {list(x.shape)}")
        t, b = norm_axis(int(self.attr(node, "seq_dim")), rank), norm_axis(int(self.attr(node, "batch_dim")), rank)
        if t == b or b not in (0, 1) or t not in (0, 1):
            raise OpError(f"time_axis {t} and batch_axis {b} must be 0 and 1 in some order")
        if tuple(lens.shape) != (x.shape[b],):
            raise OpError(f"sequence_lens {list(lens.shape)} must have one entry per batch ({x.shape[b]})")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        x, lens = inputs
        rank = x.ndim
        t = norm_axis(int(self.attr(args.attrs, "seq_dim")), rank)
        b = norm_axis(int(self.attr(args.attrs, "batch_dim")), rank)
        xb = np.moveaxis(x, (b, t), (0, 1))                  # [batch, time, ...]
        out = xb.copy()
        steps = xb.shape[1]
        for i, n in enumerate(lens.astype(np.int64)):
            if not 0 <= n <= steps:
                raise OpError(f"sequence length {n} is outside [0, {steps}]")
            out[i, :n] = xb[i, :n][::-1]
        y = np.ascontiguousarray(np.moveaxis(out, (0, 1), (b, t)))
        return [self.keep_covered(args, y)]


def center_slices(in_len: int, target: int) -> tuple[slice, slice]:
    """(source slice, destination slice) of one axis cropped or padded to `target` around the centre (the
    extra element of an odd difference goes to the end)."""
    if target <= in_len:
        start = (in_len - target) // 2
        return slice(start, start + target), slice(0, target)
    start = (target - in_len) // 2
    return slice(0, in_len), slice(start, start + in_len)


@register
class CenterCropPad(RowSplitOp):
    op_type = "CenterCropPad"
    inputs = ("x", "shape")
    attrs = {"axes": None}
    infer_depend = frozenset({1})
    dtypes = MOVE

    def _axes(self, attrs, rank: int, n: int) -> list[int]:
        axes = attrs.get("axes")
        axes = list(range(rank)) if axes is None else [norm_axis(int(a), rank) for a in axes]
        if len(axes) != n or len(set(axes)) != n:
            raise OpError(f"shape has {n} values for axes {axes}")
        return axes

    def _out(self, attrs, in_shape, target):
        out = list(in_shape)
        for a, v in zip(self._axes(attrs, len(in_shape), len(target)), target):
            if v < 0:
                raise OpError(f"target size {v} must be >= 0")
            out[a] = v
        return tuple(out)

    def infer(self, node: Node) -> list[TensorDesc]:
        x, shape = node.input_desc(0), node.input_desc(1)
        if len(shape.shape) != 1:
            raise OpError(f"shape must be 1-D, got {list(shape.shape)}")
        value = node.const_input(1)
        if value is None:
            return [TensorDesc((-1,) * len(x.shape), x.dtype, x.format, x.origin_format)]
        return [TensorDesc(self._out(node.attrs, x.shape, ints(value)), x.dtype, x.format, x.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        x, target = inputs[0], ints(inputs[1])
        out_shape = self._out(args.attrs, x.shape, target)
        src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
        for a, v in zip(self._axes(args.attrs, x.ndim, len(target)), target):
            src[a], dst[a] = center_slices(x.shape[a], v)
        y = np.zeros(out_shape, x.dtype)
        y[tuple(dst)] = x[tuple(src)]
        return [self.keep_covered(args, y)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = max(ctx.outputs[0].numel, 0)
        return w
