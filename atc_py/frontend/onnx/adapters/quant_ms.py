"""onnxruntime's quantized contrib ops (domain com.microsoft), what its QOperator-format quantizer writes besides
the standard QLinearConv / QLinearMatMul: QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QLinearSoftmax map one to one onto the ops of
ops/qlinear*.py; QGemm is the int8 cube matmul with an int32 bias and AscendRequant, as QLinearMatMul is."""
from __future__ import annotations

import numpy as np

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from .nn import check_window, onnx_pads
from .quant import _offset_x

MS = "com.microsoft"


def _all_inputs(ctx: NodeCtx) -> list:
    return [ctx.input(i) for i in range(ctx.n_inputs)]


def _same(op_type: str, attrs=()):
    """An adapter passing the node's inputs and the named attributes straight to the op of the same name."""
    def impl(cls, ctx: NodeCtx):
        return ctx.emit(op_type, _all_inputs(ctx), {k: ctx.attr(k) for k in attrs if ctx.attr(k) is not None})
    return classmethod(impl)


@onnx_op("QLinearAdd", domain=MS)
class QLinearAdd(OnnxOp):
    _impl_v1 = _same("QLinearAdd")


@onnx_op("QLinearMul", domain=MS)
class QLinearMul(OnnxOp):
    _impl_v1 = _same("QLinearMul")


@onnx_op("QLinearSigmoid", domain=MS)
class QLinearSigmoid(OnnxOp):
    _impl_v1 = _same("QLinearSigmoid")


@onnx_op("QLinearLeakyRelu", domain=MS)
class QLinearLeakyRelu(OnnxOp):
    _impl_v1 = _same("QLinearLeakyRelu", ("alpha",))


@onnx_op("QLinearGlobalAveragePool", domain=MS)
class QLinearGlobalAveragePool(OnnxOp):
    _impl_v1 = _same("QLinearGlobalAveragePool", ("channels_last",))


@onnx_op("QLinearConcat", domain=MS)
class QLinearConcat(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        if ctx.attr("axis") is None:
            raise AdapterError("attribute axis is required")
        return ctx.emit("QLinearConcat", _all_inputs(ctx), {"axis": int(ctx.attr("axis"))})


@onnx_op("QLinearSoftmax", domain=MS)
class QLinearSoftmax(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        if ctx.attr("opset") is None:   # onnxruntime refuses the node too: it decides the axis and the row
            raise AdapterError("attribute opset (the model opset the quantizer recorded) is required")
        attrs = {"opset": int(ctx.attr("opset"))}
        if ctx.attr("axis") is not None:
            attrs["axis"] = int(ctx.attr("axis"))
        return ctx.emit("QLinearSoftmax", _all_inputs(ctx), attrs)


@onnx_op("QLinearAveragePool", domain=MS)
class QLinearAveragePool(OnnxOp):
    """auto_pad resolved into explicit pads here (on the channels-first view of a channels_last input)."""
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        x = ctx.input(0)
        kernel = ctx.attr("kernel_shape")
        if kernel is None:
            raise AdapterError("kernel_shape is required")
        kernel = [int(k) for k in kernel]
        last = int(ctx.attr("channels_last", 0))
        shape = list(x.desc.shape)
        if len(shape) != len(kernel) + 2:
            raise AdapterError(f"a {len(kernel)}-D kernel_shape needs a {len(kernel) + 2}-D input, got {shape}")
        first = [shape[0], shape[-1]] + shape[1:-1] if last else shape
        check_window(ctx, len(kernel), kernel, True)
        attrs = {"kernel_shape": kernel, "strides": [int(s) for s in ctx.attr("strides", [1] * len(kernel))],
                 "pads": onnx_pads(ctx, first, kernel), "ceil_mode": int(ctx.attr("ceil_mode", 0)),
                 "count_include_pad": int(ctx.attr("count_include_pad", 0)), "channels_last": last}
        return ctx.emit("QLinearAveragePool", _all_inputs(ctx), attrs)


@onnx_op("QGemm", domain=MS)
class QGemm(OnnxOp):
    """y = alpha · (A - a_zp)(B - b_zp) + C in int32 (C: the int32 bias at scale a_scale · b_scale), then
    requantized with alpha · a_scale · b_scale / y_scale (b's per output column), or scaled to float32 when the
    node has no y_scale — onnxruntime's QGemm."""
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        a, a_scale, a_zp, b, b_scale, b_zp = (ctx.input(i) for i in range(6))
        c, y_scale, y_zp = ctx.input(6), ctx.input(7), ctx.input(8)
        if len(a.desc.shape) != 2 or len(b.desc.shape) != 2:
            raise AdapterError(f"QGemm takes 2-D A and B, got {list(a.desc.shape)} and {list(b.desc.shape)}")
        x, off = _offset_x(ctx, a, a_zp, 0 if ctx.attr("transA", 0) else -2)
        attrs = {"transpose_x1": bool(ctx.attr("transA", 0)), "transpose_x2": bool(ctx.attr("transB", 0)),
                 "offset_x": off}
        if x.desc.dtype == "int32" and b.desc.dtype != "int32":   # a zero point known only at run time
            b = ctx.emit("Cast", [b], {"dst_type": "int32"}, suffix="b32")[0]
        acc = ctx.emit("MatMulV2", [x, b, None, b_zp], attrs, suffix="matmul")[0]
        if c is not None:
            if c.desc.dtype != "int32":
                raise AdapterError(f"input 6 (C) must be int32, got {c.desc.dtype}")
            acc = ctx.emit("Add", [acc, c], suffix="bias")[0]
        alpha = float(ctx.attr("alpha", 1.0))
        if alpha != 1.0:   # onnxruntime's order: alpha · a_scale, then · b_scale
            a_scale = ctx.emit("Mul", [ctx.make_const("alpha", np.array(alpha, np.float32)), a_scale],
                               suffix="alpha_scale")[0]
        scale = ctx.emit("Mul", [a_scale, b_scale], suffix="scale")[0]
        if y_scale is None:
            if y_zp is not None:
                raise AdapterError("y_zero_point needs y_scale")
            f = ctx.emit("Cast", [acc], {"dst_type": "float32"}, suffix="acc_f32")[0]
            return ctx.emit("Mul", [f, scale])
        req = ctx.emit("RealDiv", [scale, y_scale], suffix="req_scale")[0]
        dst = y_zp.desc.dtype if y_zp is not None else a.desc.dtype
        return ctx.emit("AscendRequant", [acc, req, y_zp], {"axis": -1, "dst_type": dst})
