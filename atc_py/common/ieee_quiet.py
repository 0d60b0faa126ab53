"""Floating-point exceptions are results, not warnings: an AI Core computing log(0) or exp(1000) writes -inf /
inf / NaN and says nothing, so neither may the compiler (constant folding) nor the simulator (kernels).
numpy's `RuntimeWarning: divide by zero encountered in log` lines would otherwise land in the user's
console, and in worker threads np.errstate alone does not reach (it is per thread/context)."""
from __future__ import annotations

import warnings

import numpy as np

_NUMPY_FP_MESSAGE = r"(divide by zero|overflow|underflow|invalid value) encountered in"


def quiet_ieee_warnings() -> None:
    """Silence numpy's floating-point RuntimeWarnings for the rest of this process (CLI entry points only)."""
    np.seterr(all="ignore")
    warnings.filterwarnings("ignore", message=_NUMPY_FP_MESSAGE, category=RuntimeWarning)
