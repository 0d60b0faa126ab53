"""NN adapters: Conv, ConvTranspose, pooling, Gemm, MatMul, Upsample, Resize, Dropout (the identity at inference)."""
from __future__ import annotations

import numpy as np

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op

UNKNOWN_RANK = (-2,)   # a tensor whose rank the graph decides at run time

POOLS = ("MaxPool", "AveragePool", "LpPool")


def check_window(ctx: NodeCtx, n: int, kernel, pool: bool = False) -> None:
    """The ONNX window attributes of an n-D op: kernel_shape, strides, dilations of n values >= 1, pads of 2n
    values >= 0 — and, for pooling, each pad smaller than its kernel extent (onnxruntime: "Pad should be
    smaller than kernel")."""
    def ints(key: str, length: int, default: list[int]) -> list[int]:
        v = ctx.attr(key)
        if v is None:
            return default
        v = [int(x) for x in v]
        if len(v) != length:
            raise AdapterError(f"{key} {v} has {len(v)} values; a {n}-D window needs {length}")
        return v
    k = [int(x) for x in kernel]
    if len(k) != n or min(k, default=0) < 1:
        raise AdapterError(f"kernel_shape {k} must be {n} values >= 1")
    for key in ("strides", "dilations"):
        v = ints(key, n, [1] * n)
        if min(v) < 1:
            raise AdapterError(f"{key} {v} must be >= 1")
    if ctx.attr("auto_pad", "NOTSET") in ("NOTSET", b"NOTSET"):
        p = ints("pads", 2 * n, [0] * 2 * n)
        if min(p) < 0:
            raise AdapterError(f"pads {p} must be >= 0")
        if pool and any(p[i] >= k[i] or p[i + n] >= k[i] for i in range(n)):
            raise AdapterError(f"pads {p} must be smaller than the kernel {k}")


def _spatial(ctx: NodeCtx, x_shape, kernel) -> tuple[list[int], list[int], list[int]]:
    """(strides, dilations, GE pads [t, b, l, r]) for a 2-D window op, resolving auto_pad."""
    if len(kernel) != 2:
        raise AdapterError(f"a 2-D window needs 2 kernel dims, kernel_shape={list(kernel)}")
    check_window(ctx, 2, kernel, ctx.node.op_type in POOLS)
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


def to_2d(ctx: NodeCtx, x):
    """A 1-D op's N,C,L input as N,C,1,L (the 2-D kernel runs it with H = 1)."""
    n, c, length = x.desc.shape
    return ctx.emit("Reshape", [x, ctx.make_const("as2d", np.array([n, c, 1, length], np.int64))], suffix="as2d")[0]


def from_2d(ctx: NodeCtx, y, suffix: str = ""):
    n, c, _, length = y.desc.shape
    return ctx.emit("Reshape", [y, ctx.make_const("as1d", np.array([n, c, length], np.int64))], suffix=suffix)


def as_2d_attrs(ctx: NodeCtx) -> None:
    """Rewrite a 1-D node's window attributes into 2-D ones (H: kernel 1, stride 1, no padding)."""
    for key, unit in (("kernel_shape", 1), ("strides", 1), ("dilations", 1)):
        if ctx.attr(key) is not None:
            ctx.attrs[key] = [unit] + [int(v) for v in ctx.attr(key)]
    if ctx.attr("pads") is not None:
        p = [int(v) for v in ctx.attr("pads")]
        ctx.attrs["pads"] = [0, p[0], 0, p[1]]


def _spatial3(ctx: NodeCtx, x_shape, kernel) -> tuple[list[int], list[int], list[int]]:
    """(strides, dilations, GE pads [front, back, top, bottom, left, right]) of a 3-D window op."""
    check_window(ctx, 3, kernel, ctx.node.op_type in POOLS)
    strides = [int(s) for s in ctx.attr("strides", [1, 1, 1])]
    dil = [int(d) for d in ctx.attr("dilations", [1, 1, 1])]
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto not in ("NOTSET", "VALID"):
        raise AdapterError(f"auto_pad '{auto}' is not supported for 3-D windows")
    p = [int(v) for v in ctx.attr("pads", [0] * 6)] if auto == "NOTSET" else [0] * 6
    return strides, dil, [p[0], p[3], p[1], p[4], p[2], p[5]]


@onnx_op("Conv")
class Conv(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        x, w, b = ctx.input(0), ctx.input(1), ctx.input(2)
        rank = len(x.desc.shape)
        if rank == 3:
            check_window(ctx, 1, ctx.attr("kernel_shape") or w.desc.shape[2:])
            as_2d_attrs(ctx)
            w2 = ctx.emit("Reshape", [w, ctx.make_const("w2d", np.array([w.desc.shape[0], w.desc.shape[1], 1,
                                                                          w.desc.shape[2]], np.int64))],
                          suffix="w2d")[0]
            y = cls._conv2d(ctx, to_2d(ctx, x), w2, b, suffix="conv2d")
            return from_2d(ctx, y)
        if rank == 5:
            kernel = ctx.attr("kernel_shape") or list(w.desc.shape[2:])
            strides, dil, pads = _spatial3(ctx, x.desc.shape, kernel)
            return ctx.emit("Conv3D", [x, w, b], {"strides": [1, 1] + strides, "pads": pads,
                                                  "dilations": [1, 1] + dil, "groups": int(ctx.attr("group", 1)),
                                                  "data_format": "NCDHW"})
        if rank != 4:
            raise AdapterError(f"Conv input must be 3-D, 4-D or 5-D, got {list(x.desc.shape)}")
        return [cls._conv2d(ctx, x, w, b)]

    @staticmethod
    def _conv2d(ctx: NodeCtx, x, w, b, suffix: str = ""):
        kernel = ctx.attr("kernel_shape") or list(w.desc.shape[2:])
        strides, dil, pads = _spatial(ctx, x.desc.shape, kernel)
        attrs = {"strides": [1, 1] + strides, "pads": pads, "dilations": [1, 1] + dil,
                 "groups": int(ctx.attr("group", 1)), "data_format": "NCHW"}
        return ctx.emit("Conv2D", [x, w, b], attrs, suffix=suffix)[0]


@onnx_op("ConvTranspose")
class ConvTranspose(OnnxOp):
    """Conv2DTransposeD (1-D as 2-D with H = 1) or Conv3DTransposeD; output_shape and SAME auto_pad become pads
    (the begin pad takes the larger half unless SAME_UPPER, as onnxruntime and ONNX's reference do; negative
    when the requested output is larger than the full result)."""
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        x, w, b = ctx.input(0), ctx.input(1), ctx.input(2)
        rank = len(x.desc.shape)
        if rank not in (3, 4, 5):
            raise AdapterError(f"ConvTranspose takes 3-D, 4-D or 5-D input, got {list(x.desc.shape)}")
        n = rank - 2
        k = [int(v) for v in (ctx.attr("kernel_shape") or w.desc.shape[2:])]
        check_window(ctx, n, k)
        s = [int(v) for v in ctx.attr("strides", [1] * n)]
        d = [int(v) for v in ctx.attr("dilations", [1] * n)]
        op = [int(v) for v in ctx.attr("output_padding", [0] * n)]
        out_shape = ctx.attr("output_shape")
        auto = ctx.attr("auto_pad", "NOTSET")
        if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
            ins = x.desc.shape[2:]
            target = [int(v) for v in out_shape][-n:] if out_shape is not None else [i * st for i, st in zip(ins, s)]
            lo, hi = [], []
            for i in range(n):
                total = s[i] * (ins[i] - 1) + op[i] + (k[i] - 1) * d[i] + 1 - target[i]
                first = total // 2 if auto == "SAME_UPPER" else total - total // 2
                lo.append(first)
                hi.append(total - first)
        else:
            p = [int(v) for v in ctx.attr("pads", [0] * 2 * n)]
            lo, hi = p[:n], p[n:]
        ge_pads = [v for pair in zip(lo, hi) for v in pair]
        attrs = {"strides": [1, 1] + s, "pads": ge_pads, "dilations": [1, 1] + d, "groups": int(ctx.attr("group", 1)),
                 "output_padding": [0, 0] + op}
        if n == 3:
            return ctx.emit("Conv3DTransposeD", [x, w, b], {**attrs, "data_format": "NCDHW"})
        if n == 2:
            return ctx.emit("Conv2DTransposeD", [x, w, b], {**attrs, "data_format": "NCHW"})
        two = {"strides": [1, 1, 1] + s, "pads": [0, 0] + ge_pads, "dilations": [1, 1, 1] + d,
               "groups": attrs["groups"], "output_padding": [0, 0, 0] + op, "data_format": "NCHW"}
        cin, cout_g, kk = w.desc.shape
        w2 = ctx.emit("Reshape", [w, ctx.make_const("w2d", np.array([cin, cout_g, 1, kk], np.int64))], suffix="w2d")[0]
        y = ctx.emit("Conv2DTransposeD", [to_2d(ctx, x), w2, b], two, suffix="deconv2d")[0]
        return from_2d(ctx, y)


def onnx_pads(ctx: NodeCtx, x_shape, kernel) -> list[int]:
    """ONNX pads [begins..., ends...] of an N-D window op with auto_pad resolved."""
    n = len(kernel)
    check_window(ctx, n, kernel, ctx.node.op_type in POOLS)
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        strides = [int(v) for v in ctx.attr("strides", [1] * n)]
        dil = [int(v) for v in ctx.attr("dilations", [1] * n)]
        lo, hi = [], []
        for i in range(n):
            size = x_shape[2 + i]
            total = max(0, (-(-size // strides[i]) - 1) * strides[i] + dil[i] * (kernel[i] - 1) + 1 - size)
            small, big = total // 2, total - total // 2
            lo.append(small if auto == "SAME_UPPER" else big)
            hi.append(big if auto == "SAME_UPPER" else small)
        return lo + hi
    if auto == "VALID":
        return [0] * 2 * n
    return [int(v) for v in ctx.attr("pads", [0] * 2 * n)]


def _pool(ctx: NodeCtx, ge_type: str, extra: dict, x=None, suffix: str = ""):
    """The pooling node(s) of ctx's window attributes over x (default: input 0); `suffix` names them when the
    adapter emits more after them."""
    x = x if x is not None else ctx.input(0)
    if ctx.attr("kernel_shape") is None:
        raise AdapterError("kernel_shape is required")
    if len(ctx.node.output) > 1 and ctx.node.output[1]:   # MaxPool's Indices: any rank
        kernel = [int(k) for k in ctx.attr("kernel_shape")]
        attrs = {"ksize": kernel, "pads": onnx_pads(ctx, x.desc.shape, kernel),
                 "strides": [int(v) for v in ctx.attr("strides", [1] * len(kernel))],
                 "dilations": [int(v) for v in ctx.attr("dilations", [1] * len(kernel))],
                 "ceil_mode": bool(ctx.attr("ceil_mode", 0)), "storage_order": int(ctx.attr("storage_order", 0))}
        return ctx.emit("MaxPoolWithArgmaxV2", [x], attrs, n_out=2)
    rank = len(x.desc.shape)
    if rank == 3:
        check_window(ctx, 1, ctx.attr("kernel_shape"), True)
        as_2d_attrs(ctx)
        y = _pool2d(ctx, to_2d(ctx, x), ge_type, extra, suffix="pool2d")
        return from_2d(ctx, y, suffix)
    if rank == 5:
        kernel = [int(k) for k in ctx.attr("kernel_shape")]
        strides, dil, pads = _spatial3(ctx, x.desc.shape, kernel)
        ge3 = {"MaxPoolV3": "MaxPool3D", "AvgPoolV2": "AvgPool3D"}[ge_type]
        attrs = {"ksize": [1, 1] + kernel, "strides": [1, 1] + strides, "pads": pads, "dilations": [1, 1] + dil,
                 "ceil_mode": bool(ctx.attr("ceil_mode", 0)), "data_format": "NCDHW"}
        if ge3 == "AvgPool3D":
            attrs["count_include_pad"] = not extra["exclusive"]
        return ctx.emit(ge3, [x], attrs, suffix=suffix)
    if rank != 4:
        raise AdapterError(f"pooling input must be 3-D, 4-D or 5-D, got {list(x.desc.shape)}")
    return [_pool2d(ctx, x, ge_type, extra, suffix=suffix)]


def _pool2d(ctx: NodeCtx, x, ge_type: str, extra: dict, suffix: str = ""):
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    strides, dil, pads = _spatial(ctx, x.desc.shape, kernel)
    attrs = {"ksize": [1, 1] + kernel, "strides": [1, 1] + strides, "pads": pads, "dilations": [1, 1] + dil,
             "ceil_mode": bool(ctx.attr("ceil_mode", 0)), "data_format": "NCHW", **extra}
    return ctx.emit(ge_type, [x], attrs, suffix=suffix)[0]


@onnx_op("MaxPool")
class MaxPool(OnnxOp):
    """MaxPoolV3 / MaxPool3D; with the Indices output MaxPoolWithArgmaxV2 (storage_order orders the indices)."""
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return _pool(ctx, "MaxPoolV3", {})


@onnx_op("AveragePool")
class AveragePool(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return _pool(ctx, "AvgPoolV2", {"exclusive": not bool(ctx.attr("count_include_pad", 0))})


@onnx_op("LpPool")
class LpPool(OnnxOp):
    """(sum over the window of |x|^p)^(1/p), as CANN's parser expands it: Abs, Pow, an AveragePool counting the
    padding, Mul by the window size, Pow 1/p."""
    @classmethod
    def _impl_v2(cls, ctx: NodeCtx):
        x = ctx.input(0)
        p = float(ctx.attr("p", 2))
        dt = x.desc.dtype
        powered = _lp_power(ctx, x, p)
        avg = _pool(ctx, "AvgPoolV2", {"exclusive": False}, x=powered, suffix="avg")[0]
        cells = float(np.prod([int(k) for k in ctx.attr("kernel_shape")]))
        total = ctx.emit("Mul", [avg, ctx.make_const("cells", np.array(cells, dt))], suffix="window_sum")[0]
        return ctx.emit("Pow", [total, ctx.make_const("inv_p", np.array(1.0 / p, dt))])


def _lp_power(ctx: NodeCtx, x, p: float):
    a = ctx.emit("Abs", [x], suffix="abs")[0]
    return ctx.emit("Pow", [a, ctx.make_const("p", np.array(p, x.desc.dtype))], suffix="pow")[0]


@onnx_op("GlobalMaxPool")
class GlobalMaxPool(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        x = ctx.input(0)
        axes = list(range(2, len(x.desc.shape)))
        return ctx.emit("ReduceMaxD", [x], {"axes": axes, "keep_dims": True})


@onnx_op("GlobalLpPool")
class GlobalLpPool(OnnxOp):
    """(sum over the spatial dims of |x|^p)^(1/p): Abs, Pow, ReduceSum, Pow 1/p."""
    @classmethod
    def _impl_v2(cls, ctx: NodeCtx):
        x = ctx.input(0)
        p = float(ctx.attr("p", 2))
        total = ctx.emit("ReduceSumD", [_lp_power(ctx, x, p)], {"axes": list(range(2, len(x.desc.shape))),
                                                                "keep_dims": True}, suffix="sum")[0]
        return ctx.emit("Pow", [total, ctx.make_const("inv_p", np.array(1.0 / p, x.desc.dtype))])


@onnx_op("GlobalAveragePool")
class GlobalAveragePool(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("GlobalAveragePool", [ctx.input(0)])


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
        if UNKNOWN_RANK in (tuple(a.desc.shape), tuple(b.desc.shape)):   # rank known at run time only
            return ctx.emit("BatchMatMulV2", [a, b, None])
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


def _floats(v) -> list[float] | None:
    return None if v is None or np.asarray(v).size == 0 else [float(s) for s in np.asarray(v).reshape(-1)]


@onnx_op("Upsample")
class Upsample(OnnxOp):
    @classmethod
    def _impl_v7(cls, ctx: NodeCtx):
        return cls._emit(ctx, _floats(ctx.attr("scales")))

    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        if not ctx.known(1):   # scales from the graph: the tensor form, in the dynamic partition
            return ctx.emit("Resize", [ctx.input(0), None, ctx.input(1), None], cls._attrs(ctx))
        return cls._emit(ctx, _floats(ctx.const(1)))

    @staticmethod
    def _attrs(ctx: NodeCtx) -> dict:
        mode = ctx.attr("mode", "nearest")
        return {"mode": "linear" if mode in ("linear", "bilinear") else mode,
                "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}

    @classmethod
    def _emit(cls, ctx: NodeCtx, scales):
        return ctx.emit("ResizeD", [ctx.input(0)], {"scales": scales, **cls._attrs(ctx)})


RESIZE_ATTRS = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor",
                "cubic_coeff_a": -0.75, "exclude_outside": 0, "extrapolation_value": 0.0, "antialias": 0,
                "keep_aspect_ratio_policy": "stretch"}


@onnx_op("Resize")
class Resize(OnnxOp):
    """Known roi / scales / sizes become ResizeD attributes; any of them computed from input data keeps the
    tensor form `Resize`, whose output shape the host executor infers with the values."""

    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        attrs = {"mode": ctx.attr("mode", "nearest"), "coordinate_transformation_mode": "asymmetric",
                 "nearest_mode": "floor"}
        if not ctx.known(1):
            return ctx.emit("Resize", [ctx.input(0), None, ctx.input(1), None], attrs)
        return ctx.emit("ResizeD", [ctx.input(0)], {**attrs, "scales": _floats(ctx.const(1))})

    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        attrs = {k: ctx.attr(k, d) for k, d in RESIZE_ATTRS.items()}
        if ctx.attr("axes") is not None:
            attrs["axes"] = [int(a) for a in ctx.attr("axes")]
        # roi only matters to tf_crop_and_resize
        roi = ctx.input(1) if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize" else None
        scales, sizes = ctx.input(2), ctx.input(3)
        if scales is not None and scales.is_const and scales.data.size == 0:
            scales = None
        if sizes is not None and sizes.is_const and sizes.data.size == 0:
            sizes = None
        params = [roi, scales, sizes]
        if any(v is not None and not v.is_const for v in params):
            return ctx.emit("Resize", [ctx.input(0)] + params, attrs)
        if roi is not None:
            attrs["roi"] = _floats(roi.data)
        if scales is not None:
            attrs["scales"] = _floats(scales.data)
        if sizes is not None:
            attrs["sizes"] = [int(s) for s in sizes.data.reshape(-1)]
        return ctx.emit("ResizeD", [ctx.input(0)], attrs)


@onnx_op("Dropout")
class Dropout(OnnxOp):
    """An offline model infers: Dropout is the identity (as GE removes it from an inference graph), and the mask
    it outputs is all ones (bool from opset 10, the data's type before). A training_mode that is a constant
    true with a non-zero ratio would drop random elements: refused, not silently inferred."""
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        opset = ctx.conv.opsets.get("", 0)
        training = ctx.const(2) if opset >= 12 else None
        if training is not None and training.size and bool(training.reshape(-1)[0]):
            ratio = ctx.const(1) if ctx.input(1) is not None else np.array(0.5)
            if ratio is None or float(np.asarray(ratio).reshape(-1)[0]):
                raise AdapterError("a training-mode Dropout with a non-zero ratio drops random elements; only "
                                   "inference Dropout (or ratio 0) is supported")
        data = ctx.emit("Identity", [ctx.input(0)])
        if len(ctx.node.output) < 2 or not ctx.node.output[1]:
            return data
        x = ctx.input(0)
        dtype = "bool" if opset >= 10 else x.desc.dtype
        if x.desc.known:
            dims = ctx.make_const("mask_shape", np.array(x.desc.shape, np.int64))
        else:
            dims = ctx.emit("Shape", [x], suffix="mask_shape")[0]
        mask = ctx.emit("Fill", [dims], {"value": True if dtype == "bool" else 1.0, "dtype": dtype}, suffix="mask")
        return data + mask
