"""Aipp: the AI Core's image pre-processing in front of a model input (static AIPP, --insert_op_conf).

Input: the uint8 image as the application hands it over, NHWC (YUV420SP_U8: src_h rows of Y then src_h/2
rows of interleaved U/V, one channel; RGB888_U8: 3 channels; XRGB8888_U8: 4; YUV400_U8: 1). Output: the
model's original NCHW input. Steps, in AIPP's order: crop, colour-space conversion (integer matrix, >> 8,
clamped to 0..255), channel swap, data type conversion (pixel - mean_chn - min_chn) * var_reci_chn, padding
with cpadding_value. Attributes come from atc_py/aipp.py."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .base import KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work, cores_for, split_rows
from .registry import register

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


def aipp_shape(image: TensorDesc, a: dict) -> tuple[int, int, int, int]:
    """The NCHW feature map AIPP makes of a uint8 NHWC image (crop, then padding)."""
    if image.dtype != "uint8" or len(image.shape) != 4:
        raise OpError(f"Aipp takes a uint8 NHWC image, got {image.dtype}{list(image.shape)}")
    c = 1 if a["input_format"] == "YUV400_U8" else 3
    y0, x0, ch, cw = a["crop"]
    h, w = (ch, cw) if ch else tuple(a["src_image_size"])
    top, bottom, left, right = a["padding"]
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
