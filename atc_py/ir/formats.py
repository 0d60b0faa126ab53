"""CANN's device formats: the shapes they give a tensor and the numpy conversions to and from the framework's.

* NC1HWC0 ("5HD"): an NCHW (or NHWC) activation as [N, C1, H, W, C0], C1 = ceil(C / C0), the channels padded with
  zeros to C1 * C0; C0 = 16 for fp16/fp32 on AI Core, 32 for int8/uint8 (one 32-byte block of int8).
* FRACTAL_Z: a convolution filter [Cout, Cin, kh, kw] as [C1 * kh * kw, N1, 16, C0], N1 = ceil(Cout / 16): 16 x C0
  fractals the cube unit loads whole, Cout and Cin padded with zeros.
* FRACTAL_NZ: a matrix [..., M, N] as [..., ceil(N / 16), ceil(M / 16), 16, 16].
* NDC1HWC0 ("6HD"): a 3-D convolution's NCDHW activation as [N, D, C1, H, W, C0].
* FRACTAL_Z_3D: a 3-D filter [Cout, Cin, kd, kh, kw] as [kd * C1 * kh * kw, N1, 16, C0].

A device-format tensor keeps its framework shape and format as origin_shape / origin_format (GE records both on
every descriptor): the conversions need them back (how many channels were padded)."""
from __future__ import annotations

import math

import numpy as np

NC1HWC0 = "NC1HWC0"
FRACTAL_Z = "FRACTAL_Z"
FRACTAL_NZ = "FRACTAL_NZ"
NC1HWC0_C04 = "NC1HWC0_C04"      # --enable_small_channel: a first convolution's input of <= 4 channels, C0 = 4
FRACTAL_Z_C04 = "FRACTAL_Z_C04"  # its filter: (kh, kw, 4 channels) packed along K, [ceil(kh*kw*4/16), N1, 16, 16]
NDC1HWC0 = "NDC1HWC0"            # Conv3D / pooling 3-D activations
FRACTAL_Z_3D = "FRACTAL_Z_3D"    # Conv3D filters
DEVICE_FORMATS = frozenset({NC1HWC0, FRACTAL_Z, FRACTAL_NZ, NC1HWC0_C04, FRACTAL_Z_C04, NDC1HWC0, FRACTAL_Z_3D})
C04 = 4
CUBE_BLOCK = 16          # the cube's fractal edge (N0, M0)
SMALL_CHANNEL = "_small_channel"   # node attr: a convolution whose filter is FRACTAL_Z_C04 (its cube work, its tiling)


class FormatError(ValueError):
    pass


def c0_for(dtype: str, fmt: str = NC1HWC0) -> int:
    if fmt == NC1HWC0_C04:
        return C04
    return 32 if dtype in ("int8", "uint8") else 16


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def device_shape(origin_shape: tuple, fmt: str, origin_format: str, dtype: str) -> tuple[int, ...]:
    """The shape a tensor of `origin_shape` (in `origin_format`) has in device format `fmt`."""
    c0 = c0_for(dtype, fmt)
    if fmt in (NC1HWC0, NC1HWC0_C04):
        n, c, h, w = _nchw(origin_shape, origin_format)
        return (n, _ceil(c, c0), h, w, c0)
    if fmt == NDC1HWC0:
        if len(origin_shape) != 5 or origin_format not in ("NCDHW", "ND"):
            raise FormatError(f"NDC1HWC0 takes a 5-D NCDHW tensor, not {list(origin_shape)}")
        n, c, d, h, w = origin_shape
        return (n, d, _ceil(c, c0), h, w, c0)
    if fmt == FRACTAL_Z_3D:
        if len(origin_shape) != 5:
            raise FormatError(f"FRACTAL_Z_3D takes a 5-D filter, not {list(origin_shape)}")
        cout, cin, kd, kh, kw = origin_shape
        return (kd * _ceil(cin, c0) * kh * kw, _ceil(cout, CUBE_BLOCK), CUBE_BLOCK, c0)
    if fmt == FRACTAL_Z_C04:
        if len(origin_shape) != 4 or origin_shape[1] > C04:
            raise FormatError(f"FRACTAL_Z_C04 takes a 4-D filter of <= 4 input channels, not {list(origin_shape)}")
        cout, _, kh, kw = origin_shape
        return (_ceil(kh * kw * C04, CUBE_BLOCK), _ceil(cout, CUBE_BLOCK), CUBE_BLOCK, CUBE_BLOCK)
    if fmt == FRACTAL_Z:
        if len(origin_shape) != 4:
            raise FormatError(f"FRACTAL_Z takes a 4-D filter, not {list(origin_shape)}")
        cout, cin, kh, kw = origin_shape
        return (_ceil(cin, c0) * kh * kw, _ceil(cout, CUBE_BLOCK), CUBE_BLOCK, c0)
    if fmt == FRACTAL_NZ:
        if len(origin_shape) < 2:
            raise FormatError(f"FRACTAL_NZ takes a matrix, not {list(origin_shape)}")
        *batch, m, n = origin_shape
        return (*batch, _ceil(n, CUBE_BLOCK), _ceil(m, CUBE_BLOCK), CUBE_BLOCK, CUBE_BLOCK)
    return tuple(origin_shape)


def _nchw(shape: tuple, origin_format: str) -> tuple[int, int, int, int]:
    if len(shape) != 4 or origin_format not in ("NCHW", "NHWC", "ND"):
        raise FormatError(f"NC1HWC0 takes a 4-D NCHW / NHWC tensor, not {origin_format} {list(shape)}")
    if origin_format == "NHWC":
        n, h, w, c = shape
        return n, c, h, w
    return tuple(shape)


def to_device(a: np.ndarray, fmt: str, origin_format: str) -> np.ndarray:
    """A framework-layout array in device format `fmt` (padding zeros)."""
    if fmt == FRACTAL_Z_C04:
        cout, cin, kh, kw = a.shape
        k1, n1 = _ceil(kh * kw * C04, CUBE_BLOCK), _ceil(cout, CUBE_BLOCK)
        hwc = np.zeros((n1 * CUBE_BLOCK, kh, kw, C04), a.dtype)
        hwc[:cout, :, :, :cin] = a.transpose(0, 2, 3, 1)
        k = np.zeros((n1 * CUBE_BLOCK, k1 * CUBE_BLOCK), a.dtype)
        k[:, :kh * kw * C04] = hwc.reshape(n1 * CUBE_BLOCK, -1)
        return np.ascontiguousarray(k.reshape(n1, CUBE_BLOCK, k1, CUBE_BLOCK).transpose(2, 0, 1, 3))
    if fmt in (NC1HWC0, NC1HWC0_C04):   # one strided copy into the 5HD array (its padding zeroed where there is some)
        x = np.transpose(a, (0, 3, 1, 2)) if origin_format == "NHWC" else a
        n, c, h, w = x.shape
        c0 = c0_for(str(a.dtype), fmt)
        c1, full = _ceil(c, c0), c // c0
        out = np.empty((n, c1, h, w, c0), a.dtype)
        blocks = out.transpose(0, 1, 4, 2, 3)            # (n, c1, c0, h, w): a view of out
        if full:
            blocks[:, :full] = x[:, :full * c0].reshape(n, full, c0, h, w)
        if c % c0:
            blocks[:, full, :c - full * c0] = x[:, full * c0:]
            blocks[:, full, c - full * c0:] = 0
        return out
    if fmt == NDC1HWC0:                 # 5HD per depth slice: [N, D, C1, H, W, C0]
        n, c, d, h, w = a.shape
        return np.ascontiguousarray(to_device(a.transpose(0, 2, 1, 3, 4).reshape(n * d, c, h, w), NC1HWC0, "NCHW")
                                    .reshape(n, d, -1, h, w, c0_for(str(a.dtype))))
    if fmt == FRACTAL_Z_3D:             # FRACTAL_Z over (kd, C1, kh, kw): each depth tap's 2-D filter in turn
        cout, cin, kd, kh, kw = a.shape
        taps = [to_device(np.ascontiguousarray(a[:, :, t]), FRACTAL_Z, "NCHW") for t in range(kd)]
        return np.ascontiguousarray(np.concatenate(taps, axis=0))
    if fmt == FRACTAL_Z:
        cout, cin, kh, kw = a.shape
        c0 = c0_for(str(a.dtype))
        c1, n1 = _ceil(cin, c0), _ceil(cout, CUBE_BLOCK)
        padded = np.zeros((n1 * CUBE_BLOCK, c1 * c0, kh, kw), a.dtype)
        padded[:cout, :cin] = a
        z = padded.reshape(n1, CUBE_BLOCK, c1, c0, kh, kw).transpose(2, 4, 5, 0, 1, 3)
        return np.ascontiguousarray(z.reshape(c1 * kh * kw, n1, CUBE_BLOCK, c0))
    if fmt == FRACTAL_NZ:
        *batch, m, n = a.shape
        m1, n1 = _ceil(m, CUBE_BLOCK), _ceil(n, CUBE_BLOCK)
        padded = np.zeros((*batch, m1 * CUBE_BLOCK, n1 * CUBE_BLOCK), a.dtype)
        padded[..., :m, :n] = a
        b = len(batch)
        z = padded.reshape(*batch, m1, CUBE_BLOCK, n1, CUBE_BLOCK)
        z = z.transpose(*range(b), b + 2, b, b + 1, b + 3)
        return np.ascontiguousarray(z)
    return a


def from_device(a: np.ndarray, fmt: str, origin_shape: tuple, origin_format: str) -> np.ndarray:
    """A device-format array back in the framework's layout and shape (padding dropped)."""
    want = device_shape(origin_shape, fmt, origin_format, str(a.dtype))
    if tuple(a.shape) != want:
        raise FormatError(f"a {fmt} tensor of shape {list(a.shape)} is not {list(want)} for origin "
                          f"{list(origin_shape)}")
    if fmt == FRACTAL_Z_C04:
        cout, cin, kh, kw = origin_shape
        k1, n1 = a.shape[0], a.shape[1]
        k = a.transpose(1, 2, 0, 3).reshape(n1 * CUBE_BLOCK, k1 * CUBE_BLOCK)[:cout, :kh * kw * C04]
        return np.ascontiguousarray(k.reshape(cout, kh, kw, C04)[..., :cin].transpose(0, 3, 1, 2))
    if fmt in (NC1HWC0, NC1HWC0_C04):   # one strided copy out of the 5HD array
        n, c1, h, w, c0 = a.shape
        _, c, _, _ = _nchw(origin_shape, origin_format)
        if origin_format == "NHWC":
            return np.ascontiguousarray(a.transpose(0, 2, 3, 1, 4).reshape(n, h, w, c1 * c0)[..., :c])
        out = np.empty((n, c, h, w), a.dtype)
        blocks = a.transpose(0, 1, 4, 2, 3)              # (n, c1, c0, h, w)
        full = c // c0
        if full:
            out[:, :full * c0].reshape(n, full, c0, h, w)[...] = blocks[:, :full]
        if c % c0:
            out[:, full * c0:] = blocks[:, full, :c - full * c0]
        return out
    if fmt == NDC1HWC0:
        n, c, d, h, w = origin_shape
        flat = a.reshape(n * d, a.shape[2], h, w, a.shape[5])
        return np.ascontiguousarray(from_device(flat, NC1HWC0, (n * d, c, h, w), "NCHW")
                                    .reshape(n, d, c, h, w).transpose(0, 2, 1, 3, 4))
    if fmt == FRACTAL_Z_3D:
        cout, cin, kd, kh, kw = origin_shape
        taps = np.split(a, kd, axis=0)
        return np.ascontiguousarray(np.stack([from_device(t, FRACTAL_Z, (cout, cin, kh, kw), "NCHW") for t in taps],
                                             axis=2))
    if fmt == FRACTAL_Z:
        cout, cin, kh, kw = origin_shape
        _, n1, _, c0 = a.shape
        c1 = a.shape[0] // (kh * kw)
        z = a.reshape(c1, kh, kw, n1, CUBE_BLOCK, c0).transpose(3, 4, 0, 5, 1, 2)
        return np.ascontiguousarray(z.reshape(n1 * CUBE_BLOCK, c1 * c0, kh, kw)[:cout, :cin])
    if fmt == FRACTAL_NZ:
        *batch, m, n = origin_shape
        b = len(batch)
        z = a.transpose(*range(b), b + 1, b + 2, b, b + 3)
        m1, n1 = a.shape[b + 1], a.shape[b]
        return np.ascontiguousarray(z.reshape(*batch, m1 * CUBE_BLOCK, n1 * CUBE_BLOCK)[..., :m, :n])
    return a


def padded_ratio(origin_shape: tuple, fmt: str, origin_format: str, dtype: str) -> float:
    """Device elements per framework element (a 3-channel 5HD tensor holds 16 channels: 5.33)."""
    logical = math.prod(origin_shape)
    return math.prod(device_shape(origin_shape, fmt, origin_format, dtype)) / logical if logical else 1.0
