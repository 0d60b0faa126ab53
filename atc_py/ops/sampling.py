"""Sampling and patch ops: GridSampler2D / GridSampler3D (ONNX GridSample, any mode and padding, 2-D and 3-D),
AffineGrid, Col2im (ONNX Col2Im, N-D) and DeformableOffsets (the sampling half of ONNX DeformConv; a Conv2D does
the rest, as CANN splits DeformableConv2D). Interpolation is separable: each spatial axis contributes taps
(indices) and weights, and a sample sums over their outer product."""
from __future__ import annotations

import itertools

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import REQUIRED, KernelArgs, OpError, TilingContext, Work, prod
from .core.registry import register
from .core.row_split import RowSplitOp, ints

GRID_MODES = ("bilinear", "nearest", "bicubic")
PADDING = ("zeros", "border", "reflection")


def _keys_cubic(t: np.ndarray, a: float = -0.75) -> list[np.ndarray]:
    """Keys' cubic weights of the taps x0-1 .. x0+2 for a fractional position t in [0, 1)."""
    def near(d):
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Fold coordinates into [lo, hi] by reflecting at the borders (as often as it takes)."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below, above = x < lo, x > hi
    d = np.where(below, lo - x, np.where(above, x - hi, 0.0))
    n = np.floor(d / span)
    r = d - n * span
    even = (n % 2) == 0
    out = np.where(below, np.where(even, lo + r, hi - r), x)
    return np.where(above, np.where(even, hi - r, lo + r), out)


def axis_taps(coord: np.ndarray, size: int, mode: str, padding: str, align: bool):
    """For coordinates along one axis (pixels, already denormalised): [(index, weight)] per tap, the weights
    zero where a tap falls outside under zeros padding."""
    lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    x = coord
    if mode == "nearest":
        x = np.rint(x)
    outside = (x < lo) | (x > hi)
    if padding == "border":
        x = np.where(outside, np.clip(x, 0, size - 1), x)
    elif padding == "reflection":
        x = np.where(outside, reflect(x, lo, hi), x)
    if mode == "nearest":
        base, weights, offsets = x, [np.ones_like(x)], [0]
    else:
        base = np.floor(x)
        t = x - base
        if mode == "bilinear":
            weights, offsets = [1 - t, t], [0, 1]
        else:
            weights, offsets = _keys_cubic(t), [-1, 0, 1, 2]
    taps = []
    for off, w in zip(offsets, weights):
        i = base.astype(np.int64) + off
        if padding == "zeros":
            w = np.where((i >= 0) & (i < size), w, 0.0)
        elif padding == "border":
            i = np.clip(i, 0, size - 1)
        else:
            i = np.trunc(reflect(i.astype(np.float64), lo, hi)).astype(np.int64)
        taps.append((np.clip(i, 0, size - 1), w))
    return taps


def sample(x: np.ndarray, coords: list[np.ndarray], mode: str, padding: str, align: bool) -> np.ndarray:
    """x [C, *spatial] sampled at pixel coordinates coords[k] (one array per spatial axis, all the same shape
    P): result [C, *P]."""
    per_axis = [axis_taps(c, x.shape[1 + k], mode, padding, align) for k, c in enumerate(coords)]
    out = np.zeros((x.shape[0],) + coords[0].shape)
    for combo in itertools.product(*per_axis):
        weight = np.prod([w for _, w in combo], axis=0)
        out += weight[None] * x[(slice(None),) + tuple(i for i, _ in combo)]
    return out


def denormalise(g: np.ndarray, size: int, align: bool) -> np.ndarray:
    return (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2


class GridSamplerBase(RowSplitOp):
    """y[n, c, *out] = x[n, c] sampled where grid[n, *out] points ((x, y[, z]) in [-1, 1])."""
    inputs = ("x", "grid")
    attrs = {"interpolation_mode": "bilinear", "padding_mode": "zeros", "align_corners": False}
    dtypes = ("float32", "float16", "float64")
    spatial = 2

    def infer(self, node: Node) -> list[TensorDesc]:
        x, grid = node.input_desc(0), node.input_desc(1)
        r = self.spatial
        if len(x.shape) != r + 2 or len(grid.shape) != r + 2 or grid.shape[-1] != r or grid.shape[0] != x.shape[0]:
            raise OpError(f"{self.op_type} takes x [N, C, {r} spatial dims] and grid [N, {r} dims, {r}], got "
                          f"{list(x.shape)} and {list(grid.shape)}")
        if self.attr(node, "interpolation_mode") not in GRID_MODES or self.attr(node, "padding_mode") not in PADDING:
            raise OpError(f"mode {self.attr(node, 'interpolation_mode')} / padding {self.attr(node, 'padding_mode')} "
                          f"are not among {GRID_MODES} / {PADDING}")
        if self.spatial == 3 and self.attr(node, "interpolation_mode") == "bicubic":
            raise OpError("bicubic sampling is 2-D only")
        return [TensorDesc(x.shape[:2] + grid.shape[1:-1], x.dtype, x.format, x.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        x, grid = inputs
        mode, pad = self.attr(args.attrs, "interpolation_mode"), self.attr(args.attrs, "padding_mode")
        align = bool(self.attr(args.attrs, "align_corners"))
        out = np.zeros(args.outputs[0].shape, x.dtype)
        sizes = x.shape[2:]
        for n in range(self.covered_rows(args)):
            g = grid[n].astype(np.float64)
            # grid's last axis is (x, y[, z]): the innermost spatial axis first
            coords = [denormalise(g[..., self.spatial - 1 - k], sizes[k], align) for k in range(self.spatial)]
            out[n] = sample(x[n].astype(np.float64), coords, mode, pad, align)
        return [out]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        taps = {"nearest": 1, "bilinear": 2, "bicubic": 4}.get(self.attr(ctx.attrs, "interpolation_mode"), 2)
        w.vector_ops = ctx.outputs[0].numel * 2 * taps ** self.spatial
        return w


@register
class GridSampler2D(GridSamplerBase):
    op_type = "GridSampler2D"
    spatial = 2


@register
class GridSampler3D(GridSamplerBase):
    op_type = "GridSampler3D"
    spatial = 3


def _known(node: Node, i: int, what: str, length: int | None = None) -> list[int] | None:
    """A shape-deciding input's value (None when it is only known at run time)."""
    v = node.const_input(i) if i < len(node.inputs) else None
    if v is None:
        return None
    out = ints(v)
    if length is not None and len(out) != length:
        raise OpError(f"{what} {out} must have {length} values")
    if min(out, default=0) < 0:
        raise OpError(f"{what} {out} must be >= 0")
    return out


@register
class AffineGrid(RowSplitOp):
    """grid[n, *spatial] = theta[n] @ (x, y[, z], 1) over the normalised output coordinates (align_corners:
    -1 and 1 are the corner pixels' centres, else their outer edges). `size` decides the output shape."""
    op_type = "AffineGrid"
    inputs = ("theta", "output_size")
    attrs = {"align_corners": False}
    infer_depend = frozenset({1})
    dtypes = ("float32", "float16", "float64", "int64", "int32")

    def infer(self, node: Node) -> list[TensorDesc]:
        theta, size = node.input_desc(0), node.input_desc(1)
        if len(theta.shape) != 3 or (theta.shape[1], theta.shape[2]) not in ((2, 3), (3, 4)):
            raise OpError(f"theta must be [N, 2, 3] or [N, 3, 4], got {list(theta.shape)}")
        r = theta.shape[1]
        if tuple(size.shape) not in ((r + 2,), (-1,)):
            raise OpError(f"size must hold {r + 2} values (N, C, spatial) for theta {list(theta.shape)}")
        value = _known(node, 1, "size", r + 2)
        if value is None:
            return [TensorDesc((theta.shape[0],) + (-1,) * r + (r,), theta.dtype, "ND", "ND")]
        if value[0] != theta.shape[0]:
            raise OpError(f"size names batch {value[0]}, theta has {theta.shape[0]}")
        return [TensorDesc((value[0],) + tuple(value[2:]) + (r,), theta.dtype, "ND", "ND")]

    def compute(self, args: KernelArgs, inputs):
        theta = inputs[0].astype(np.float64)
        out_shape = args.outputs[0].shape
        align = bool(self.attr(args.attrs, "align_corners"))

        def axis(length):
            if align:
                return np.linspace(-1.0, 1.0, length) if length > 1 else np.zeros(length)
            return (np.arange(length) * 2.0 + 1.0) / length - 1.0
        spatial = out_shape[1:-1]                       # (H, W) or (D, H, W)
        mesh = np.meshgrid(*[axis(n) for n in spatial], indexing="ij")
        base = np.stack([m for m in mesh[::-1]] + [np.ones(spatial)], axis=-1)   # (..., x, y[, z], 1)
        out = np.zeros(out_shape, inputs[0].dtype)
        end = self.covered_rows(args)
        out[:end] = np.einsum("...k,nrk->n...r", base, theta[:end]) if end else out[:end]
        return [out]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        theta = ctx.inputs[0].shape
        w.vector_ops = 2 * max(ctx.outputs[0].numel, 0) * (theta[2] if len(theta) > 2 else 1)
        return w


@register
class Col2im(RowSplitOp):
    """ONNX Col2Im: columns [N, C * prod(block), L] summed back into images [N, C, *image_shape] (the inverse
    layout of im2col with the given dilations, pads [begins..., ends...] and strides)."""
    op_type = "Col2im"
    inputs = ("x", "image_shape", "block_shape")
    attrs = {"dilations": None, "pads": None, "strides": None}
    infer_depend = frozenset({1, 2})
    dtypes = ("float32", "float16", "float64", "int64", "int32")

    def _geom(self, attrs, x_shape, image, block):
        r = len(image)
        if len(block) != r or r == 0:
            raise OpError(f"image_shape {image} and block_shape {block} must have the same number of dims")
        dil = ints(attrs.get("dilations") or [1] * r, r, "dilations")
        pads = ints(attrs.get("pads") or [0] * 2 * r, 2 * r, "pads")
        strides = ints(attrs.get("strides") or [1] * r, r, "strides")
        if min(block) < 1 or min(dil) < 1 or min(strides) < 1 or min(pads) < 0:
            raise OpError(f"block {block}, dilations {dil}, strides {strides} must be >= 1 and pads {pads} >= 0")
        blocks = []
        for k in range(r):
            span = image[k] + pads[k] + pads[k + r] - dil[k] * (block[k] - 1) - 1
            if span < 0:
                raise OpError(f"block {block} does not fit the padded image {image}")
            blocks.append(span // strides[k] + 1)
        kk = prod(block)
        if len(x_shape) != 3 or x_shape[1] % kk or x_shape[2] != prod(blocks):
            raise OpError(f"input {list(x_shape)} must be [N, C * {kk}, {prod(blocks)}]")
        return dil, pads, strides, blocks

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        image, block = _known(node, 1, "image_shape"), _known(node, 2, "block_shape")
        if image is None or block is None:
            r = node.input_desc(1).shape[0] if len(node.input_desc(1).shape) == 1 else -1
            if r < 1:
                raise OpError(f"image_shape must be a 1-D tensor, got {list(node.input_desc(1).shape)}")
            return [TensorDesc((x.shape[0], -1) + (-1,) * r, x.dtype, "ND", "ND")]
        self._geom(node.attrs, x.shape, image, block)
        c = x.shape[1] // prod(block)
        return [TensorDesc((x.shape[0], c) + tuple(image), x.dtype, "ND", "ND")]

    def compute(self, args: KernelArgs, inputs):
        x, image, block = inputs[0], ints(inputs[1]), ints(inputs[2])
        dil, pads, strides, blocks = self._geom(args.attrs, x.shape, image, block)
        r = len(image)
        n, c = x.shape[0], x.shape[1] // prod(block)
        padded = np.zeros((n, c) + tuple(image[k] + pads[k] + pads[k + r] for k in range(r)), np.float64)
        cols = x.astype(np.float64).reshape((n, c) + tuple(block) + tuple(blocks))
        end = self.covered_rows(args)
        for tap in itertools.product(*[range(b) for b in block]):
            window = tuple(slice(tap[k] * dil[k], tap[k] * dil[k] + strides[k] * (blocks[k] - 1) + 1, strides[k])
                           for k in range(r))
            padded[(slice(0, end), slice(None)) + window] += cols[(slice(0, end), slice(None)) + tap]
        inner = tuple(slice(pads[k], pads[k] + image[k]) for k in range(r))
        return [padded[(slice(None), slice(None)) + inner].astype(x.dtype)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel
        return w


@register
class DeformableOffsets(RowSplitOp):
    """The deformed im2col of ONNX DeformConv: x [N, C, H, W] sampled (bilinear, zero outside) at each output
    cell's kernel taps moved by offset [N, G*kh*kw*2, oh, ow] ((dy, dx) per tap) and scaled by mask
    [N, G*kh*kw, oh, ow], laid out as [N, C, oh*kh, ow*kw]: a Conv2D with stride (kh, kw) finishes the op."""
    op_type = "DeformableOffsets"
    inputs = ("x", "offsets", "mask?")
    attrs = {"ksize": REQUIRED, "strides": [1, 1], "pads": [0, 0, 0, 0],
             "dilations": [1, 1], "deformable_groups": 1}
    dtypes = ("float32", "float16", "float64")

    def _geom(self, attrs, x, off):
        kh, kw = ints(self.attr(attrs, "ksize"), 2, "kernel_shape")
        sh, sw = ints(self.attr(attrs, "strides"), 2, "strides")
        dh, dw = ints(self.attr(attrs, "dilations"), 2, "dilations")
        pt, pl, pb, pr = ints(self.attr(attrs, "pads"), 4, "pads")
        g = int(self.attr(attrs, "deformable_groups"))
        if min(kh, kw, sh, sw, dh, dw, g) < 1 or min(pt, pl, pb, pr) < 0:
            raise OpError("kernel, strides, dilations, offset_group must be >= 1 and pads >= 0")
        if len(x) != 4 or x[1] % g:
            raise OpError(f"x {list(x)} must be N,C,H,W with C divisible by offset_group {g}")
        oh = (x[2] + pt + pb - dh * (kh - 1) - 1) // sh + 1
        ow = (x[3] + pl + pr - dw * (kw - 1) - 1) // sw + 1
        if tuple(off) != (x[0], g * kh * kw * 2, oh, ow):
            raise OpError(f"offset {list(off)} must be [{x[0]}, {g * kh * kw * 2}, {oh}, {ow}]")
        return kh, kw, sh, sw, dh, dw, pt, pl, g, oh, ow

    def infer(self, node: Node) -> list[TensorDesc]:
        x, off = node.input_desc(0), node.input_desc(1)
        kh, kw, _, _, _, _, _, _, g, oh, ow = self._geom(node.attrs, x.shape, off.shape)
        mask = node.input_desc(2) if len(node.inputs) > 2 else None
        if mask is not None and tuple(mask.shape) != (x.shape[0], g * kh * kw, oh, ow):
            raise OpError(f"mask {list(mask.shape)} must be [{x.shape[0]}, {g * kh * kw}, {oh}, {ow}]")
        return [TensorDesc((x.shape[0], x.shape[1], oh * kh, ow * kw), x.dtype, "NCHW", "NCHW")]

    def compute(self, args: KernelArgs, inputs):
        x, off = inputs[0], inputs[1]
        mask = inputs[2] if len(inputs) > 2 else None
        kh, kw, sh, sw, dh, dw, pt, pl, g, oh, ow = self._geom(args.attrs, x.shape, off.shape)
        n, c = x.shape[:2]
        off = off.astype(np.float64).reshape(n, g, kh, kw, 2, oh, ow)
        m = np.ones((n, g, kh, kw, oh, ow)) if mask is None else mask.astype(np.float64).reshape(n, g, kh, kw, oh, ow)
        ys = (np.arange(oh) * sh - pt)[None, None, :, None] + (np.arange(kh) * dh)[:, None, None, None]
        xs = (np.arange(ow) * sw - pl)[None, None, None, :] + (np.arange(kw) * dw)[None, :, None, None]
        out = np.zeros((n, c, kh, kw, oh, ow))
        cg = c // g
        for b in range(self.covered_rows(args)):
            for k in range(g):
                cy = ys + off[b, k, :, :, 0]                # (kh, kw, oh, ow)
                cx = xs + off[b, k, :, :, 1]
                part = sample(x[b, k * cg:(k + 1) * cg].astype(np.float64), [cy, cx], "bilinear", "zeros", True)
                out[b, k * cg:(k + 1) * cg] = part * m[b, k][None]
        # [N, C, kh, kw, oh, ow] -> [N, C, oh, kh, ow, kw] -> [N, C, oh*kh, ow*kw]
        out = out.transpose(0, 1, 4, 2, 5, 3).reshape(n, c, oh * kh, ow * kw)
        return [out.astype(x.dtype)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.outputs[0].numel * 10
        return w
