"""onnxruntime's quantized window, concat and softmax contrib ops (com.microsoft): QLinearGlobalAveragePool,
QLinearAveragePool, QLinearConcat and QLinearSoftmax, int8/uint8 with per-tensor scales and zero points. As in
qlinear.py, the arithmetic is onnxruntime's CPU kernels' so that rounding boundaries fall where it puts them:
* QLinearGlobalAveragePool: integer sums less zero point × size, times sx / (sy · size) in fp32, rounded.
* QLinearAveragePool: the input dequantized to fp32, each window summed in order in fp32, divided by its count,
  quantized as y / sy + zy rounded half to even.
* QLinearConcat: an input quantized like the output is copied, any other goes through a 256-entry requantize table.
* QLinearSoftmax: exp of (x - max) · sx from a 256-entry fp32 table pre-shifted so a row's sum cannot overflow,
  an in-order fp32 row sum, y = round(e · floor(1 / sy) / sum) + zy. (onnxruntime wraps an int8 result of 128 to
  -128 when one logit dominates; here it saturates to 127.)
Tiling splits the output's first dim over vector cores (row_split)."""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Node, TensorDesc
from .conv_pool import out_dim
from .core.base import KernelArgs, OpError, TilingContext, Work
from .core.registry import register
from .core.row_split import RowSplitOp, ints, norm_axis
from .qlinear import F32, Q8, check_params, lookup_table, param, table_lookup
from .quant import INT_RANGES

ZP = np.int64


def _get(inputs, i):
    return inputs[i] if i < len(inputs) else None


def _channels_first(x: np.ndarray, channels_last: bool) -> np.ndarray:
    return np.moveaxis(x, -1, 1) if channels_last else x


def _channels_back(y: np.ndarray, channels_last: bool) -> np.ndarray:
    return np.moveaxis(y, 1, -1) if channels_last else y


class QLinearWindow(RowSplitOp):
    inputs = ("X", "x_scale", "x_zero_point?", "y_scale", "y_zero_point?")
    dtypes = Q8 + ("float32",)

    def check(self, node: Node) -> TensorDesc:
        x = node.input_desc(0)
        check_params(node, x, (1, 3), (2, 4))
        if len(x.shape) < 3:
            raise OpError(f"{node.op_type} takes N, C and at least one spatial dim, got shape {list(x.shape)}")
        return x

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = 3 * ctx.inputs[0].numel + 4 * ctx.outputs[0].numel
        return w


@register
class QLinearGlobalAveragePool(QLinearWindow):
    op_type = "QLinearGlobalAveragePool"
    attrs = {"channels_last": 0}

    def infer(self, node: Node) -> list[TensorDesc]:
        x = self.check(node)
        last = bool(self.attr(node, "channels_last"))
        spatial = range(1, len(x.shape) - 1) if last else range(2, len(x.shape))
        shape = tuple(1 if i in spatial else d for i, d in enumerate(x.shape))
        return [TensorDesc(shape, x.dtype, x.format, x.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        last = bool(self.attr(args.attrs, "channels_last"))
        x = _channels_first(inputs[0], last)
        dtype = args.outputs[0].dtype
        sx, zx = param(inputs[1], "x_scale"), param(_get(inputs, 2), "x_zero_point", ZP)
        sy, zy = param(inputs[3], "y_scale"), param(_get(inputs, 4), "y_zero_point", ZP)
        size = int(np.prod(x.shape[2:]))
        sums = x.reshape(x.shape[0], x.shape[1], size).astype(np.int64).sum(-1) - zx * size
        scale = F32(sx / F32(sy * F32(size)))
        v = (sums.astype(np.int32).astype(F32) * scale).astype(F32)
        lo, hi = INT_RANGES[dtype]
        q = np.rint(np.clip(v, F32(lo - zy), F32(hi - zy))).astype(np.int64) + zy
        y = q.astype(dtype).reshape(x.shape[:2] + (1,) * (x.ndim - 2))
        return [self.keep_covered(args, np.ascontiguousarray(_channels_back(y, last)))]


@register
class QLinearAveragePool(QLinearWindow):
    """Pads are ONNX's [begins..., ends...] with auto_pad resolved by the adapter."""
    op_type = "QLinearAveragePool"
    attrs = {"kernel_shape": None, "strides": [], "pads": [], "ceil_mode": 0, "count_include_pad": 0,
             "channels_last": 0}

    def geometry(self, attrs, x_shape) -> tuple[list[int], list[int], list[int], list[int]]:
        """(kernel, strides, pads, output spatial dims) of a channels-first shape."""
        n = len(x_shape) - 2
        k = ints(self.attr(attrs, "kernel_shape"), n, "kernel_shape")
        s = ints(self.attr(attrs, "strides"), None, "strides") or [1] * n
        p = ints(self.attr(attrs, "pads"), None, "pads") or [0] * 2 * n
        if len(s) != n or len(p) != 2 * n or min(k + s) < 1 or min(p) < 0:
            raise OpError(f"kernel_shape {k}, strides {s} and pads {p} do not describe a {n}-D window")
        ceil = bool(self.attr(attrs, "ceil_mode"))
        out = [out_dim(int(x_shape[2 + i]), k[i], s[i], 1, p[i], p[n + i], ceil) for i in range(n)]
        return k, s, p, out

    def infer(self, node: Node) -> list[TensorDesc]:
        x = self.check(node)
        last = bool(self.attr(node, "channels_last"))
        first = (x.shape[0], x.shape[-1]) + tuple(x.shape[1:-1]) if last else tuple(x.shape)
        _, _, _, out = self.geometry(node.attrs, first)
        shape = (first[0],) + tuple(out) + (first[1],) if last else tuple(first[:2]) + tuple(out)
        return [TensorDesc(shape, x.dtype, x.format, x.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        last = bool(self.attr(args.attrs, "channels_last"))
        x = _channels_first(inputs[0], last)
        dtype = args.outputs[0].dtype
        k, s, p, out = self.geometry(args.attrs, x.shape)
        n = len(k)
        sx, zx = param(inputs[1], "x_scale"), param(_get(inputs, 2), "x_zero_point", ZP)
        deq = (F32(sx) * (x.astype(np.int32) - zx).astype(F32)).astype(F32)
        # zeros where a window runs past the input (pads, ceil-mode overhang): adding 0.0 keeps an in-order sum exact
        after = [max(p[n + i], (out[i] - 1) * s[i] + k[i] - x.shape[2 + i] - p[i]) for i in range(n)]
        padded = np.pad(deq, [(0, 0), (0, 0)] + [(p[i], after[i]) for i in range(n)])
        acc = np.zeros(x.shape[:2] + tuple(out), F32)
        for offs in np.ndindex(*k):          # window cells in row-major order, as onnxruntime's loops add them
            acc += padded[(slice(None), slice(None)) + tuple(slice(o, o + (out[i] - 1) * s[i] + 1, s[i])
                                                             for i, o in enumerate(offs))]
        if self.attr(args.attrs, "count_include_pad"):
            count = np.full(out, F32(np.prod(k)), F32)
        else:
            count = np.ones(out, F32)
            for i in range(n):
                start = np.arange(out[i]) * s[i] - p[i]
                valid = np.minimum(start + k[i], x.shape[2 + i]) - np.maximum(start, 0)
                count = count * valid.astype(F32).reshape([-1 if j == i else 1 for j in range(n)])
        mean = (acc / count).astype(F32)
        sy, zy = param(inputs[3], "y_scale"), param(_get(inputs, 4), "y_zero_point", ZP)
        with np.errstate(all="ignore"):
            v = ((mean / F32(sy)).astype(F32) + F32(zy)).astype(F32)
        lo, hi = INT_RANGES[dtype]
        y = np.clip(np.rint(v), lo, hi).astype(dtype)
        return [self.keep_covered(args, np.ascontiguousarray(_channels_back(y, last)))]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops += ctx.outputs[0].numel * int(np.prod(ctx.attrs.get("kernel_shape") or [1]))
        return w


@register
class QLinearConcat(RowSplitOp):
    op_type = "QLinearConcat"
    inputs = ("Y_scale", "Y_zero_point", "x*")   # then (tensor, scale, zero point) per input
    attrs = {"axis": None}
    dtypes = Q8 + ("float32",)

    def infer(self, node: Node) -> list[TensorDesc]:
        if len(node.inputs) < 5 or (len(node.inputs) - 2) % 3:
            raise OpError(f"{node.op_type} takes Y_scale, Y_zero_point, then (tensor, scale, zero point) per input; "
                          f"got {len(node.inputs)} inputs")
        zp = node.input_desc(1)
        if zp is None:
            raise OpError("input 1 (Y_zero_point) is required")
        descs = [node.input_desc(i) for i in range(2, len(node.inputs), 3)]
        for i in range(2, len(node.inputs), 3):
            check_params(node, node.input_desc(i), (0, i + 1), (1, i + 2))
        first = descs[0]
        axis = norm_axis(int(self.attr(node, "axis")), len(first.shape))
        for d in descs[1:]:
            if len(d.shape) != len(first.shape) or any(a != b for j, (a, b) in enumerate(zip(d.shape, first.shape))
                                                       if j != axis):
                raise OpError(f"input shapes {[list(x.shape) for x in descs]} differ outside axis {axis}")
        shape = list(first.shape)
        shape[axis] = sum(d.shape[axis] for d in descs)
        return [TensorDesc(tuple(shape), zp.dtype, first.format, first.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        dtype = args.outputs[0].dtype
        sy, zy = param(inputs[0], "Y_scale"), param(inputs[1], "Y_zero_point", ZP)
        parts = []
        for i in range(2, len(inputs), 3):
            sx, zx = param(inputs[i + 1], "x_scale"), param(inputs[i + 2], "x_zero_point", ZP)
            if sx == sy and zx == zy:
                parts.append(inputs[i])
            else:
                parts.append(table_lookup(inputs[i], lookup_table(dtype, sx, zx, sy, zy, lambda v: v)))
        axis = norm_axis(int(self.attr(args.attrs, "axis")), parts[0].ndim)
        return [self.keep_covered(args, np.concatenate(parts, axis=axis).astype(dtype, copy=False))]


@register
class QLinearSoftmax(RowSplitOp):
    """`opset` is the model's default-domain opset the quantizer recorded: from 13 a row is one dim (`axis`,
    default -1), below it every dim from `axis` (default 1) on."""
    op_type = "QLinearSoftmax"
    inputs = ("X", "X_scale", "x_zero_point?", "y_scale", "y_zero_point?")
    attrs = {"axis": None, "opset": None}
    dtypes = Q8 + ("float32",)

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        check_params(node, x, (1, 3), (2, 4))
        self._axis(node.attrs, len(x.shape))
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def _axis(self, attrs, rank: int) -> int:
        opset = int(self.attr(attrs, "opset"))
        axis = attrs.get("axis")
        return norm_axis(int(axis) if axis is not None else (1 if opset < 13 else -1), rank)

    @staticmethod
    def exp_table(x_scale, d: int) -> np.ndarray:
        """exp((i - 255 + shift) · sx) for i in 0..255 (i - 255 = x - row max), fp32; shift keeps D of them
        summable in fp32."""
        shift = max(0.0, math.log(float(np.finfo(F32).max) / d) - 5.0) / float(x_scale)
        i = np.arange(256, dtype=np.float64)
        return np.exp((i - 255.0 + shift) * float(x_scale)).astype(F32)

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        dtype = args.outputs[0].dtype
        axis = self._axis(args.attrs, x.ndim)
        if int(self.attr(args.attrs, "opset")) < 13:
            rows = x.reshape(int(np.prod(x.shape[:axis])), -1)
        else:
            rows = np.moveaxis(x, axis, -1)
        d = rows.shape[-1]
        if d == 0 or x.size == 0:
            return [np.zeros(x.shape, dtype)]
        table = self.exp_table(param(inputs[1], "X_scale"), d)
        xi = rows.astype(np.int32)
        e = table[xi - xi.max(-1, keepdims=True) + 255]
        total = np.cumsum(e, axis=-1, dtype=F32)[..., -1:]    # in order, as onnxruntime's loop adds
        y_scale = F32(np.floor(F32(1) / param(inputs[3], "y_scale")))
        q = np.rint(((e * y_scale).astype(F32) / total).astype(F32)).astype(np.int64)
        lo, hi = INT_RANGES[dtype]
        y = np.clip(q + param(_get(inputs, 4), "y_zero_point", ZP), lo, hi).astype(dtype)
        y = y.reshape(x.shape) if int(self.attr(args.attrs, "opset")) < 13 else np.moveaxis(y, -1, axis)
        return [self.keep_covered(args, np.ascontiguousarray(y))]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = 5 * ctx.inputs[0].numel
        return w
