"""Aipp: the AI Core's image pre-processing in front of a model input (static AIPP, --insert_op_conf).

Input: the uint8 image as the application hands it over, NHWC (YUV420SP_U8: src_h rows of Y then src_h/2
rows of interleaved U/V, one channel; RGB888_U8: 3 channels; XRGB8888_U8: 4; YUV400_U8: 1). Output: the
model's original NCHW input. Steps, in AIPP's order: crop, colour-space conversion (integer matrix, >> 8,
clamped to 0..255), channel swap, data type conversion (pixel - mean_chn - min_chn) * var_reci_chn, padding
with cpadding_value. Attributes come from atc_py/options/aipp.py."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from ..options.aipp import MAX_PADDING
from .core.base import (
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    Work,
    cores_for,
    split_rows,
)
from .core.registry import register

AIPP_TILING = TilingStruct(("n", "I"), ("rows_per_block", "I"))
DTC_OPS = 3   # per output element: - mean, - min, * var_reci
CSC_OPS = 6   # per output element with csc_switch: 3 multiply-adds, the shift, the bias, the clamp


def _pixels(img: np.ndarray, a: dict) -> np.ndarray:
    """The image as N, H, W, C int32 pixels (YUV420SP upsampled to full-resolution U and V; X dropped)."""
    fmt = a["input_format"]
    src_h, src_w = a["src_image_size"]
    if fmt == "YUV420SP_U8":
        y = img[:, :src_h, :, 0]
        uv = img[:, src_h:, :, 0].reshape(img.shape[0], src_h // 2, src_w // 2, 2)
        u, v = (np.repeat(np.repeat(uv[..., k], 2, axis=1), 2, axis=2) for k in (0, 1))
        if a["rbuv_swap_switch"]:
            u, v = v, u
        return np.stack([y, u, v], axis=-1).astype(np.int32)
    if fmt == "XRGB8888_U8":
        px = img[..., 0:3] if a["ax_swap_switch"] else img[..., 1:4]
    elif fmt == "RGB888_U8":
        px = img[..., 0:3]
    else:
        return img[..., 0:1].astype(np.int32)
    px = px.astype(np.int32)
    return px[..., ::-1] if a["rbuv_swap_switch"] else px


def aipp(img: np.ndarray, a: dict, dtype) -> np.ndarray:
    px = _pixels(img, a)
    y0, x0, ch, cw = a["crop"]
    if ch:
        px = px[:, y0:y0 + ch, x0:x0 + cw]
    if a["csc_switch"]:
        m = np.asarray(a["matrix"], np.int64).reshape(3, 3)
        if a["input_format"] == "YUV420SP_U8":   # YUV -> RGB: biases subtracted from the input
            px = np.clip((np.einsum("rc,nhwc->nhwr", m, px - np.asarray(a["input_bias"])) >> 8), 0, 255)
        else:                                    # RGB -> YUV: biases added to the output
            px = np.clip((np.einsum("rc,nhwc->nhwr", m, px.astype(np.int64)) >> 8) + np.asarray(a["output_bias"]),
                         0, 255)
    c = px.shape[-1]
    mean = np.asarray(a["mean_chn"][:c], np.float32)
    lo = np.asarray(a["min_chn"][:c], np.float32)
    scale = np.asarray(a["var_reci_chn"][:c], np.float32)
    out = (px.astype(np.float32) - mean - lo) * scale
    top, bottom, left, right = a["padding"]
    if top or bottom or left or right:
        out = np.pad(out, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=a["cpadding_value"])
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2)).astype(dtype)


IMAGE_CHANNELS = {"RGB888_U8": 3, "XRGB8888_U8": 4, "YUV400_U8": 1, "YUV420SP_U8": 1}


def aipp_shape(image: TensorDesc, a: dict) -> tuple[int, int, int, int]:
    """The NCHW feature map AIPP makes of a uint8 NHWC image (crop, then padding). The attributes are checked
    against the image first (they may come from a file): its format's channels and rows, the source size, a crop
    inside it, pads within AIPP's bound, per-channel lists long enough."""
    fmt = a["input_format"]
    if image.dtype != "uint8" or len(image.shape) != 4 or fmt not in IMAGE_CHANNELS:
        raise OpError(f"Aipp takes a uint8 NHWC image in one of {', '.join(IMAGE_CHANNELS)}, got "
                      f"{image.dtype}{list(image.shape)} as {fmt}")
    src, crop, pads = (list(a[k]) for k in ("src_image_size", "crop", "padding"))
    if len(src) != 2 or len(crop) != 4 or len(pads) != 4:
        raise OpError("src_image_size needs 2 values, crop and padding 4")
    sh, sw = (int(v) for v in src)
    rows = sh * 3 // 2 if fmt == "YUV420SP_U8" else sh
    if sh <= 0 or sw <= 0 or tuple(image.shape[1:]) != (rows, sw, IMAGE_CHANNELS[fmt]) or \
            fmt == "YUV420SP_U8" and (sh % 2 or sw % 2):
        raise OpError(f"a {fmt} image of {sh} x {sw} is not {list(image.shape)}")
    y0, x0, ch, cw = (int(v) for v in crop)
    if (ch or cw) and not (0 <= y0 and 0 <= x0 and 0 < ch and 0 < cw and y0 + ch <= sh and x0 + cw <= sw):
        raise OpError(f"crop {crop} does not fit the {sh} x {sw} image")
    if any(not 0 <= int(p) <= MAX_PADDING for p in pads):
        raise OpError(f"padding {pads} is outside 0..{MAX_PADDING}")
    c = 1 if fmt == "YUV400_U8" else 3
    if any(len(a[k]) < c for k in ("mean_chn", "min_chn", "var_reci_chn")) or \
            a["csc_switch"] and (len(a["matrix"]) != 9 or len(a["input_bias"]) != 3 or len(a["output_bias"]) != 3):
        raise OpError("mean_chn / min_chn / var_reci_chn need a value per channel, a csc matrix 9 and its biases 3")
    h, w = (ch, cw) if ch else (sh, sw)
    top, bottom, left, right = (int(p) for p in pads)
    return image.shape[0], c, h + top + bottom, w + left + right


def aipp_ops(a: dict) -> int:
    """Vector ops per output element."""
    return DTC_OPS + (CSC_OPS if a["csc_switch"] else 0)


@register
class Aipp(OpSpec):
    op_type = "Aipp"
    inputs = ("images",)
    outputs = ("features",)
    attrs = {"input_format": "RGB888_U8", "src_image_size": [0, 0], "crop": [0, 0, 0, 0], "csc_switch": False,
             "matrix": [0] * 9, "input_bias": [0, 0, 0], "output_bias": [0, 0, 0], "rbuv_swap_switch": False,
             "ax_swap_switch": False, "padding": [0, 0, 0, 0], "cpadding_value": 0.0, "mean_chn": [0, 0, 0, 0],
             "min_chn": [0.0] * 4, "var_reci_chn": [1.0] * 4, "dst_type": "float32"}
    dtypes = ("uint8", "float32", "float16")
    tiling_struct = AIPP_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        a = {k: self.attr(node, k) for k in self.attrs}
        return [TensorDesc(aipp_shape(node.input_desc(0), a), a["dst_type"], "NCHW", "NCHW")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        n = ctx.outputs[0].shape[0]
        block_dim, per = split_rows(n, cores_for(self, ctx.soc))
        return TilingResult(block_dim, 0, AIPP_TILING.pack(n=n, rows_per_block=per))

    def compute(self, args: KernelArgs, inputs):
        return [aipp(inputs[0], {k: self.attr(args.attrs, k) for k in self.attrs}, args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        out = ctx.outputs[0]
        ops = aipp_ops({"csc_switch": self.attr(ctx.attrs, "csc_switch")})
        return Work(vector_ops=ops * out.numel, bytes=ctx.inputs[0].nbytes + out.nbytes, dtype="float16")
