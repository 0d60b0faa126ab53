"""Sequence adapters, resolved at compile time. A sequence value is a `Sequence` of IR Values whose
positions are constants; GE has no sequence tensors, so every SequenceAt / ConcatFromSequence /
SequenceLength must be decidable when the model is compiled (positions and split sizes constant)."""
from __future__ import annotations

import numpy as np

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from ..structured import Sequence


def _seq(ctx: NodeCtx, i: int) -> Sequence:
    s = ctx.input(i)
    if not isinstance(s, Sequence):
        raise AdapterError(f"input {i} is not a sequence")
    return s


def _position(ctx: NodeCtx, i: int, length: int, insert: bool = False) -> int | None:
    if ctx.input(i) is None:
        return None
    v = ctx.const(i)
    if v is None:
        raise AdapterError(f"the position (input {i}) must be a constant: GE resolves sequences when compiling")
    p = int(np.asarray(v).reshape(-1)[0])
    hi = length if insert else length - 1
    if not -length <= p <= hi:
        raise AdapterError(f"position {p} is outside the sequence of length {length}")
    return p + length if p < 0 else p


@onnx_op("SequenceEmpty")
class SequenceEmpty(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        return [Sequence([], 0)]


@onnx_op("SequenceConstruct")
class SequenceConstruct(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        items = [ctx.input(i) for i in range(ctx.n_inputs)]
        return [Sequence(items, len(items))]


@onnx_op("SequenceInsert")
class SequenceInsert(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        s = _seq(ctx, 0)
        items = list(s.elements())
        p = _position(ctx, 2, s.length, insert=True)
        items.insert(len(items) if p is None else p, ctx.input(1))
        return [Sequence(items, len(items))]


@onnx_op("SequenceErase")
class SequenceErase(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        s = _seq(ctx, 0)
        items = list(s.elements())
        p = _position(ctx, 1, s.length)
        del items[len(items) - 1 if p is None else p]
        return [Sequence(items, len(items))]


@onnx_op("SequenceAt")
class SequenceAt(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        s = _seq(ctx, 0)
        return ctx.emit("Identity", [s.elements()[_position(ctx, 1, s.length)]])


@onnx_op("SequenceLength")
class SequenceLength(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        return [ctx.make_const("length", np.array(_seq(ctx, 0).length, np.int64))]


@onnx_op("ConcatFromSequence")
class ConcatFromSequence(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        items = _seq(ctx, 0).elements()
        if not items:
            raise AdapterError("ConcatFromSequence of an empty sequence")
        axis = int(ctx.attr("axis"))
        if int(ctx.attr("new_axis", 0)):
            rank = len(items[0].desc.shape) + 1
            axis = axis % rank
            items = [ctx.emit("Unsqueeze", [v], {"axes": [axis]}, suffix=f"unsqueeze{k}")[0]
                     for k, v in enumerate(items)]
        return ctx.emit("ConcatD", items, {"concat_dim": axis})


@onnx_op("SplitToSequence")
class SplitToSequence(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        x = ctx.input(0)
        rank = len(x.desc.shape)
        axis = int(ctx.attr("axis", 0)) % rank
        dim = x.desc.shape[axis]
        split = ctx.input(1)
        if split is not None and not split.is_const:
            n = split.desc.shape[0] if len(split.desc.shape) == 1 else -1
            if n <= 0:
                raise AdapterError("a split computed at run time must be a vector of known length: a scalar split "
                                   "size would fix the number of parts only at run time")
            # the number of parts is known, their sizes are not: SplitV with the sizes as an input (dynamic)
            parts = ctx.emit("SplitV", [x, split], {"split_dim": axis, "num_split": n}, n_out=n)
            return [Sequence(list(parts), n)]
        if split is None:
            sizes, squeeze = [1] * dim, not int(ctx.attr("keepdims", 1))
        else:
            v = np.asarray(split.data).reshape(-1)
            if split.data.ndim == 0:
                n = int(v[0])
                sizes = [n] * (dim // n) + ([dim % n] if dim % n else [])
            else:
                sizes = [int(s) for s in v]
            squeeze = False
        if len(sizes) == 1:
            parts = [ctx.emit("Identity", [x], suffix="part0")[0]]
        else:
            parts = ctx.emit("SplitD", [x], {"split_dim": axis, "size_splits": sizes, "num_split": len(sizes)},
                             n_out=len(sizes))
        if squeeze:
            parts = [ctx.emit("Squeeze", [p], {"axes": [axis]}, suffix=f"squeeze{k}")[0] for k, p in enumerate(parts)]
        return [Sequence(list(parts), len(parts))]
