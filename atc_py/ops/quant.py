"""Quantization: AscendQuantV2 (ONNX QuantizeLinear), AscendAntiQuantV2 (DequantizeLinear), AscendRequant
(int32 accumulators to int8/uint8: the tail of QLinearConv / QLinearMatMul after an int8 Conv2D or matmul) and
DynamicQuantizeLinear. CANN's op types with ONNX's arithmetic: y = saturate(rint(x / scale) + zero_point),
x = (q - zero_point) * scale; scale and zero point per tensor, per axis (1-D along `axis`) or blocked (the
input's shape with the `axis` dim cut into blocks of `block_size`). The int8 cube side is Conv2D / MatMulV2 /
BatchMatMulV2 with int8 operands (offset_x, offset_w). Tiling splits dim 0 of the output over vector cores."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError, TilingContext, Work
from .core.registry import register
from .core.row_split import RowSplitOp, norm_axis

INT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
              "int32": (-2 ** 31, 2 ** 31 - 1), "int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}
SCALES = ("float32", "float16", "float64", "bfloat16")
# the quantized types GE has a DataType for (ir/dtypes.py): 8/16/32-bit integers, int4, int2/uint2, float8, float4
QUANT = ("int8", "uint8", "int16", "uint16", "int32", "int4", "int2", "uint2", "float8_e4m3fn", "float8_e5m2",
         "float4_e2m1fn")


def param_shape_ok(p: tuple[int, ...], x: tuple[int, ...], axis: int, block: int) -> str | None:
    """Why a scale / zero point of shape p does not fit x (None when it does)."""
    size = int(np.prod(p)) if p else 1
    if size == 1 and len(p) <= 1:
        return None
    if block <= 0:
        if len(p) != 1 or not x or p[0] != x[axis]:
            return f"a per-axis parameter must be 1-D with {x[axis] if x else 1} values (axis {axis}), got {list(p)}"
        return None
    want = tuple(-(-d // block) if i == axis else d for i, d in enumerate(x))
    if tuple(p) != want:
        return f"a blocked parameter (block_size {block} on axis {axis}) must have shape {list(want)}, got {list(p)}"
    return None


def expand_param(p: np.ndarray, shape: tuple[int, ...], axis: int, block: int) -> np.ndarray:
    """A scale / zero point broadcastable against x (ONNX's per-tensor, per-axis and blocked layouts)."""
    p = np.asarray(p)
    why = param_shape_ok(p.shape, tuple(shape), axis, block)
    if why:
        raise OpError(why)
    if p.size == 1:
        return p.reshape(())
    if block <= 0:
        dims = [1] * len(shape)
        dims[axis] = -1
        return p.reshape(dims)
    return np.take(np.repeat(p, block, axis=axis), np.arange(shape[axis]), axis=axis)


def np_dtype(name: str) -> np.dtype:
    """numpy's dtype of a type name, the sub-byte and float8 ones from ml_dtypes (an onnx dependency)."""
    if name in ("int4", "uint4", "int2", "uint2") or name.startswith(("float8", "float4", "bfloat")):
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def saturate_to(v: np.ndarray, dtype: str, saturate: bool = True) -> np.ndarray:
    """Rounded values clipped to an integer type's range, or cast to a float8 type (saturated unless told not)."""
    dt = np_dtype(dtype)
    if dtype in INT_RANGES:
        lo, hi = INT_RANGES[dtype]
        return np.clip(v, lo, hi).astype(dt)
    if saturate:
        import ml_dtypes
        top = float(ml_dtypes.finfo(dt).max)
        v = np.where(np.isinf(v), np.sign(v) * top, np.clip(v, -top, top))
    return v.astype(dt)


class QuantBase(RowSplitOp):
    attrs = {"axis": 1, "block_size": 0}

    @staticmethod
    def _axis(axis: int, rank: int, params) -> int:
        """The quantization axis; ignored (0) when every parameter is one value (per tensor)."""
        if all(p is None or (int(np.prod(p)) if len(p) else 1) == 1 and len(p) <= 1 for p in params):
            return 0
        return norm_axis(axis, rank)

    def _geom(self, node_or_attrs, x: TensorDesc, params: list[TensorDesc | None]) -> int:
        axis = self._axis(int(self.attr(node_or_attrs, "axis")), len(x.shape),
                          [tuple(p.shape) if p is not None else None for p in params])
        block = int(self.attr(node_or_attrs, "block_size"))
        if block < 0:
            raise OpError(f"block_size {block} must be >= 0")
        for p in params:
            if p is not None:
                why = param_shape_ok(tuple(p.shape), tuple(x.shape), axis, block)
                if why:
                    raise OpError(why)
        return axis

    def rows(self, ctx: TilingContext) -> int:
        out = ctx.outputs[0].shape
        return int(out[0]) if out else 1

    def params(self, args: KernelArgs, x: np.ndarray, inputs, first: int):
        zp = inputs[first + 1] if len(inputs) > first + 1 and inputs[first + 1] is not None else None
        axis = self._axis(int(self.attr(args.attrs, "axis")), x.ndim,
                          [np.shape(inputs[first]), None if zp is None else np.shape(zp)])
        block = int(self.attr(args.attrs, "block_size"))
        scale = expand_param(inputs[first], x.shape, axis, block)
        return scale, (None if zp is None else expand_param(zp, x.shape, axis, block))


@register
class AscendQuantV2(QuantBase):
    """y = saturate(rint(x / scale) + offset) in dst_type; the division runs in `precision` when given (else
    numpy's promotion of x and scale, as ONNX's reference); float8 targets add no offset."""
    op_type = "AscendQuantV2"
    inputs = ("x", "scale", "offset?")
    attrs = {**QuantBase.attrs, "dst_type": "uint8", "saturate": True, "precision": ""}
    dtypes = SCALES + QUANT

    def infer(self, node: Node) -> list[TensorDesc]:
        x, scale = node.input_desc(0), node.input_desc(1)
        zp = node.input_desc(2) if len(node.inputs) > 2 else None
        self._geom(node, x, [scale, zp])
        dst = self.attr(node, "dst_type")
        if zp is not None and zp.dtype != dst:
            raise OpError(f"offset ({zp.dtype}) must have the output type {dst}")
        return [TensorDesc(x.shape, dst, x.format, x.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        scale, zp = self.params(args, x, inputs, 1)
        prec = self.attr(args.attrs, "precision")
        q = x.astype(np_dtype(prec)) / scale.astype(np_dtype(prec)) if prec else x / scale
        dst = args.outputs[0].dtype
        if dst in INT_RANGES:
            v = np.rint(q).astype(np.int64) + (0 if zp is None else zp.astype(np.int64))
        else:
            v = q
        return [self.keep_covered(args, saturate_to(v, dst, bool(self.attr(args.attrs, "saturate"))))]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 4   # divide, round, add, clip
        return w


@register
class AscendAntiQuantV2(QuantBase):
    """y = (x - offset) * scale in dst_type (the scale's type unless ONNX's output_dtype says otherwise)."""
    op_type = "AscendAntiQuantV2"
    inputs = ("x", "scale", "offset?")
    attrs = {**QuantBase.attrs, "dst_type": ""}
    dtypes = SCALES + QUANT

    def infer(self, node: Node) -> list[TensorDesc]:
        x, scale = node.input_desc(0), node.input_desc(1)
        zp = node.input_desc(2) if len(node.inputs) > 2 else None
        self._geom(node, x, [scale, zp])
        if zp is not None and zp.dtype != x.dtype:
            raise OpError(f"offset ({zp.dtype}) must have the input type {x.dtype}")
        dst = self.attr(node, "dst_type") or scale.dtype
        if dst not in SCALES:
            raise OpError(f"dst_type {dst} is not a float type")
        return [TensorDesc(x.shape, dst, x.format, x.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        scale, zp = self.params(args, x, inputs, 1)
        dx = x.astype(np.float32)
        if zp is not None and not x.dtype.name.startswith("float"):   # float8 zero points are 0
            dx = dx - zp.astype(np.float32)
        y = (dx * scale).astype(np_dtype(args.outputs[0].dtype))
        return [self.keep_covered(args, y)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 2
        return w


@register
class AscendRequant(QuantBase):
    """int32 accumulators -> int8/uint8: y = saturate(rint(acc * req_scale) + offset), the product in fp32 (an
    fp32 deq scale, as Ascend's fixpipe and onnxruntime's MLAS requantize); req_scale is one value or one per
    channel along `axis` (x_scale * w_scale / y_scale, combined in the scales' type)."""
    op_type = "AscendRequant"
    inputs = ("x", "req_scale", "offset?")
    attrs = {"axis": 1, "block_size": 0, "dst_type": "int8"}
    dtypes = SCALES + QUANT

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if x.dtype != "int32":
            raise OpError(f"AscendRequant takes int32 accumulators, got {x.dtype}")
        self._geom(node, x, [node.input_desc(1), node.input_desc(2) if len(node.inputs) > 2 else None])
        dst = self.attr(node, "dst_type")
        if dst not in ("int8", "uint8"):
            raise OpError(f"dst_type {dst} must be int8 or uint8")
        return [TensorDesc(x.shape, dst, x.format, x.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        scale, zp = self.params(args, x, inputs, 1)
        v = np.rint(x.astype(np.float32) * scale.astype(np.float32)).astype(np.int64)
        if zp is not None:
            v = v + zp.astype(np.int64)
        return [self.keep_covered(args, saturate_to(v, args.outputs[0].dtype))]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 4
        return w


@register
class DynamicQuantizeLinear(QuantBase):
    """ONNX DynamicQuantizeLinear: uint8 with scale = (max(0, x) - min(0, x)) / 255 and zero point
    rint(clip(-min / scale, 0, 255)) over the whole tensor (CANN's DynamicQuant is per-token symmetric int8,
    not this). A reduction then a quantize: blocks reduce their rows, the first block combines them."""
    op_type = "DynamicQuantizeLinear"
    inputs = ("x",)
    outputs = ("y", "y_scale", "y_zero_point")
    attrs = {}
    dtypes = ("float32", "uint8")

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if x.dtype != "float32":
            raise OpError(f"DynamicQuantizeLinear takes float32, got {x.dtype}")
        return [TensorDesc(x.shape, "uint8", x.format, x.origin_format), TensorDesc((), "float32"),
                TensorDesc((), "uint8")]

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        rows = x.reshape(x.shape[0], int(np.prod(x.shape[1:]))) if x.ndim else x.reshape(1, 1)
        seen = rows[:self.covered_rows(args)]
        hi = np.float32(max(0.0, float(seen.max()))) if seen.size else np.float32(0)
        lo = np.float32(min(0.0, float(seen.min()))) if seen.size else np.float32(0)
        scale = np.float32(1.0 if hi == lo else hi - lo) / np.float32(255)
        zp = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
        y = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.uint8)
        return [self.keep_covered(args, y), np.asarray(scale, np.float32), np.asarray(zp, np.uint8)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = 6 * ctx.inputs[0].numel
        return w
