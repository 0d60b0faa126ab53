"""NN adapters: Conv2D, DepthwiseConv2dNative, BiasAdd, FusedBatchNorm(V2/V3), MaxPool, AvgPool, MatMul,
BatchMatMul(V2). Our window ops are NCHW: an NHWC op is wrapped in TransposeD pairs (the transpose-cancel
pass removes the back-to-back inverse pairs between consecutive window ops); HWIO filters become OIHW
constants (folded at compile time)."""
from __future__ import annotations

import numpy as np

from . import TfAdapterError, tf_op

TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def nhwc(ctx) -> bool:
    fmt = ctx.attr("data_format", "NHWC")
    if fmt not in ("NHWC", "NCHW"):
        raise TfAdapterError(f"data_format {fmt} is not supported")
    return fmt == "NHWC"


def to_nchw(ctx, x):
    return ctx.emit("TransposeD", [x], {"perm": TO_NCHW}, suffix="to_nchw")[0]


def to_nhwc(ctx, y):
    return ctx.emit("TransposeD", [y], {"perm": TO_NHWC})


def hw(v, is_nhwc: bool, what: str = "strides") -> list[int]:
    """The H and W entries of a 4-value window attribute (strides, dilations, ksize), each >= 1."""
    v = [int(a) for a in (v or [])]
    if len(v) != 4 or min(v) < 1:
        raise TfAdapterError(f"{what} {v} must be 4 values >= 1")
    return v[1:3] if is_nhwc else v[2:4]


def rank4(x, what: str = "input") -> None:
    if len(x.desc.shape) != 4:
        raise TfAdapterError(f"the {what} must be 4-D, got {list(x.desc.shape)}")


def pads_for(ctx, in_hw, k_hw, strides, dil, is_nhwc) -> list[int]:
    """GE pads [top, bottom, left, right] from TF padding SAME / VALID / EXPLICIT."""
    padding = ctx.attr("padding", "VALID")
    if padding == "VALID":
        return [0, 0, 0, 0]
    if padding == "SAME":   # TF puts the odd cell at the end
        out = []
        for size, k, s, d in zip(in_hw, k_hw, strides, dil):
            total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
            out += [total // 2, total - total // 2]
        return out
    if padding == "EXPLICIT":
        e = [int(v) for v in ctx.attr("explicit_paddings", [])]
        if len(e) != 8 or min(e) < 0:
            raise TfAdapterError(f"explicit_paddings {e} must be 8 values >= 0")
        return e[2:6] if is_nhwc else e[4:8]
    raise TfAdapterError(f"padding {padding} is not supported")


def oihw_filter(ctx, w, depthwise: bool):
    """The HWIO filter (or depthwise [kh, kw, cin, multiplier]) as GE's OIHW: transposed now when it is a
    constant, else a TransposeD (+ Reshape) node — a filter computed from constants (Conv1D's ExpandDims of
    its kernel, bigger than what import folds) is folded by the fold pass, one computed from data runs."""
    kh, kw, cin, mult = w.desc.shape
    if w.is_const:
        a = np.asarray(w.data).transpose(2, 3, 0, 1).reshape(cin * mult, 1, kh, kw) if depthwise \
            else np.asarray(w.data).transpose(3, 2, 0, 1)
        return ctx.make_const("filter_oihw", np.ascontiguousarray(a))
    t = ctx.emit("TransposeD", [w], {"perm": [2, 3, 0, 1] if depthwise else [3, 2, 0, 1]}, suffix="filter_oihw")[0]
    if depthwise:
        t = ctx.emit("Reshape", [t, ctx.make_const("filter_shape", np.array([cin * mult, 1, kh, kw], np.int64))],
                     suffix="filter_dw")[0]
    return t


def _conv(ctx, depthwise: bool):
    is_nhwc = nhwc(ctx)
    x, w = ctx.input(0), ctx.input(1)
    rank4(x)
    if len(w.desc.shape) != 4 or min(w.desc.shape) < 1:
        raise TfAdapterError(f"the filter must be 4-D HWIO with non-zero dims, got {list(w.desc.shape)}")
    kh, kw, cin, mult = w.desc.shape
    c = x.desc.shape[3] if is_nhwc else x.desc.shape[1]
    groups = cin if depthwise else c // cin     # depthwise: [cin*mult, 1, kh, kw], groups = cin
    xc = to_nchw(ctx, x) if is_nhwc else x
    strides = hw(ctx.attr("strides", [1, 1, 1, 1]), is_nhwc)
    dil = hw(ctx.attr("dilations", [1, 1, 1, 1]), is_nhwc, "dilations")
    pads = pads_for(ctx, xc.desc.shape[2:], [kh, kw], strides, dil, is_nhwc)
    y = ctx.emit("Conv2D", [xc, oihw_filter(ctx, w, depthwise), None],
                 {"strides": [1, 1] + strides, "pads": pads, "dilations": [1, 1] + dil, "groups": groups,
                  "data_format": "NCHW"}, suffix="nchw" if is_nhwc else "")[0]
    return to_nhwc(ctx, y) if is_nhwc else [y]


@tf_op("Conv2D")
def conv2d(ctx):
    return _conv(ctx, False)


@tf_op("DepthwiseConv2dNative")
def depthwise(ctx):
    return _conv(ctx, True)


def _pool(ctx, ge_type: str, extra: dict):
    is_nhwc = nhwc(ctx)
    x = ctx.input(0)
    rank4(x)
    xc = to_nchw(ctx, x) if is_nhwc else x
    k, s = hw(ctx.attr("ksize"), is_nhwc, "ksize"), hw(ctx.attr("strides"), is_nhwc)
    pads = pads_for(ctx, xc.desc.shape[2:], k, s, [1, 1], is_nhwc)
    y = ctx.emit(ge_type, [xc], {"ksize": [1, 1] + k, "strides": [1, 1] + s, "pads": pads, "dilations": [1, 1, 1, 1],
                                 "ceil_mode": False, "data_format": "NCHW", **extra},
                 suffix="nchw" if is_nhwc else "")[0]
    return to_nhwc(ctx, y) if is_nhwc else [y]


@tf_op("MaxPool")
def max_pool(ctx):
    return _pool(ctx, "MaxPoolV3", {})


@tf_op("AvgPool")
def avg_pool(ctx):
    return _pool(ctx, "AvgPoolV2", {"exclusive": True})   # TF averages over the valid cells only


@tf_op("BiasAdd", "BiasAddV1")
def bias_add(ctx):
    x, b = ctx.input(0), ctx.input(1)
    if ctx.attr("data_format", "NHWC") == "NCHW" and len(x.desc.shape) > 2:
        shape = [b.desc.shape[0]] + [1] * (len(x.desc.shape) - 2)
        b = ctx.emit("Reshape", [b, ctx.make_const("bshape", np.array(shape, np.int64))], suffix="bias")[0]
    return ctx.emit("Add", [x, b])


@tf_op("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def fused_batch_norm(ctx):
    if ctx.attr("is_training", True):
        raise TfAdapterError("training-mode FusedBatchNorm is not supported (freeze the graph for inference)")
    is_nhwc = nhwc(ctx)
    x = ctx.input(0)
    xc = to_nchw(ctx, x) if is_nhwc else x
    ins = [xc] + [ctx.input(i) for i in range(1, 5)]
    y = ctx.emit("BNInfer", ins, {"epsilon": float(ctx.attr("epsilon", 1e-4))}, suffix="nchw" if is_nhwc else "")[0]
    out = to_nhwc(ctx, y) if is_nhwc else [y]
    # inference: batch_mean / batch_variance / reserve spaces are the running statistics
    mean, var = ctx.input(3), ctx.input(4)
    return out + [mean, var, mean, var, var]


@tf_op("MatMul")
def matmul(ctx):
    return ctx.emit("MatMulV2", [ctx.input(0), ctx.input(1), None],
                    {"transpose_x1": bool(ctx.attr("transpose_a", False)),
                     "transpose_x2": bool(ctx.attr("transpose_b", False))})


@tf_op("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def batch_matmul(ctx):
    return ctx.emit("BatchMatMulV2", [ctx.input(0), ctx.input(1), None],
                    {"adj_x1": bool(ctx.attr("adj_x", False)), "adj_x2": bool(ctx.attr("adj_y", False))})
