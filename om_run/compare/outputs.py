"""Outputs against expected values: the per-output errors om-run prints and om-sweep records."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OutputError:
    name: str
    shape: tuple          # of the output
    expected_shape: tuple
    max_abs: float        # 0 when the shapes differ (nothing compared)
    max_rel: float
    mismatched: int       # elements outside rtol/atol; the whole size when the shapes differ
    size: int

    @property
    def shape_ok(self) -> bool:
        return self.shape == self.expected_shape

    @property
    def ok(self) -> bool:
        return self.shape_ok and self.mismatched == 0


FP16_COMPUTE = {"force_fp16", "allow_fp32_to_fp16", "allow_mix_precision", "allow_mix_precision_fp16",
                "cube_fp16in_fp32out"}
BF16_COMPUTE = {"allow_mix_precision_bf16", "allow_fp32_to_bf16"}


def default_tolerance(model) -> float:
    """1e-4 for a model computing in fp32; 1e-2 when atc-py built it with fp16 compute (whose rounding alone is
    ~5e-4 per op against an fp32 reference), 5e-2 with bf16 (8 mantissa bits: ~4e-3 per op)."""
    mode = model.attrs.get("precision_mode")
    return 5e-2 if mode in BF16_COMPUTE else 1e-2 if mode in FP16_COMPUTE else 1e-4


def compare_outputs(model, outputs, expected, rtol: float, atol: float) -> list[OutputError]:
    """Max abs / rel error and mismatches per output, in float64 (np.isclose semantics, NaN == NaN)."""
    result = []
    for io, got, exp in zip(model.outputs, outputs, expected):
        if got.shape != exp.shape:
            result.append(OutputError(io.name, tuple(got.shape), tuple(exp.shape), 0.0, 0.0, got.size, got.size))
            continue
        g, e = got.astype(np.float64), exp.astype(np.float64)
        abs_err = np.abs(g - e)
        rel_err = abs_err / np.maximum(np.abs(e), np.finfo(np.float32).tiny)
        bad = ~np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
        result.append(OutputError(io.name, tuple(got.shape), tuple(exp.shape), float(abs_err.max(initial=0)),
                                  float(rel_err.max(initial=0)), int(bad.sum()), int(bad.size)))
    return result
