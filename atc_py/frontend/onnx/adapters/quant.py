"""Quantization adapters, as Ascend runs int8 models: QuantizeLinear -> AscendQuantV2, DequantizeLinear ->
AscendAntiQuantV2, DynamicQuantizeLinear; MatMulInteger / ConvInteger -> MatMulV2 / BatchMatMulV2 / Conv2D
with int8 operands (zero points as offset_x / offset_w, int32 result); QLinearMatMul / QLinearConv -> that
int8 cube op, then AscendRequant with x_scale * w_scale / y_scale."""
from __future__ import annotations

import numpy as np

from ....ir.dtypes import dtype_from_onnx
from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from .nn import _spatial, as_2d_attrs, from_2d, to_2d


def _onnx_dtype(code: int, what: str) -> str:
    dt = dtype_from_onnx(int(code))
    if dt is None:
        from ..onnx_lite import TensorProto
        name = TensorProto.DataType.Name(int(code)) if int(code) in TensorProto.DataType.values() else str(code)
        raise AdapterError(f"{what} {name} is not a type atc-py supports")
    return dt.name


def _q_attrs(ctx: NodeCtx) -> dict:
    return {"axis": int(ctx.attr("axis", 1)), "block_size": int(ctx.attr("block_size", 0))}


@onnx_op("QuantizeLinear")
class QuantizeLinear(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        x, scale, zp = ctx.input(0), ctx.input(1), ctx.input(2)
        out = int(ctx.attr("output_dtype", 0))
        if zp is not None:
            dst = zp.desc.dtype
            if out and _onnx_dtype(out, "output_dtype") != dst:
                raise AdapterError(f"output_dtype {_onnx_dtype(out, 'output_dtype')} differs from the zero point's "
                                   f"type {dst}")
        else:
            dst = _onnx_dtype(out, "output_dtype") if out else "uint8"
        precision = int(ctx.attr("precision", 0))
        attrs = {**_q_attrs(ctx), "dst_type": dst, "saturate": bool(ctx.attr("saturate", 1)),
                 "precision": _onnx_dtype(precision, "precision") if precision else ""}
        return ctx.emit("AscendQuantV2", [x, scale, zp], attrs)


@onnx_op("DequantizeLinear")
class DequantizeLinear(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        out = int(ctx.attr("output_dtype", 0))
        attrs = {**_q_attrs(ctx), "dst_type": _onnx_dtype(out, "output_dtype") if out else ""}
        return ctx.emit("AscendAntiQuantV2", [ctx.input(0), ctx.input(1), ctx.input(2)], attrs)


@onnx_op("DynamicQuantizeLinear")
class DynamicQuantizeLinear(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        return ctx.emit("DynamicQuantizeLinear", [ctx.input(0)], n_out=3)


def _offset_x(ctx: NodeCtx, x, zp, row_axis: int):
    """(data input, offset_x attr) of an int8 cube op: a known single zero point is CANN's offset_x; any other
    (computed at run time, per row) is subtracted in int32 first."""
    if zp is None:
        return x, 0
    if zp.is_const and zp.data.size == 1:
        return x, int(zp.data.reshape(-1)[0])
    x32 = ctx.emit("Cast", [x], {"dst_type": "int32"}, suffix="x32")[0]
    z32 = ctx.emit("Cast", [zp], {"dst_type": "int32"}, suffix="zp32")[0]
    if len(zp.desc.shape) == 1 and zp.desc.shape[0] > 1:   # one per row: along row_axis
        shape = [1] * len(x.desc.shape)
        shape[row_axis] = -1
        z32 = ctx.emit("Reshape", [z32, ctx.make_const("zp_shape", np.array(shape, np.int64))], suffix="zp_rows")[0]
    return ctx.emit("Sub", [x32, z32], suffix="x_centered")[0], 0


def _matmul(ctx: NodeCtx, a, b, a_zp, b_zp):
    """int32 product of the zero-point-centered int8 operands."""
    ra, rb = len(a.desc.shape), len(b.desc.shape)
    if ra < 2 or rb < 2:
        raise AdapterError(f"integer matmul takes operands of rank >= 2, got {list(a.desc.shape)} and "
                           f"{list(b.desc.shape)}")
    a, off = _offset_x(ctx, a, a_zp, -2)
    if b.desc.dtype != a.desc.dtype and a.desc.dtype == "int32":
        b = ctx.emit("Cast", [b], {"dst_type": "int32"}, suffix="b32")[0]
    op = "MatMulV2" if ra == 2 and rb == 2 else "BatchMatMulV2"
    return ctx.emit(op, [a, b, None, b_zp], {"offset_x": off}, suffix="matmul")[0]


def _requant(ctx: NodeCtx, acc, scales, y_scale, y_zp, axis: int, dst: str):
    s = ctx.emit("Mul", scales, suffix="scale")[0]
    s = ctx.emit("RealDiv", [s, y_scale], suffix="req_scale")[0]
    return ctx.emit("AscendRequant", [acc, s, y_zp], {"axis": axis, "dst_type": dst})


@onnx_op("MatMulInteger")
class MatMulInteger(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        y = _matmul(ctx, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3))
        return [y]


@onnx_op("QLinearMatMul")
class QLinearMatMul(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        a, b, y_zp = ctx.input(0), ctx.input(3), ctx.input(7)
        acc = _matmul(ctx, a, b, ctx.input(2), ctx.input(5))
        dst = y_zp.desc.dtype if y_zp is not None else a.desc.dtype
        return _requant(ctx, acc, [ctx.input(1), ctx.input(4)], ctx.input(6), y_zp, -1, dst)


def _conv(ctx: NodeCtx, x, w, bias, x_zp, w_zp):
    rank = len(x.desc.shape)
    if rank not in (3, 4):
        raise AdapterError(f"integer Conv takes 1-D or 2-D (N,C,L / N,C,H,W) input, got {list(x.desc.shape)}")
    x, off = _offset_x(ctx, x, x_zp, 1)
    if w.desc.dtype != x.desc.dtype and x.desc.dtype == "int32":
        w = ctx.emit("Cast", [w], {"dst_type": "int32"}, suffix="w32")[0]
    if rank == 3:
        as_2d_attrs(ctx)
        x = to_2d(ctx, x)
        n_out, cin, k = w.desc.shape
        w = ctx.emit("Reshape", [w, ctx.make_const("w2d", np.array([n_out, cin, 1, k], np.int64))], suffix="w2d")[0]
    kernel = ctx.attr("kernel_shape") or list(w.desc.shape[2:])
    strides, dil, pads = _spatial(ctx, x.desc.shape, kernel)
    attrs = {"strides": [1, 1] + strides, "pads": pads, "dilations": [1, 1] + dil,
             "groups": int(ctx.attr("group", 1)), "data_format": "NCHW", "offset_x": off}
    y = ctx.emit("Conv2D", [x, w, bias, None, w_zp], attrs, suffix="conv")[0]   # input 3: the fused residual
    return from_2d(ctx, y)[0] if rank == 3 else y


@onnx_op("ConvInteger")
class ConvInteger(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        return [_conv(ctx, ctx.input(0), ctx.input(1), None, ctx.input(2), ctx.input(3))]


@onnx_op("QLinearConv")
class QLinearConv(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        x, y_zp = ctx.input(0), ctx.input(7)
        acc = _conv(ctx, x, ctx.input(3), ctx.input(8), ctx.input(2), ctx.input(5))
        dst = y_zp.desc.dtype if y_zp is not None else x.desc.dtype
        return _requant(ctx, acc, [ctx.input(1), ctx.input(4)], ctx.input(6), y_zp, 1, dst)
