"""float32 -> float16 for constant folding, bit-equal to numpy's cast (round to nearest even) and fast on
every value.

numpy converts in software when a value under- or overflows fp16 and sets the floating-point status per
element: about 13x slower than its vector path (1M values: 70 ms against 5 ms). force_fp16 casts every cube
weight at compile time, and weights whose results are fp16 subnormals are common (the light models' random
copies: 0.28 s of DenseNet-121's compile). Here only values that give a normal fp16 go through numpy's
cast; fp16 subnormals (|x| < 2^-14) are m x 2^-24 with m = rint(|x| x 2^24), which is exact in float32
and rounds half to even as the cast does (m = 1024 is the smallest normal: its bits are the same); values
at or beyond 65520 (the midpoint past fp16's largest, 65504) are infinities; NaNs stay with numpy. A big
array whose sample has under 1% of such values goes to numpy's cast whole (its slow path then costs less
than the masks)."""
from __future__ import annotations

import numpy as np

MIN_NORMAL = np.float32(2.0 ** -14)
OVERFLOW = np.float32(65520.0)
SUBNORMAL_SCALE = np.float32(2.0 ** 24)
# which way is faster is judged on every SAMPLE_STEP-th value (the bits are the same either way)
SAMPLE_MIN, SAMPLE_STEP, FEW = 1 << 16, 61, 0.01


def float32_to_float16(x: np.ndarray) -> np.ndarray:
    """x.astype(float16), same bits, without numpy's slow path for values outside fp16's normal range."""
    x = np.asarray(x, np.float32)
    if x.size >= SAMPLE_MIN:   # few abnormal values (trained weights): numpy's own pass is the fastest
        sample = np.abs(x.reshape(-1)[::SAMPLE_STEP])
        if np.count_nonzero((sample < MIN_NORMAL) | (sample >= OVERFLOW)) <= sample.size * FEW:
            with np.errstate(over="ignore", under="ignore"):   # infinities and subnormals are what is asked
                return x.astype(np.float16)
    a = np.abs(x)
    tiny = a < MIN_NORMAL
    huge = a >= OVERFLOW
    odd = tiny | huge
    if not odd.any():
        return x.astype(np.float16)
    out = np.where(odd, np.float32(0), x).astype(np.float16)
    bits = out.view(np.uint16)
    sign = np.signbit(x).astype(np.uint16) << 15
    # whole-array passes (no boolean gathers); a is clipped first so the uint16 cast never overflows
    m = np.rint(np.fmin(a, MIN_NORMAL) * SUBNORMAL_SCALE).astype(np.uint16)
    np.copyto(bits, m | sign, where=tiny)
    np.copyto(bits, np.uint16(0x7C00) | sign, where=huge)
    return out


FP16_MAX = np.float32(65504.0)


def saturate_to_float16(x: np.ndarray) -> tuple[np.ndarray, int]:
    """A constant's fp32 -> fp16 as atc-py casts weights and constants for fp16 kernels: finite values beyond fp16's
    range become +-65504 instead of infinities (an exporter's mask fill of float32's lowest, -3.4e38, would be -inf
    and turn a fully masked softmax row into NaN); infinities and NaNs stay. Returns the array and how many values
    saturated."""
    x = np.asarray(x, np.float32)
    if x.size == 0:
        return x.astype(np.float16), 0
    with np.errstate(invalid="ignore"):   # fmin/fmax skip NaNs: two passes, no array the size of x
        lo, hi = np.fmin.reduce(x, axis=None), np.fmax.reduce(x, axis=None)
    if -OVERFLOW < lo and hi < OVERFLOW:   # every value within fp16's range: a weight's case
        return float32_to_float16(x), 0
    over = np.isfinite(x) & (np.abs(x) >= OVERFLOW)
    n = int(np.count_nonzero(over))
    if n:
        x = np.where(over, np.copysign(FP16_MAX, x), x)
    return float32_to_float16(x), n
