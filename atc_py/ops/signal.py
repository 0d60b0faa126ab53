"""Signal processing with ONNX's semantics: DFT (forward / inverse, onesided, dft_length, axis as attribute or
input), STFT (frames of a real or complex signal, optional window), the Hann / Hamming / Blackman windows and
MelWeightMatrix. Complex tensors are a trailing dim of 2 (real, imag); a real signal has a trailing 1. The
sizes that decide output shapes (window length, dft_length, frame_step, ...) may be computed at run time
(`infer_depend`); known ones fold at import like any small constant. DFT and STFT are GEMMs with the DFT
matrix on the cube; the generators are scalar loops on the AICPU (CANN has no ONNX parser for these ops: the
types keep ONNX's names)."""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import AIC, AICPU, KernelArgs, OpError, TilingContext, Work, ceil_div
from .core.registry import register
from .core.row_split import RowSplitOp, norm_axis

FLOATS = ("float32", "float16", "float64")
SIZES = ("int32", "int64")


def _scalar_input(node: Node, i: int, what: str):
    """(present, value or None when computed at run time) of a scalar size input."""
    if i >= len(node.inputs) or node.inputs[i] is None:
        return False, None
    d = node.input_desc(i)
    if d.numel != 1:
        raise OpError(f"{what} must hold one value, got shape {list(d.shape)}")
    v = node.const_input(i)
    return True, None if v is None else np.asarray(v).reshape(-1)[0].item()


def _value(inputs, i):
    v = inputs[i] if i < len(inputs) else None
    return None if v is None else np.asarray(v).reshape(-1)[0].item()


def _as_complex(x: np.ndarray) -> np.ndarray:
    """The signal in x's precision (fp32 stays single precision, as the device computes; fp16 widens to fp32)."""
    x = x.astype(np.float64 if x.dtype == np.float64 else np.float32)
    return x[..., 0] if x.shape[-1] == 1 else x[..., 0] + np.complex64(1j) * x[..., 1]


def _pack(c: np.ndarray) -> np.ndarray:
    return np.stack([c.real, c.imag], axis=-1)


@register
class DFT(RowSplitOp):
    op_type = "DFT"
    inputs = ("x", "dft_length?", "axis?")
    attrs = {"axis": 1, "inverse": 0, "onesided": 0}
    infer_depend = frozenset({1, 2})
    core_type = AIC
    dtypes = FLOATS + SIZES

    def _geom(self, x_shape, attrs, length, axis):
        if len(x_shape) < 3 or x_shape[-1] not in (1, 2):
            raise OpError(f"x must be [batch, signal dims..., 1 or 2], got {list(x_shape)}")
        a = norm_axis(int(axis if axis is not None else self.attr(attrs, "axis")), len(x_shape))
        if a == 0 or a == len(x_shape) - 1:
            raise OpError(f"axis {a} must be a signal dim of {list(x_shape)} (not batch or the complex dim)")
        inverse, onesided = bool(self.attr(attrs, "inverse")), bool(self.attr(attrs, "onesided"))
        if onesided and not inverse and x_shape[-1] == 2:
            raise OpError("a onesided forward DFT takes a real signal (trailing dim 1)")
        if length is None:
            length = 2 * (x_shape[a] - 1) if inverse and onesided else x_shape[a]
        if int(length) < 1:
            raise OpError(f"dft_length {length} must be >= 1")
        n = int(length)
        out = list(x_shape)
        out[a] = n // 2 + 1 if onesided and not inverse else n
        out[-1] = 1 if inverse and onesided else 2
        return a, n, inverse, onesided, tuple(out)

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        has_len, length = _scalar_input(node, 1, "dft_length")
        has_axis, axis = _scalar_input(node, 2, "axis")
        if (has_len and length is None) or (has_axis and axis is None):
            return [TensorDesc((-1,) * len(x.shape), x.dtype, "ND", "ND")]
        return [TensorDesc(self._geom(x.shape, node.attrs, length, axis)[4], x.dtype, "ND", "ND")]

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        a, n, inverse, onesided, out = self._geom(x.shape, args.attrs, _value(inputs, 1), _value(inputs, 2))
        sig = _as_complex(x)
        ax = a   # the complex dim is gone, the signal axis keeps its index
        if inverse and onesided:
            res = np.fft.irfft(sig, n=n, axis=ax)[..., None]
        elif inverse:
            res = _pack(np.fft.ifft(sig, n=n, axis=ax))
        else:
            res = np.fft.fft(sig, n=n, axis=ax)
            if onesided:
                res = np.take(res, np.arange(n // 2 + 1), axis=ax)
            res = _pack(res)
        return [self.keep_covered(args, res.astype(x.dtype))]

    def work(self, ctx: TilingContext) -> Work:
        x, y = ctx.inputs[0], ctx.outputs[0]
        a = norm_axis(int(self.attr(ctx.attrs, "axis")), len(x.shape)) if len(x.shape) > 2 else 1
        fm, fk, fn = ctx.soc.mkn_for(x.dtype)
        rows = max(1, x.numel // max(1, x.shape[a]))
        n_out = abs(y.shape[a]) if len(y.shape) > a else 1
        fractals = ceil_div(rows, fm) * ceil_div(2 * x.shape[a], fk) * ceil_div(2 * n_out, fn)
        return Work(fractals=fractals, bytes=x.nbytes + max(y.nbytes, 0), dtype=x.dtype)


@register
class STFT(RowSplitOp):
    """signal [batch, length, 1 or 2] -> [batch, frames, bins, 2]: frames of frame_length every frame_step,
    each times the window (rectangular when absent), DFT'd (onesided: n // 2 + 1 bins of a real signal)."""
    op_type = "STFT"
    inputs = ("signal", "frame_step", "window?", "frame_length?")
    attrs = {"onesided": 1}
    infer_depend = frozenset({1, 3})
    core_type = AIC
    dtypes = FLOATS + SIZES

    def _geom(self, shape, attrs, step, window_len, length):
        if len(shape) != 3 or shape[-1] not in (1, 2):
            raise OpError(f"signal must be [batch, length, 1 or 2], got {list(shape)}")
        n = int(length) if length is not None else (window_len if window_len is not None else shape[1])
        if window_len is not None and length is not None and window_len != n:
            raise OpError(f"window of {window_len} and frame_length {n} differ")
        if int(step) < 1 or not 1 <= n <= shape[1]:
            raise OpError(f"frame_step {step} must be >= 1 and frame_length {n} in [1, {shape[1]}]")
        onesided = bool(self.attr(attrs, "onesided"))
        if onesided and shape[-1] == 2:
            raise OpError("a onesided STFT takes a real signal (trailing dim 1)")
        frames = 1 + (shape[1] - n) // int(step)
        return n, int(step), frames, (shape[0], frames, n // 2 + 1 if onesided else n, 2)

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        _, step = _scalar_input(node, 1, "frame_step")
        has_len, length = _scalar_input(node, 3, "frame_length")
        w = node.input_desc(2) if len(node.inputs) > 2 else None
        if w is not None and len(w.shape) != 1:
            raise OpError(f"window must be 1-D, got {list(w.shape)}")
        if step is None or (has_len and length is None):
            return [TensorDesc((x.shape[0], -1, -1, 2), x.dtype, "ND", "ND")]
        return [TensorDesc(self._geom(x.shape, node.attrs, step, w.shape[0] if w is not None else None, length)[3],
                           x.dtype, "ND", "ND")]

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        window = inputs[2] if len(inputs) > 2 else None
        n, step, frames, out = self._geom(x.shape, args.attrs, _value(inputs, 1),
                                          None if window is None else window.shape[0], _value(inputs, 3))
        sig = _as_complex(x)                                           # [batch, length]
        idx = np.arange(frames)[:, None] * step + np.arange(n)[None, :]
        framed = sig[:, idx] * (1.0 if window is None else window.astype(sig.real.dtype))
        spec = np.fft.fft(framed, axis=-1)[..., :out[2]]
        return [self.keep_covered(args, _pack(spec).astype(x.dtype))]

    def work(self, ctx: TilingContext) -> Work:
        x, y = ctx.inputs[0], ctx.outputs[0]
        fm, fk, fn = ctx.soc.mkn_for(x.dtype)
        frames = max(1, abs(y.shape[0] * y.shape[1]))
        bins = max(1, abs(y.shape[2]))
        n = x.shape[1]
        return Work(fractals=ceil_div(frames, fm) * ceil_div(2 * n, fk) * ceil_div(2 * bins, fn),
                    bytes=x.nbytes + max(y.nbytes, 0), dtype=x.dtype)


class WindowBase(RowSplitOp):
    """A window of `size` values (its value decides the output shape); periodic windows divide by N, symmetric
    ones by N - 1."""
    inputs = ("size",)
    attrs = {"periodic": 1, "dtype": "float32"}
    infer_depend = frozenset({0})
    engine = AICPU
    dtypes = FLOATS + SIZES

    def infer(self, node: Node) -> list[TensorDesc]:
        _, size = _scalar_input(node, 0, "size")
        dt = self.attr(node, "dtype")
        if dt not in FLOATS:
            raise OpError(f"output_datatype {dt} is not a float type")
        if size is not None and int(size) < 0:
            raise OpError(f"window size {size} must be >= 0")
        return [TensorDesc((-1 if size is None else int(size),), dt, "ND", "ND")]

    def compute(self, args: KernelArgs, inputs):
        size = int(_value(inputs, 0))
        denom = size if int(self.attr(args.attrs, "periodic")) else size - 1
        n = np.arange(size, dtype=np.float64)
        phase = 2 * np.pi * n / denom if denom else np.zeros(size)
        return [self.keep_covered(args, self.formula(phase).astype(args.outputs[0].dtype))]

    def formula(self, phase: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def work(self, ctx: TilingContext) -> Work:
        return Work(vector_ops=4 * max(ctx.outputs[0].numel, 1), bytes=max(ctx.outputs[0].nbytes, 8),
                    dtype=ctx.outputs[0].dtype)


@register
class HannWindow(WindowBase):
    op_type = "HannWindow"

    def formula(self, phase):
        return np.sin(phase / 2) ** 2


@register
class HammingWindow(WindowBase):
    op_type = "HammingWindow"

    def formula(self, phase):
        alpha = 25.0 / 46.0
        return alpha - (1 - alpha) * np.cos(phase)


@register
class BlackmanWindow(WindowBase):
    op_type = "BlackmanWindow"

    def formula(self, phase):
        return 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)


@register
class MelWeightMatrix(RowSplitOp):
    """[dft_length // 2 + 1, num_mel_bins] triangular filters evenly spaced on the mel scale between the edge
    frequencies (HTK mel: 2595 log10(1 + f / 700)), over the spectrum bins of a dft_length-point DFT."""
    op_type = "MelWeightMatrix"
    inputs = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    attrs = {"dtype": "float32"}
    infer_depend = frozenset({0, 1})
    engine = AICPU
    dtypes = FLOATS + SIZES

    def infer(self, node: Node) -> list[TensorDesc]:
        _, mels = _scalar_input(node, 0, "num_mel_bins")
        _, length = _scalar_input(node, 1, "dft_length")
        for i, what in ((2, "sample_rate"), (3, "lower_edge_hertz"), (4, "upper_edge_hertz")):
            _scalar_input(node, i, what)
        dt = self.attr(node, "dtype")
        if dt not in FLOATS:
            raise OpError(f"output_datatype {dt} is not a float type")
        if mels is None or length is None:
            return [TensorDesc((-1, -1), dt, "ND", "ND")]
        if int(mels) < 1 or int(length) < 1:
            raise OpError(f"num_mel_bins {mels} and dft_length {length} must be >= 1")
        return [TensorDesc((int(length) // 2 + 1, int(mels)), dt, "ND", "ND")]

    def compute(self, args: KernelArgs, inputs):
        mels, length, rate = int(_value(inputs, 0)), int(_value(inputs, 1)), _value(inputs, 2)
        lo, hi = float(_value(inputs, 3)), float(_value(inputs, 4))
        if not rate or rate <= 0 or lo < 0 or hi < lo:
            raise OpError(f"need sample_rate {rate} > 0 and 0 <= lower_edge_hertz {lo} <= upper_edge_hertz {hi}")
        bins = length // 2 + 1
        mel_lo, mel_hi = 2595 * math.log10(1 + lo / 700), 2595 * math.log10(1 + hi / 700)
        points = np.arange(mels + 2) * (mel_hi - mel_lo) / (mels + 2) + mel_lo
        hz = 700 * (10 ** (points / 2595) - 1)
        edges = np.floor((length + 1) * hz / rate).astype(np.int64)
        out = np.zeros((bins, mels))
        for m in range(mels):
            left, center, right = edges[m], edges[m + 1], edges[m + 2]
            if center == left:
                if 0 <= center < bins:
                    out[center, m] = 1.0
            else:
                j = np.arange(left, center + 1)
                ok = (j >= 0) & (j < bins)
                out[j[ok], m] = (j[ok] - left) / (center - left)
            if right > center:
                j = np.arange(center, right)
                ok = (j >= 0) & (j < bins)
                out[j[ok], m] = (right - j[ok]) / (right - center)
        return [self.keep_covered(args, out.astype(args.outputs[0].dtype))]

    def work(self, ctx: TilingContext) -> Work:
        return Work(vector_ops=4 * max(ctx.outputs[0].numel, 1), bytes=max(ctx.outputs[0].nbytes, 8),
                    dtype=ctx.outputs[0].dtype)

