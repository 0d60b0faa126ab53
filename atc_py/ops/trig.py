"""Trigonometric and hyperbolic functions (ONNX Sin ... Atanh; CANN's op types of the same names).

Elementwise: the elementwise tiling splits the flattened tensor over vector cores and the kernel walks the
blocks (UnaryOp). The cost per element is the vector instructions of the usual Ascend C expansion: a range
reduction plus a polynomial for the circular functions, exp/log compositions for the hyperbolic ones."""
from __future__ import annotations

import numpy as np

from .core.registry import register
from .elementwise import FLOAT_TYPES, UnaryOp, rounded_once


def _trig(op_type: str, fn, ops_per_elem: int, what: str):
    return register(type(op_type, (UnaryOp,), {"op_type": op_type, "fn": staticmethod(rounded_once(fn)), "dtypes": FLOAT_TYPES,
                                               "vector_ops_per_elem": ops_per_elem,
                                               "__doc__": f"{op_type}: elementwise {what}."}))


# (GE op type, numpy ufunc, vector ops per element, what)
_TABLE = [
    ("Sin", np.sin, 10, "sine"),
    ("Cos", np.cos, 10, "cosine"),
    ("Tan", np.tan, 12, "tangent (sin / cos)"),
    ("Asin", np.arcsin, 14, "arcsine"),
    ("Acos", np.arccos, 15, "arccosine"),
    ("Atan", np.arctan, 12, "arctangent"),
    ("Sinh", np.sinh, 6, "hyperbolic sine ((e^x - e^-x) / 2)"),
    ("Cosh", np.cosh, 6, "hyperbolic cosine ((e^x + e^-x) / 2)"),
    ("Asinh", np.arcsinh, 7, "inverse hyperbolic sine (log(x + sqrt(x^2 + 1)))"),
    ("Acosh", np.arccosh, 7, "inverse hyperbolic cosine (log(x + sqrt(x^2 - 1)))"),
    ("Atanh", np.arctanh, 6, "inverse hyperbolic tangent (log((1 + x) / (1 - x)) / 2)"),
]
for _op, _fn, _ops, _what in _TABLE:
    _trig(_op, _fn, _ops, _what)
