"""Resize (ONNX Resize / Upsample) on the spatial dims of NCHW: nearest and (bi)linear, with ONNX's
coordinate transformation and nearest rounding modes. Tiling splits N×C planes over vector cores."""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Node, TensorDesc
from .base import OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work, cores_for, prod, split_rows
from .registry import register

RESIZE_TILING = TilingStruct(("planes", "Q"), ("planes_per_block", "Q"))
MODES = ("nearest", "linear")
COORD = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric")
NEAREST = {"round_prefer_floor": lambda v: np.ceil(v - 0.5), "round_prefer_ceil": lambda v: np.floor(v + 0.5),
           "floor": np.floor, "ceil": np.ceil}


def source_coord(out_idx: np.ndarray, in_len: int, out_len: int, scale: float, mode: str) -> np.ndarray:
    """Where output index i samples the input, per ONNX coordinate_transformation_mode."""
    i = out_idx.astype(np.float64)
    if mode == "asymmetric":
        return i / scale
    if mode == "align_corners":
        return np.zeros_like(i) if out_len == 1 else i * (in_len - 1) / (out_len - 1)
    if mode == "pytorch_half_pixel":
        return (i + 0.5) / scale - 0.5 if out_len > 1 else np.zeros_like(i)
    if mode == "half_pixel_symmetric":
        adj = out_len / (scale * in_len)
        return (in_len / 2) * (1 - adj) + (i + 0.5) / scale - 0.5
    return (i + 0.5) / scale - 0.5   # half_pixel


@register
class Resize(OpSpec):
    op_type = "Resize"
    inputs = ("x",)
    attrs = {"sizes": None, "scales": None, "mode": "nearest", "coordinate_transformation_mode": "half_pixel",
             "nearest_mode": "round_prefer_floor"}
    dtypes = ("float32", "float16", "float64")
    tiling_struct = RESIZE_TILING

    def _check(self, attrs):
        for key, allowed in (("mode", MODES), ("coordinate_transformation_mode", COORD),
                             ("nearest_mode", tuple(NEAREST))):
            if self.attr(attrs, key) not in allowed:
                raise OpError(f"{key} '{self.attr(attrs, key)}' is not supported ({', '.join(allowed)})")

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        self._check(node.attrs)
        if len(x.shape) != 4:
            raise OpError(f"Resize supports 4-D NCHW input, got {list(x.shape)}")
        sizes, scales = self.attr(node, "sizes"), self.attr(node, "scales")
        if sizes is not None:
            out = [int(s) for s in sizes]
        elif scales is not None:
            out = [int(math.floor(d * float(s))) for d, s in zip(x.shape, scales)]
        else:
            raise OpError("Resize needs sizes or scales")
        if out[:2] != list(x.shape[:2]):
            raise OpError(f"only the spatial dims may be resized: {list(x.shape)} -> {out}")
        return [TensorDesc(tuple(out), x.dtype, x.format, x.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        planes = prod(ctx.inputs[0].shape[:2])
        block_dim, per = split_rows(planes, cores_for(self, ctx.soc))
        return TilingResult(block_dim, 0, RESIZE_TILING.pack(planes=planes, planes_per_block=per))

    def _axis(self, attrs, in_len, out_len, scale):
        coord = source_coord(np.arange(out_len), in_len, out_len, scale,
                             self.attr(attrs, "coordinate_transformation_mode"))
        if self.attr(attrs, "mode") == "nearest":
            idx = np.clip(NEAREST[self.attr(attrs, "nearest_mode")](coord), 0, in_len - 1).astype(np.int64)
            return idx, idx, np.zeros(out_len)
        coord = np.clip(coord, 0, in_len - 1)
        lo = np.floor(coord).astype(np.int64)
        hi = np.minimum(lo + 1, in_len - 1)
        return lo, hi, coord - lo

    def compute(self, args, inputs):
        x = inputs[0]
        out = args.outputs[0].shape
        scales = self.attr(args.attrs, "scales")
        sc = [float(s) for s in scales] if scales is not None else [o / i for o, i in zip(out, x.shape)]
        h0, h1, fh = self._axis(args.attrs, x.shape[2], out[2], sc[2])
        w0, w1, fw = self._axis(args.attrs, x.shape[3], out[3], sc[3])
        planes = x.reshape(-1, x.shape[2], x.shape[3]).astype(np.float64)
        res = np.zeros((planes.shape[0], out[2], out[3]))
        covered = min(planes.shape[0], args.block_dim * args.tiling["planes_per_block"])
        p = planes[:covered]
        top = p[:, h0][:, :, w0] * (1 - fw) + p[:, h0][:, :, w1] * fw
        bot = p[:, h1][:, :, w0] * (1 - fw) + p[:, h1][:, :, w1] * fw
        res[:covered] = top * (1 - fh)[:, None] + bot * fh[:, None]
        return [res.reshape(out).astype(x.dtype)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 4 if self.attr(ctx.attrs, "mode") == "linear" else 1
        return w
