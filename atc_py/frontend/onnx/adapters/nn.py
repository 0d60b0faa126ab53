"""NN adapters: Conv, Gemm, MatMul, pooling, BatchNormalization, LayerNormalization."""
from __future__ import annotations

import numpy as np

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op


def _spatial(ctx: NodeCtx, x_shape, kernel) -> tuple[list[int], list[int], list[int]]:
    """(strides, dilations, GE pads [t, b, l, r]) for a 2-D window op, resolving auto_pad."""
    if len(kernel) != 2:
        raise AdapterError(f"only 2-D windows are supported, kernel_shape={list(kernel)}")
    strides = [int(s) for s in ctx.attr("strides", [1, 1])]
    dil = [int(d) for d in ctx.attr("dilations", [1, 1])]
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for i in range(2):
            size = x_shape[2 + i]
            out = -(-size // strides[i])
            total = max(0, (out - 1) * strides[i] + dil[i] * (kernel[i] - 1) + 1 - size)
            small, big = total // 2, total - total // 2
            pads.append((small, big) if auto == "SAME_UPPER" else (big, small))
        ge_pads = [pads[0][0], pads[0][1], pads[1][0], pads[1][1]]
    elif auto == "VALID":
        ge_pads = [0, 0, 0, 0]
    elif auto == "NOTSET":
        p = [int(v) for v in ctx.attr("pads", [0, 0, 0, 0])]
        ge_pads = [p[0], p[2], p[1], p[3]]
    else:
        raise AdapterError(f"auto_pad '{auto}' is not valid")
    return strides, dil, ge_pads


@onnx_op("Conv")
class Conv(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        x, w, b = ctx.input(0), ctx.input(1), ctx.input(2)
        kernel = ctx.attr("kernel_shape") or list(w.desc.shape[2:])
        if len(x.desc.shape) != 4:
            raise AdapterError(f"only 2-D convolution (4-D input) is supported, input is {list(x.desc.shape)}")
        strides, dil, pads = _spatial(ctx, x.desc.shape, kernel)
        attrs = {"strides": [1, 1] + strides, "pads": pads, "dilations": [1, 1] + dil,
                 "groups": int(ctx.attr("group", 1)), "data_format": "NCHW"}
        return ctx.emit("Conv2D", [x, w, b], attrs)


def _pool(ctx: NodeCtx, ge_type: str, extra: dict):
    x = ctx.input(0)
    if len(x.desc.shape) != 4:
        raise AdapterError(f"only 2-D pooling (4-D input) is supported, input is {list(x.desc.shape)}")
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        raise AdapterError("the Indices output of MaxPool is not supported")
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    strides, dil, pads = _spatial(ctx, x.desc.shape, kernel)
    attrs = {"ksize": [1, 1] + kernel, "strides": [1, 1] + strides, "pads": pads, "dilations": [1, 1] + dil,
             "ceil_mode": bool(ctx.attr("ceil_mode", 0)), "data_format": "NCHW", **extra}
    return ctx.emit(ge_type, [x], attrs)


@onnx_op("MaxPool")
class MaxPool(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        if int(ctx.attr("storage_order", 0)) != 0:
            raise AdapterError("storage_order=1 is not supported")
        return _pool(ctx, "MaxPoolV3", {})


@onnx_op("AveragePool")
class AveragePool(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        if ctx.attr("dilations") not in (None, [1, 1]):
            raise AdapterError("dilated AveragePool is not supported")
        return _pool(ctx, "AvgPoolV2", {"exclusive": not bool(ctx.attr("count_include_pad", 0))})


@onnx_op("GlobalAveragePool")
class GlobalAveragePool(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("GlobalAveragePool", [ctx.input(0)])


@onnx_op("BatchNormalization")
class BatchNormalization(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        if ctx.attr("is_test", 1) == 0 or int(ctx.attr("training_mode", 0)) != 0:
            raise AdapterError("training-mode BatchNormalization is not supported (inference only)")
        if any(o for o in ctx.node.output[1:]):
            raise AdapterError("BatchNormalization running-statistics outputs are not supported")
        ins = [ctx.input(i) for i in range(5)]
        return ctx.emit("BNInfer", ins, {"epsilon": float(ctx.attr("epsilon", 1e-5))})

    _impl_v14 = _impl_v1


@onnx_op("LayerNormalization")
class LayerNormalization(OnnxOp):
    @classmethod
    def _impl_v17(cls, ctx: NodeCtx):
        if any(o for o in ctx.node.output[1:]):
            raise AdapterError("the Mean/InvStdDev outputs of LayerNormalization are not supported")
        axis = int(ctx.attr("axis", -1))
        attrs = {"begin_norm_axis": axis, "begin_params_axis": axis, "epsilon": float(ctx.attr("epsilon", 1e-5))}
        return ctx.emit("LayerNorm", [ctx.input(0), ctx.input(1), ctx.input(2)], attrs, n_out=3)[:1]


@onnx_op("Gemm")
class Gemm(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        a, b, c = ctx.input(0), ctx.input(1), ctx.input(2)
        alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
        attrs = {"transpose_x1": bool(ctx.attr("transA", 0)), "transpose_x2": bool(ctx.attr("transB", 0))}
        dt = a.desc.dtype
        if alpha != 1.0:
            a = ctx.emit("Mul", [a, ctx.make_const("alpha", np.array(alpha, dtype=dt))], suffix="alpha")[0]
        bias = None
        if c is not None:
            n = b.desc.shape[0] if attrs["transpose_x2"] else b.desc.shape[1]
            if c.is_const and c.data.size == n and c.data.ndim <= 2 and c.desc.shape[-1:] == (n,):
                bias = ctx.make_const("bias", (c.data.reshape(n) * beta).astype(dt))
                c = None
            elif beta != 1.0:
                c = ctx.emit("Mul", [c, ctx.make_const("beta", np.array(beta, dtype=dt))], suffix="beta")[0]
        if c is None:
            return ctx.emit("MatMulV2", [a, b, bias], attrs)
        y = ctx.emit("MatMulV2", [a, b, None], attrs, suffix="matmul")[0]
        return ctx.emit("Add", [y, c])


@onnx_op("MatMul")
class MatMul(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        a, b = ctx.input(0), ctx.input(1)
        ra, rb = len(a.desc.shape), len(b.desc.shape)
        if ra == 1 or rb == 1:
            # numpy semantics: promote the 1-D side, multiply, then drop the promoted dim
            a2 = a if ra > 1 else ctx.emit("Reshape", [a, ctx.make_const("a2d", np.array([1, -1], np.int64))],
                                           suffix="a2d")[0]
            b2 = b if rb > 1 else ctx.emit("Reshape", [b, ctx.make_const("b2d", np.array([-1, 1], np.int64))],
                                           suffix="b2d")[0]
            op = "MatMulV2" if len(a2.desc.shape) == 2 and len(b2.desc.shape) == 2 else "BatchMatMulV2"
            y = ctx.emit(op, [a2, b2, None], suffix="matmul")[0]
            shape = list(y.desc.shape)
            if ra == 1:
                del shape[-2]
            if rb == 1:
                del shape[-1]
            return ctx.emit("Reshape", [y, ctx.make_const("shape", np.array(shape, np.int64))])
        op = "MatMulV2" if ra == 2 and rb == 2 else "BatchMatMulV2"
        return ctx.emit(op, [a, b, None])
