"""Convolution-family adapters beyond Conv2D: Conv2DBackpropInput (Keras Conv2DTranspose) -> Conv2DTransposeD,
Conv3D (NDHWC) -> Conv3D, SpaceToBatchND / BatchToSpaceND (how TensorFlow runs a dilated Conv1D) as
Pad/Reshape/Transpose chains, ResizeBilinear / ResizeNearestNeighbor -> ResizeD (or the value-dependent
Resize when the size is computed at run time)."""
from __future__ import annotations

import math

import numpy as np

from . import TfAdapterError, tf_op
from .nn import hw, nhwc, pads_for, rank4, to_nchw, to_nhwc


def _known_ints(ctx, i: int, what: str, n: int | None = None) -> list[int]:
    v = ctx.const_ints(i, what)
    if n is not None and len(v) != n:
        raise TfAdapterError(f"{what} must hold {n} values, got {v}")
    return v


@tf_op("Conv2DBackpropInput")
def conv2d_backprop_input(ctx):
    """The gradient of Conv2D with respect to its input = a transposed convolution whose output is
    input_sizes: the forward conv's SAME/VALID/EXPLICIT pads, and whatever the stride leaves over at the
    bottom/right as output_padding."""
    is_nhwc = nhwc(ctx)
    sizes = _known_ints(ctx, 0, "input_sizes", 4)
    w, dy = ctx.input(1), ctx.input(2)
    rank4(dy, "out_backprop")
    if len(w.desc.shape) != 4 or min(w.desc.shape) < 1:
        raise TfAdapterError(f"the filter must be 4-D [kh, kw, out, in], got {list(w.desc.shape)}")
    kh, kw, c_out, c_in = w.desc.shape
    strides = hw(ctx.attr("strides", [1, 1, 1, 1]), is_nhwc)
    dil = hw(ctx.attr("dilations", [1, 1, 1, 1]), is_nhwc, "dilations")
    target = sizes[1:3] if is_nhwc else sizes[2:4]
    pads = pads_for(ctx, target, [kh, kw], strides, dil, is_nhwc)
    dyc = to_nchw(ctx, dy) if is_nhwc else dy
    out_pad = []
    for i in range(2):
        got = (dyc.desc.shape[2 + i] - 1) * strides[i] - pads[2 * i] - pads[2 * i + 1] + dil[i] * ((kh, kw)[i] - 1) + 1
        extra = target[i] - got
        if extra < 0:                      # a smaller result: drop rows at the end (more bottom/right pad)
            pads[2 * i + 1] -= extra
            extra = 0
        out_pad.append(extra)
    if w.is_const:
        filt = ctx.make_const("filter_iohw", np.ascontiguousarray(np.asarray(w.data).transpose(3, 2, 0, 1)))
    else:
        filt = ctx.emit("TransposeD", [w], {"perm": [3, 2, 0, 1]}, suffix="filter_iohw")[0]
    y = ctx.emit("Conv2DTransposeD", [dyc, filt, None],
                 {"strides": [1, 1] + strides, "pads": pads, "dilations": [1, 1] + dil, "groups": 1,
                  "output_padding": [0, 0] + out_pad, "data_format": "NCHW"}, suffix="nchw" if is_nhwc else "")[0]
    return to_nhwc(ctx, y) if is_nhwc else [y]


@tf_op("Conv3D")
def conv3d(ctx):
    fmt = ctx.attr("data_format", "NDHWC")
    if fmt not in ("NDHWC", "NCDHW"):
        raise TfAdapterError(f"data_format {fmt} is not supported")
    last = fmt == "NDHWC"
    x, w = ctx.input(0), ctx.input(1)
    if len(x.desc.shape) != 5 or len(w.desc.shape) != 5 or min(w.desc.shape) < 1:
        raise TfAdapterError(f"Conv3D takes a 5-D input and filter, got {list(x.desc.shape)}, {list(w.desc.shape)}")
    k = list(w.desc.shape[:3])
    cin = w.desc.shape[3]
    c = x.desc.shape[4] if last else x.desc.shape[1]

    def three(v, what):
        v = [int(a) for a in (v or [1] * 5)]
        if len(v) != 5 or min(v) < 1:
            raise TfAdapterError(f"{what} {v} must be 5 values >= 1")
        return v[1:4] if last else v[2:5]
    strides, dil = three(ctx.attr("strides"), "strides"), three(ctx.attr("dilations"), "dilations")
    xc = ctx.emit("TransposeD", [x], {"perm": [0, 4, 1, 2, 3]}, suffix="to_ncdhw")[0] if last else x
    padding = ctx.attr("padding", "VALID")
    if padding not in ("SAME", "VALID"):
        raise TfAdapterError(f"padding {padding} is not supported")
    pads = []
    for size, kk, s, d in zip(xc.desc.shape[2:], k, strides, dil):
        total = max(0, (-(-size // s) - 1) * s + (kk - 1) * d + 1 - size) if padding == "SAME" else 0
        pads += [total // 2, total - total // 2]
    if w.is_const:
        filt = ctx.make_const("filter_oidhw", np.ascontiguousarray(np.asarray(w.data).transpose(4, 3, 0, 1, 2)))
    else:
        filt = ctx.emit("TransposeD", [w], {"perm": [4, 3, 0, 1, 2]}, suffix="filter_oidhw")[0]
    y = ctx.emit("Conv3D", [xc, filt, None], {"strides": [1, 1] + strides, "pads": pads, "dilations": [1, 1] + dil,
                                              "groups": c // cin, "data_format": "NCDHW"},
                 suffix="ncdhw" if last else "")[0]
    return ctx.emit("TransposeD", [y], {"perm": [0, 2, 3, 4, 1]}) if last else [y]


def _block_args(ctx, what: str):
    x = ctx.input(0)
    block = _known_ints(ctx, 1, "block_shape")
    m = len(block)
    pairs = _known_ints(ctx, 2, what, 2 * m)
    if m < 1 or len(x.desc.shape) < m + 1 or min(block) < 1 or min(pairs) < 0:
        raise TfAdapterError(f"block_shape {block} / {what} {pairs} do not fit an input of shape {list(x.desc.shape)}")
    return x, block, [pairs[2 * i: 2 * i + 2] for i in range(m)]


def _reshape(ctx, x, shape, suffix):
    return ctx.emit("Reshape", [x, ctx.make_const(f"{suffix}_shape", np.array(shape, np.int64))], suffix=suffix)[0]


@tf_op("SpaceToBatchND")
def space_to_batch(ctx):
    """pad the spatial dims, split each into (size / block, block), move the block factors in front of the
    batch, merge them into it (TensorFlow's definition, step by step)."""
    x, block, pads = _block_args(ctx, "paddings")
    m, shape = len(block), list(x.desc.shape)
    rest = shape[m + 1:]
    flat = [0, 0] + [p for pair in pads for p in pair] + [0, 0] * len(rest)
    xp = ctx.emit("PadV3D", [x], {"paddings": flat, "mode": "constant", "constant_values": 0.0},
                  suffix="pad")[0] if any(flat) else x
    padded = list(xp.desc.shape)
    if any(padded[1 + i] % b for i, b in enumerate(block)):
        raise TfAdapterError(f"padded spatial dims {padded[1:m + 1]} are not multiples of block_shape {block}")
    split = [padded[0]] + [v for i, b in enumerate(block) for v in (padded[1 + i] // b, b)] + rest
    y = _reshape(ctx, xp, split, "split")
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + \
        list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = ctx.emit("TransposeD", [y], {"perm": perm}, suffix="blocks_first")[0]
    out = [padded[0] * math.prod(block)] + [padded[1 + i] // b for i, b in enumerate(block)] + rest
    return ctx.emit("Reshape", [y, ctx.make_const("out_shape", np.array(out, np.int64))])


@tf_op("BatchToSpaceND")
def batch_to_space(ctx):
    """The inverse: split the block factors out of the batch, interleave them after each spatial dim,
    merge, crop."""
    x, block, crops = _block_args(ctx, "crops")
    m, shape = len(block), list(x.desc.shape)
    n = math.prod(block)
    if shape[0] % n:
        raise TfAdapterError(f"batch {shape[0]} is not a multiple of the block size {n}")
    rest = shape[m + 1:]
    y = _reshape(ctx, x, block + [shape[0] // n] + shape[1:], "split")
    perm = [m] + [v for i in range(m) for v in (m + 1 + i, i)] + list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = ctx.emit("TransposeD", [y], {"perm": perm}, suffix="interleave")[0]
    full = [shape[0] // n] + [shape[1 + i] * b for i, b in enumerate(block)] + rest
    y = _reshape(ctx, y, full, "merge")
    if not any(c for pair in crops for c in pair):
        return [y]
    begin = [c[0] for c in crops]
    end = [full[1 + i] - c[1] for i, c in enumerate(crops)]
    return ctx.emit("StridedSliceD", [y], {"begin": begin, "end": end, "axes": list(range(1, m + 1)),
                                           "strides": [1] * m})


# TensorFlow's resize coordinate rules as ONNX Resize attributes: TF rounds nearest indices half away from
# zero (round_prefer_ceil for these non-negative coordinates); half-pixel nearest floor((y + .5) * in / out)
# equals half_pixel's (y + .5) * in / out - .5 rounded half up
_RESIZE = {("ResizeBilinear", False, False): ("linear", "asymmetric", "floor"),
           ("ResizeBilinear", True, False): ("linear", "align_corners", "floor"),
           ("ResizeBilinear", False, True): ("linear", "half_pixel", "floor"),
           ("ResizeNearestNeighbor", False, False): ("nearest", "asymmetric", "floor"),
           ("ResizeNearestNeighbor", True, False): ("nearest", "align_corners", "round_prefer_ceil"),
           ("ResizeNearestNeighbor", False, True): ("nearest", "half_pixel", "round_prefer_ceil")}


@tf_op("ResizeBilinear", "ResizeNearestNeighbor")
def resize(ctx):
    """NHWC images resized on axes 1 and 2 (no layout change needed: ResizeD takes any axes); bilinear
    returns float32 whatever the input type, as TensorFlow's kernel does."""
    x = ctx.input(0)
    rank4(x, "images")
    align, half = bool(ctx.attr("align_corners", False)), bool(ctx.attr("half_pixel_centers", False))
    if align and half:
        raise TfAdapterError("align_corners and half_pixel_centers cannot both be set")
    mode, coord, nearest = _RESIZE[(ctx.node.op, align, half)]
    if ctx.node.op == "ResizeBilinear" and x.desc.dtype != "float32":
        x = ctx.emit("Cast", [x], {"dst_type": "float32"}, suffix="float")[0]
    attrs = {"mode": mode, "coordinate_transformation_mode": coord, "nearest_mode": nearest, "axes": [1, 2]}
    size = ctx.const(1)
    if size is not None:
        size = [int(v) for v in np.asarray(size).reshape(-1)]
        if len(size) != 2 or min(size) < 1:
            raise TfAdapterError(f"size must be 2 positive values, got {size}")
        return ctx.emit("ResizeD", [x], {**attrs, "sizes": size})
    sizes = ctx.emit("Cast", [ctx.input(1)], {"dst_type": "int64"}, suffix="sizes")[0]
    return ctx.emit("Resize", [x, None, None, sizes], attrs)
