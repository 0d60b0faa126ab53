"""How a value converts to the low-precision types (ONNX Cast-19..25 semantics, which Ascend's Cast follows for
the types GE has): float8 e4m3fn / e5m2 saturate by default (|x| beyond the largest finite value, infinities
included, becomes that value; NaN stays NaN) and overflow to NaN / inf with saturate=0; float8 e8m0 (a power of
two, the MX scale type) rounds the exponent up, down or to nearest; everything else is numpy's / ml_dtypes'
conversion (round to nearest even, integers wrap)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

SATURATING = ("float8_e4m3fn", "float8_e5m2")
E8M0 = "float8_e8m0fnu"
ROUND_MODES = ("up", "down", "nearest")


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """float32 -> e8m0 bits: the float's biased exponent, rounded by the mantissa; NaN/inf -> 0xFF (NaN)."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.uint16)
    mantissa = bits & 0x7FFFFF
    special = exponent == 0xFF
    if round_mode == "up":
        bump = mantissa > 0
    elif round_mode == "nearest":   # guard bit set and (round or sticky bits or an odd result would follow)
        guard = (bits & 0x400000) > 0
        rest = (bits & 0x3FFFFF) > 0
        bump = guard & (rest | (exponent > 0))
    else:
        bump = np.zeros(bits.shape, bool)
    if saturate:
        bump &= exponent != 0xFE      # rounding the largest exponent up would reach NaN: keep it
    exponent = np.where(special, 0xFF, exponent + bump)
    return np.minimum(exponent, 0xFF).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)


def convert(x: np.ndarray, dst: str, saturate: bool = True, round_mode: str = "up") -> np.ndarray:
    """x as dtype `dst` under the rules above."""
    if dst in SATURATING and saturate and x.dtype.kind != "b":
        top = float(ml_dtypes.finfo(np.dtype(dst)).max)
        wide = x.astype(np.float32) if np.dtype(x.dtype).itemsize < 4 else x
        return np.clip(wide, -top, top).astype(dst)   # NaN passes through clip
    if dst == E8M0:
        return _to_e8m0(x.astype(np.float32), saturate, round_mode)
    return x.astype(dst)
