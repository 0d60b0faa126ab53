"""Resize (ONNX Resize / Upsample) of any rank over any axes: nearest (four rounding modes), linear and cubic
(cubic_coeff_a, exclude_outside), antialiased linear/cubic when downsampling, every coordinate transformation
mode incl. tf_crop_and_resize with roi and extrapolation_value, and keep_aspect_ratio_policy for sizes.

Interpolation is separable: each resized axis is one (out x in) weight matrix applied along that axis, the
matrix built from the taps and coefficients ONNX defines for each output position. `ResizeD` takes sizes /
scales / roi as attributes (known at compile time); `Resize` (CANN's op with the ONNX inputs x, roi, scales,
sizes) takes them as tensors whose values decide the output shape (dynamic partition). Tiling splits the rows
of the dims before the first resized axis over vector cores."""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError, TilingContext, Work, prod
from .core.registry import register
from .core.row_split import RowSplitOp
from .value_params import ints, value_param

MODES = ("nearest", "linear", "cubic")
COORD = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric",
         "tf_crop_and_resize")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
POLICIES = ("stretch", "not_larger", "not_smaller")
MAX_TAPS = 1 << 26   # interpolation taps of one axis (an antialiased tiny scale widens the kernel as 1 / scale)


def _floats(v) -> list[float] | None:
    if v is None:
        return None
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    return None if a.size == 0 else [float(s) for s in a]


def plan(shape: tuple[int, ...], attrs: dict) -> tuple[list[int], list[float], list[float] | None, list[int]]:
    """(output shape, scale per dim, roi [starts..., ends...] per dim or None, resized axes) of ONNX Resize."""
    rank = len(shape)
    axes = attrs.get("axes")
    axes = list(range(rank)) if axes is None else [int(a) + rank if int(a) < 0 else int(a) for a in axes]
    if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        raise OpError(f"axes {attrs.get('axes')} are not distinct axes of a rank-{rank} input")
    sizes, scales, roi = attrs.get("sizes"), _floats(attrs.get("scales")), _floats(attrs.get("roi"))
    sizes = None if sizes is None or np.asarray(sizes).size == 0 else ints(sizes)
    if (sizes is None) == (scales is None):
        raise OpError("exactly one of scales and sizes must be given")
    given = sizes if sizes is not None else scales
    if len(given) != len(axes):
        raise OpError(f"{'sizes' if sizes is not None else 'scales'} {given} must have {len(axes)} values")
    full_roi = None
    if roi is not None:
        if len(roi) != 2 * len(axes):
            raise OpError(f"roi {roi} must have {2 * len(axes)} values")
        full_roi = [0.0] * rank + [1.0] * rank
        for k, a in enumerate(axes):
            full_roi[a], full_roi[rank + a] = roi[k], roi[len(axes) + k]
    out, scale = list(shape), [1.0] * rank
    if scales is not None:
        for a, s in zip(axes, scales):
            if not s > 0 or not math.isfinite(s):
                raise OpError(f"scale {s} must be a positive number")
            scale[a] = s
            out[a] = int(math.floor(shape[a] * s))
    else:
        if min(sizes) < 0:
            raise OpError(f"sizes {sizes} must be >= 0")
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy not in POLICIES:
            raise OpError(f"keep_aspect_ratio_policy '{policy}' is not one of {', '.join(POLICIES)}")
        ratios = [sz / shape[a] if shape[a] else 1.0 for a, sz in zip(axes, sizes)]
        if policy != "stretch":
            s = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [s] * len(axes)
            sizes = [int(s * shape[a] + 0.5) for a in axes]
        for a, sz, r in zip(axes, sizes, ratios):
            out[a], scale[a] = int(sz), float(r)
    return out, scale, full_roi, axes


def source_coords(mode: str, in_len: int, out_len: int, scale: float, roi: tuple[float, float] | None):
    """Where each output index samples the input (float coordinates), and which ones tf_crop_and_resize puts
    outside the input (those take extrapolation_value). length_resized is scale * length_original, fractional
    when a scale does not divide evenly (ONNX's definition and its reference; onnxruntime uses the integer
    output length and differs on the two node cases that downsample with align_corners)."""
    y = np.arange(out_len, dtype=np.float64)
    out_w = scale * in_len
    outside = None
    if mode == "asymmetric":
        x = y / scale
    elif mode == "align_corners":
        x = np.zeros(out_len) if out_w == 1 else y * (in_len - 1) / (out_w - 1)
    elif mode == "pytorch_half_pixel":
        x = np.full(out_len, -0.5) if out_w == 1 else (y + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        x = in_len / 2 * (1 - out_len / out_w) + (y + 0.5) / scale - 0.5
    elif mode == "tf_crop_and_resize":
        r0, r1 = roi if roi is not None else (0.0, 1.0)
        x = np.full(out_len, (r1 - r0) * (in_len - 1) / 2) if out_w == 1 else \
            y * (r1 - r0) * (in_len - 1) / (out_w - 1)
        x = x + r0 * (in_len - 1)
        outside = (x < 0) | (x > in_len - 1)
    else:
        x = (y + 0.5) / scale - 0.5
    return x, outside


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def axis_weights(attrs: dict, in_len: int, out_len: int, scale: float, roi) -> tuple[np.ndarray, np.ndarray | None]:
    """The (out_len, in_len) interpolation matrix of one axis and the mask of extrapolated outputs. Each output
    sits at x; with base = ceil(x) - 1 and ratio = x - base in (0, 1], tap base + i weighs k(i - ratio)
    (nearest: the rounded neighbour); antialias widens the kernel by 1 / scale when downsampling; taps past the
    edges clamp to it, or with exclude_outside drop out and the rest renormalise."""
    mode = attrs.get("mode", "nearest")
    x, outside = source_coords(attrs.get("coordinate_transformation_mode", "half_pixel"), in_len, out_len, scale, roi)
    base = np.ceil(x) - 1
    ratio = x - base
    if mode == "nearest":
        nm = attrs.get("nearest_mode", "round_prefer_floor")
        up = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
              "floor": ratio == 1, "ceil": np.ones(out_len, bool)}[nm]
        offs = np.array([0, 1])
        coef = np.stack([~up, up], axis=1).astype(np.float64)
    else:
        support = 1 if mode == "linear" else 2
        s = min(scale, 1.0) if attrs.get("antialias") else 1.0
        if not s > 0 or not math.isfinite(s):
            raise OpError(f"scale {scale} must be a positive number")
        start = int(math.floor(-support / s)) + 1
        if (2 - 2 * start) * max(out_len, 1) > MAX_TAPS:
            raise OpError(f"antialiasing a {in_len} -> {out_len} resize needs {2 - 2 * start} taps per output, "
                          f"more than the kernel takes")
        offs = np.arange(start, 2 - start)
        d = (offs[None, :] - ratio[:, None]) * s
        if mode == "linear":
            coef = np.clip(1 - np.abs(d), 0, 1)
        else:
            coef = _cubic(d, float(attrs.get("cubic_coeff_a", -0.75)))
        if attrs.get("antialias"):
            coef = coef / coef.sum(axis=1, keepdims=True)
    taps = base.astype(np.int64)[:, None] + offs[None, :]
    if attrs.get("exclude_outside") and mode != "nearest":
        coef = np.where((taps < 0) | (taps >= in_len), 0.0, coef)
        total = coef.sum(axis=1, keepdims=True)
        coef = coef / np.where(total == 0, 1.0, total)
    w = np.zeros((out_len, in_len))
    if in_len:
        np.add.at(w, (np.repeat(np.arange(out_len), len(offs)), np.clip(taps, 0, in_len - 1).reshape(-1)),
                  coef.reshape(-1))
    return w, outside


def check_modes(attrs: dict) -> None:
    for key, allowed, default in (("mode", MODES, "nearest"), ("coordinate_transformation_mode", COORD, "half_pixel"),
                                  ("nearest_mode", NEAREST, "round_prefer_floor")):
        if attrs.get(key, default) not in allowed:
            raise OpError(f"{key} '{attrs.get(key)}' is not one of {', '.join(allowed)}")
    if attrs.get("antialias") and attrs.get("mode", "nearest") == "nearest":
        raise OpError("antialias applies to linear and cubic modes only")


@register
class ResizeD(RowSplitOp):
    op_type = "ResizeD"
    inputs = ("x",)
    attrs = {"sizes": None, "scales": None, "roi": None, "axes": None, "mode": "nearest",
             "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor",
             "cubic_coeff_a": -0.75, "exclude_outside": 0, "extrapolation_value": 0.0, "antialias": 0,
             "keep_aspect_ratio_policy": "stretch"}
    dtypes = ("float32", "float16", "float64")

    def _attrs(self, attrs: dict) -> dict:
        return {k: attrs.get(k, d) for k, d in self.attrs.items()}

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if x.dtype not in self.dtypes:
            raise OpError(f"Resize interpolates float tensors, got {x.dtype}")
        attrs = self._attrs(node.attrs)
        check_modes(attrs)
        out, _, _, _ = plan(x.shape, attrs)
        return [TensorDesc(tuple(out), x.dtype, x.format, x.origin_format)]

    def _lead(self, in_shape, out_shape) -> int:
        """Dims before the first resized (changed) axis: independent rows."""
        k = 0
        while k < len(in_shape) and in_shape[k] == out_shape[k]:
            k += 1
        return k

    def rows(self, ctx: TilingContext) -> int:
        x, y = ctx.inputs[0].shape, ctx.outputs[0].shape
        return prod(y[:self._lead(x, y)])

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        attrs = self._attrs(args.attrs)
        out, scale, roi, axes = plan(x.shape, attrs)
        if tuple(out) != tuple(args.outputs[0].shape):
            raise OpError(f"output shape {list(args.outputs[0].shape)} does not match the resize {out}")
        lead = self._lead(x.shape, out)
        end = self.covered_rows(args)
        res = x.reshape((-1,) + x.shape[lead:])[:end].astype(np.float64)
        extra = float(attrs["extrapolation_value"])
        for a in sorted(axes):
            if a < lead:
                continue
            r = None if roi is None else (roi[a], roi[len(x.shape) + a])
            if out[a] == x.shape[a] and scale[a] == 1.0 and (r is None or r == (0.0, 1.0)):
                continue
            w, outside = axis_weights(attrs, x.shape[a], out[a], scale[a], r)
            k = a - lead + 1
            res = np.moveaxis(np.tensordot(res, w, axes=([k], [1])), -1, k)
            if outside is not None and outside.any():
                shape = [1] * res.ndim
                shape[k] = out[a]
                res = np.where(outside.reshape(shape), extra, res)
        full = np.zeros((prod(out[:lead]),) + tuple(out[lead:]), dtype=x.dtype)
        full[:end] = res
        return [full.reshape(out)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        taps = {"nearest": 1, "linear": 2, "cubic": 4}.get(self.attr(ctx.attrs, "mode"), 1)
        w.vector_ops *= 2 * taps * max(1, len(ctx.outputs[0].shape) - 2)
        return w


def _resize_attrs(values, attrs, descs):
    out = dict(attrs)
    if values.get("roi") is not None and np.asarray(values["roi"]).size:
        out["roi"] = _floats(values["roi"])
    if values.get("scales") is not None and np.asarray(values["scales"]).size:
        out["scales"] = _floats(values["scales"])
    if values.get("sizes") is not None and np.asarray(values["sizes"]).size:
        out["sizes"] = ints(values["sizes"])
    return out


RESIZE = value_param("Resize", "ResizeD", {1: "roi", 2: "scales", 3: "sizes"}, ("x", "roi?", "scales?", "sizes?"),
            _resize_attrs, lambda x, node: None if x.shape == (-2,) else len(x.shape),
            {k: v for k, v in ResizeD.attrs.items() if k not in ("sizes", "scales", "roi")})
RESIZE.dtypes = ResizeD.dtypes + ("int64",)   # sizes
