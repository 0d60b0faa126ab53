"""Bit operations on integers: BitwiseAnd/Or/Xor (broadcasting), Invert (ONNX BitwiseNot), LeftShift and
RightShift (ONNX BitShift), and Bitcast (ONNX BitCast: the same bits read as another type of the same width).

All use the elementwise tiling; the kernels walk the blocks. Shifts follow ONNX BitShift-28: a right shift of a
signed integer is arithmetic; a left shift drops the bits pushed past the top (the sign bit included); a shift
by a negative amount or by the type's width or more leaves only the sign fill (-1 for a negative x shifted
right, 0 otherwise)."""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import dtype_by_name
from ..ir.graph import Node, TensorDesc
from .core.base import REQUIRED, KernelArgs, OpError, TilingContext, Work
from .core.elementwise_tiling import for_blocks
from .core.registry import register
from .elementwise import INT_TYPES, MOVE_TYPES, BinaryOp, UnaryOp


def _bitwise(op_type: str, fn, dtypes=INT_TYPES):
    return register(type(op_type, (BinaryOp,), {"op_type": op_type, "fn": staticmethod(fn), "dtypes": dtypes,
                                               "__doc__": f"{op_type}: elementwise, broadcasting."}))


_bitwise("BitwiseAnd", np.bitwise_and)
_bitwise("BitwiseOr", np.bitwise_or)
_bitwise("BitwiseXor", np.bitwise_xor)


def _shift(left: bool):
    def fn(x, s):
        bits = x.dtype.itemsize * 8
        s = s.astype(np.int64)
        out_of_range = (s < 0) | (s >= bits)
        k = np.where(out_of_range, 0, s)
        unsigned = np.dtype(f"u{x.dtype.itemsize}")
        if left:   # on the unsigned view: bits past the top (the sign included) fall off
            y = np.left_shift(x.view(unsigned), k.astype(unsigned)).view(x.dtype)
            fill = np.zeros((), x.dtype)
        else:      # numpy's right shift of a signed integer is arithmetic
            y = np.right_shift(x, k.astype(x.dtype))
            fill = np.where(x < 0, -1, 0).astype(x.dtype) if x.dtype.kind == "i" else np.zeros((), x.dtype)
        return np.where(out_of_range, fill, y).astype(x.dtype)
    return fn


_bitwise("LeftShift", _shift(True))
_bitwise("RightShift", _shift(False))


@register
class Invert(UnaryOp):
    """~x (ONNX BitwiseNot)."""
    op_type = "Invert"
    dtypes = INT_TYPES
    fn = staticmethod(np.invert)


@register
class Bitcast(UnaryOp):
    """The input's bytes read as `type` (a numpy dtype name of the same width); the shape is unchanged."""
    op_type = "Bitcast"
    attrs = {"type": REQUIRED}
    dtypes = MOVE_TYPES

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        dst = str(self.attr(node, "type"))
        try:
            width = dtype_by_name(dst).itemsize
        except KeyError:
            raise OpError(f"Bitcast to {dst} is not supported") from None
        if width != dtype_by_name(x.dtype).itemsize:
            raise OpError(f"Bitcast from {x.dtype} to {dst} changes the element width")
        return [TensorDesc(x.shape, dst, x.format, x.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        d = args.outputs[0]
        raw = np.ascontiguousarray(inputs[0]).reshape(-1).view(d.dtype)
        out = np.zeros(d.numel, d.dtype)
        for_blocks(args, lambda lo, hi: np.copyto(out[lo:hi], raw[lo:hi]))
        return [out.reshape(d.shape)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = 0   # a copy
        return w

