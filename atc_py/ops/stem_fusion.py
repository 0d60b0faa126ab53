"""What CANN's AIPP + Conv2D (+ ReLU) (+ MaxPool) UB fusions add to a Conv2D kernel (passes/aipp_fusion.py): the
convolution reads the uint8 image and runs the AIPP on its way into L1 (TbeAippConvFusion), and on Ascend310P a
ResNet stem also pools its result before writing it (TbeAippConvReluMaxpoolingFusion), so neither AIPP's fp16
feature map nor the full-size convolution output goes through memory.

The fused Conv2D carries the AIPP's attributes prefixed `aipp_` and the pool's as `fused_pool_*`; its input 0 is
then the image and its output the pooled map. Numbers are those of the unfused ops: AIPP's fp16 output, the
convolution's epilogue and cast, then the max (exact on the rounded values, as the separate MaxPoolV3)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import TensorDesc
from .aipp import Aipp, aipp, aipp_ops, aipp_shape
from .core.base import OpError

AIPP_PREFIX = "aipp_"
POOL_KSIZE, POOL_STRIDES, POOL_PADS = "fused_pool_ksize", "fused_pool_strides", "fused_pool_pads"


def aipp_attrs(attrs: dict) -> dict | None:
    """The fused AIPP's attributes (Aipp's names), or None when the convolution reads a feature map."""
    if AIPP_PREFIX + "input_format" not in attrs:
        return None
    return {k: attrs.get(AIPP_PREFIX + k, default) for k, default in Aipp.attrs.items()}


def conv_input_desc(x: TensorDesc, w: TensorDesc, attrs: dict) -> TensorDesc:
    """What the convolution computes on: its input, or the fused AIPP's fp16 NCHW map of the image."""
    a = aipp_attrs(attrs)
    if a is None:
        return x
    return TensorDesc(aipp_shape(x, a), w.dtype, "NCHW", "NCHW")


def conv_input(x: np.ndarray, attrs: dict, dtype) -> np.ndarray:
    a = aipp_attrs(attrs)
    return x if a is None else aipp(x, a, dtype)


def pool(attrs: dict) -> tuple | None:
    """(kh, kw, sh, sw, pt, pb, pl, pr) of the fused max pool, or None."""
    if POOL_KSIZE not in attrs:
        return None
    k, s, p = (list(attrs.get(n) or []) for n in (POOL_KSIZE, POOL_STRIDES, POOL_PADS))
    if len(k) < 2 or len(s) < 2 or len(p) != 4 or min(k[-2:] + s[-2:]) < 1 or min(p) < 0:
        raise OpError(f"fused pool ksize {k}, strides {s}, pads {p}: 2 windows and strides of at least 1, 4 pads")
    return (*(int(v) for v in k[-2:]), *(int(v) for v in s[-2:]), *(int(v) for v in p))


def _max_pool(attrs: dict):
    """The fused pool as MaxPoolV3 and its attributes: its geometry and its reduction are that op's."""
    from .conv_pool import MaxPoolV3  # conv_pool imports this module
    kh, kw, sh, sw, *pads = pool(attrs)
    return MaxPoolV3(), {"ksize": [1, 1, kh, kw], "strides": [1, 1, sh, sw], "pads": pads}


def output_shape(conv_shape: tuple, attrs: dict) -> tuple:
    """The kernel's output: the convolution's, or its pooled map."""
    if pool(attrs) is None:
        return tuple(conv_shape)
    op, pool_attrs = _max_pool(attrs)
    g = op._geom(conv_shape, pool_attrs)
    return g["n"], g["c"], g["ho"], g["wo"]


def pooled(y: np.ndarray, attrs: dict) -> np.ndarray:
    """The max over each window of the (rounded) convolution output, as MaxPoolV3 takes it; padding never wins."""
    if pool(attrs) is None:
        return y
    op, pool_attrs = _max_pool(attrs)
    t = op._geom(y.shape, pool_attrs)
    out = op.reduce(t, y.reshape(-1, t["h"], t["w"]), pool_attrs)
    return out.astype(y.dtype, copy=False).reshape(t["n"], t["c"], t["ho"], t["wo"])


def fused_vector_ops(attrs: dict, in_elems: int, out_elems: int) -> int:
    """The vector work the fusions add: AIPP's conversion of each element of the map the convolution reads
    (`in_elems`) and the pool's taps over each output element."""
    a, p = aipp_attrs(attrs), pool(attrs)
    return (aipp_ops(a) * in_elems if a is not None else 0) + (out_elems * p[0] * p[1] if p is not None else 0)
