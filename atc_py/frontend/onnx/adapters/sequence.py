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
        if ctx.input(2) is not None and ctx.const(2) is None:
            return [_insert_at_runtime(ctx, items, ctx.input(1), ctx.input(2))]
        p = _position(ctx, 2, s.length, insert=True)
        items.insert(len(items) if p is None else p, ctx.input(1))
        return [Sequence(items, len(items))]


def _insert_at_runtime(ctx: NodeCtx, items: list, tensor, pos) -> Sequence:
    """An insert position computed at run time: the length (n + 1) is still known, and when every element
    has the tensor's shape and dtype, element k of the result is selected on the device: seq[k] if k < p,
    the tensor if k == p, else seq[k - 1] (p = pos, or pos + n when negative, as Python's list.insert). A
    position outside [-n, n] is not checked on the device (onnxruntime raises; here the tensor lands last)."""
    d = tensor.desc
    if any(v.desc.shape != d.shape or v.desc.dtype != d.dtype for v in items) or any(x < 0 for x in d.shape):
        raise AdapterError("the position (input 2) is computed at run time and the elements differ in shape or "
                           "dtype: the order of a sequence is fixed when compiling (GE has no sequence tensors)")
    n = len(items)
    if pos.desc.dtype not in ("int32", "int64") or int(np.prod(pos.desc.shape, dtype=np.int64)) != 1:
        raise AdapterError(f"the position (input 2) must be one int32/int64 value, got {pos.desc.dtype}"
                           f"{list(pos.desc.shape)}")
    p = ctx.emit("Reshape", [pos, ctx.make_const("scalar", np.zeros(0, np.int64))], suffix="pos")[0]
    zero = ctx.make_const("zero", np.array(0, p.desc.dtype))
    wrapped = ctx.emit("Add", [p, ctx.make_const("n", np.array(n, p.desc.dtype))], suffix="wrapped")[0]
    p = ctx.emit("Select", [ctx.emit("Less", [p, zero], suffix="negative")[0], wrapped, p], suffix="at")[0]
    out = []
    for k in range(n + 1):
        kc = ctx.make_const(f"k{k}", np.array(k, p.desc.dtype))
        before = items[k] if k < n else tensor          # k < p: the old element k (k == n: never taken)
        after = items[k - 1] if k > 0 else tensor       # k > p: the old element k - 1 (k == 0: never taken)
        at = ctx.emit("Select", [ctx.emit("Equal", [kc, p], suffix=f"eq{k}")[0], tensor, after], suffix=f"at{k}")[0]
        out.append(ctx.emit("Select", [ctx.emit("Less", [kc, p], suffix=f"lt{k}")[0], before, at],
                            suffix=f"item{k}")[0])
    return Sequence(out, n + 1)


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
