"""Elementwise unary math with attributes: Exp, Log, Neg, Abs, Sqrt, Rsqrt, Reciprocal, Erf, Sign, Floor, Ceil,
Square, Round, Elu, Selu, LeakyRelu, Softplus, Softsign, HardSigmoid, HardSwish, Shrink, ClipByValue, Relu6, Gelu,
Cast, LogicalNot, and the float tests IsNan and IsInf (bool output). One class per GE op; the kernel walks the
elementwise tiling's blocks."""
from __future__ import annotations

import math

import numpy as np

from ..ir.dtypes import dtype_by_name
from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError
from .core.cast_rules import ROUND_MODES, convert
from .core.elementwise_tiling import for_blocks, run_blocks
from .core.erf_fast import erf_rounded
from .core.impl_modes import HIGH_PERFORMANCE, HIGH_PRECISION, mode_of
from .core.registry import register
from .elementwise import LOW_PRECISION_TYPES, MOVE_TYPES, UnaryOp, rounded_once

FLOATS = ("float32", "float16", "float64", "bfloat16")
NUMERIC = FLOATS + ("int32", "int64", "int8", "int16")



class AttrUnaryOp(UnaryOp):
    """A unary op whose function also takes the node's attributes."""
    dtypes = FLOATS

    @staticmethod
    def fa(x, a):
        raise NotImplementedError

    def compute(self, args, inputs):
        a = {k: self.attr(args.attrs, k) for k in self.attrs}
        dt = args.outputs[0].dtype
        x = inputs[0].reshape(-1)
        if x.dtype.name == "bfloat16":   # the vector unit computes bf16 math in fp32 and rounds the result once
            x = x.astype(np.float32)
        return [run_blocks(args, [x], lambda v: np.asarray(self.fa(v, a)).astype(dt), dt)]


def _unary(op_type: str, fn, ops_per_elem: int = 1, dtypes=FLOATS, intrinsics: tuple[str, ...] = (),
           impl_default: str | None = None):
    cls = type(op_type, (UnaryOp,), {"op_type": op_type, "fn": staticmethod(fn), "dtypes": dtypes,
                                     "vector_ops_per_elem": ops_per_elem, "vector_intrinsics": intrinsics,
                                     "impl_default": impl_default, "__doc__": f"{op_type}: elementwise."})
    return register(cls)


# TBE's exp: high_performance (its default) computes fp16 in fp16, high_precision in fp32 (ops/core/impl_modes.py)
_unary("Exp", rounded_once(np.exp), 2, intrinsics=("vexp",), impl_default=HIGH_PERFORMANCE)
_unary("Log", rounded_once(np.log), 3, intrinsics=("vln",))
_unary("Neg", np.negative, 1, NUMERIC)
_unary("Abs", np.abs, 1, NUMERIC)
_unary("Sqrt", np.sqrt, 2)
_unary("Rsqrt", lambda x: 1 / np.sqrt(x), 3)
_unary("Reciprocal", lambda x: 1 / x, 2)
_unary("Erf", erf_rounded, 8, intrinsics=("vexp",))
_unary("Sign", np.sign, 2, NUMERIC)
_unary("Floor", np.floor, 1)
_unary("Ceil", np.ceil, 1)
_unary("Square", np.square, 1, NUMERIC)
_unary("Relu6", lambda x: np.clip(x, 0, 6), 2)
_unary("Softsign", lambda x: x / (1 + np.abs(x)), 3)
def hard_swish(x):
    """ONNX's function body: x * HardSigmoid(x), alpha 1/6 and beta 0.5 float attributes; the gate in fp32 (fp16
    input: rounded to it), then the product. x times 1/6, not x / 6: that rounds ~10 % of fp32 results an ulp
    away, enough to move a QuantizeLinear after it across a rounding boundary."""
    gate = np.clip(x * np.float32(1 / 6) + np.float32(0.5), 0, 1)
    return x * gate.astype(x.dtype)


_unary("HardSwish", hard_swish, 4)
_unary("LogicalNot", np.logical_not, 1, ("bool",))


# TBE's fast_gelu_v2, the kernel gelu.py runs with high_performance: x * (sgn(x) * (A * (min(|C x|, -B) + B)^2
# + 0.5) + 0.5), every step in the input dtype (its constants cast to it)
FAST_GELU_A, FAST_GELU_B, FAST_GELU_C = -0.1444, -1.769, 0.7071


def fast_gelu(x: np.ndarray) -> np.ndarray:
    """TBE's fast GELU in x's dtype, step by step as the kernel's vector instructions round. sgn comes from a
    reciprocal of |x| (TBE's vrec, modelled as exact); sgn(0) is 0 (ASSUMED: 1/0 saturates, so 0 * it is 0)."""
    dt = x.dtype.type
    t = np.minimum(np.abs(x * dt(FAST_GELU_C)), dt(-FAST_GELU_B)) + dt(FAST_GELU_B)
    poly = t * t * dt(FAST_GELU_A) + dt(0.5)
    ax = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        sgn = np.where(ax == 0, dt(0), x * (dt(1) / ax))
    return (x * (poly * sgn + dt(0.5))).astype(x.dtype)


@register
class Gelu(UnaryOp):
    """GELU, x * Phi(x) with erf (ONNX Gelu, approximate='none'). Two implementations (ops/core/impl_modes.py):
    high_precision, the kernel's default as TBE's gelu.py, computes fp16 in fp32 inside and rounds once;
    high_performance is TBE's fast_gelu_v2 polynomial in the input dtype (its error against GELU reaches 0.018).
    TBE's high-precision kernel evaluates the tanh form (within 5e-4 of erf's); atc-py keeps ONNX's erf, as its
    fp32 Gelu does."""
    op_type = "Gelu"
    dtypes = FLOATS
    vector_ops_per_elem = 10
    vector_intrinsics = ("vexp",)
    impl_default = HIGH_PRECISION

    @staticmethod
    def fn(x):
        return 0.5 * x * (1 + erf_rounded(x / math.sqrt(2)))

    def own_kernel_only(self, attrs) -> bool:
        return mode_of(self, attrs) == HIGH_PERFORMANCE

    def compute(self, args, inputs):
        fn = fast_gelu if self.own_kernel_only(args.attrs) else self.fn
        return [run_blocks(args, [inputs[0].reshape(-1)], fn, args.outputs[0].dtype)]


@register
class Elu(AttrUnaryOp):
    op_type = "Elu"
    vector_intrinsics = ("vexp",)
    attrs = {"alpha": 1.0}
    vector_ops_per_elem = 4
    fa = staticmethod(lambda x, a: np.where(x > 0, x, a["alpha"] * (np.exp(np.minimum(x, 0)) - 1)))


@register
class Selu(AttrUnaryOp):
    op_type = "Selu"
    vector_intrinsics = ("vexp",)
    attrs = {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}
    vector_ops_per_elem = 5
    fa = staticmethod(lambda x, a: a["gamma"] * np.where(x > 0, x, a["alpha"] * (np.exp(np.minimum(x, 0)) - 1)))


@register
class LeakyRelu(AttrUnaryOp):
    op_type = "LeakyRelu"
    attrs = {"negative_slope": 0.01}
    vector_ops_per_elem = 2
    fa = staticmethod(lambda x, a: np.where(x >= 0, x, x * a["negative_slope"]))


@register
class Softplus(AttrUnaryOp):
    op_type = "Softplus"
    vector_intrinsics = ("vexp", "vln")
    attrs = {}
    vector_ops_per_elem = 4
    fa = staticmethod(lambda x, a: np.logaddexp(0, x))


@register
class HardSigmoid(AttrUnaryOp):
    op_type = "HardSigmoid"
    attrs = {"alpha": 0.2, "beta": 0.5}
    vector_ops_per_elem = 3
    fa = staticmethod(lambda x, a: np.clip(a["alpha"] * x + a["beta"], 0, 1))


@register
class Shrink(AttrUnaryOp):
    op_type = "Shrink"
    attrs = {"lambd": 0.5, "bias": 0.0}
    dtypes = NUMERIC
    vector_ops_per_elem = 4
    fa = staticmethod(lambda x, a: np.where(x < -a["lambd"], x + a["bias"],
                                            np.where(x > a["lambd"], x - a["bias"], 0)))


@register
class ClipByValue(AttrUnaryOp):
    """Clip with bounds as attributes (the frontend takes them from constant inputs)."""
    op_type = "ClipByValue"
    attrs = {"clip_value_min": None, "clip_value_max": None}
    dtypes = NUMERIC
    vector_ops_per_elem = 2

    @staticmethod
    def fa(x, a):
        lo, hi = a["clip_value_min"], a["clip_value_max"]
        if lo is not None:
            x = np.maximum(x, lo)
        if hi is not None:
            x = np.minimum(x, hi)
        return x


@register
class Cast(UnaryOp):
    """A conversion to `dst_type`; to the low-precision types by cast_rules (float8 saturation, e8m0 rounding)."""
    op_type = "Cast"
    attrs = {"dst_type": "float32", "saturate": True, "round_mode": "up"}   # dst_type: a numpy dtype name
    dtypes = MOVE_TYPES

    def infer(self, node: Node) -> list[TensorDesc]:
        d = node.input_desc(0)
        dst = str(self.attr(node, "dst_type"))
        try:
            dtype_by_name(dst)
        except KeyError:
            raise OpError(f"Cast to {dst} is not supported") from None
        if self.attr(node, "round_mode") not in ROUND_MODES:
            raise OpError(f"round_mode '{self.attr(node, 'round_mode')}' is not one of {', '.join(ROUND_MODES)}")
        return [TensorDesc(d.shape, dst, d.format, d.origin_format)]

    def compute(self, args, inputs):
        x = inputs[0].reshape(-1)
        dst = args.outputs[0].dtype
        out = np.zeros(args.outputs[0].numel, dst)
        if dst in LOW_PRECISION_TYPES or x.dtype.name in LOW_PRECISION_TYPES:
            sat, mode = bool(self.attr(args.attrs, "saturate")), str(self.attr(args.attrs, "round_mode"))
            for_blocks(args, lambda lo, hi: np.copyto(out[lo:hi], convert(x[lo:hi], dst, sat, mode)))
        else:
            def body(lo, hi):
                with np.errstate(over="ignore", invalid="ignore"):   # out-of-range values wrap/saturate as C casts do
                    np.copyto(out[lo:hi], x[lo:hi], casting="unsafe")   # one pass, no temp
            for_blocks(args, body)
        return [out.reshape(args.outputs[0].shape)]


class _FloatPredicate(UnaryOp):
    """A float -> bool elementwise test."""
    dtypes = FLOATS + ("bool",)

    def infer(self, node: Node) -> list[TensorDesc]:
        d = node.input_desc(0)
        if d.dtype not in FLOATS:
            raise OpError(f"{self.op_type} takes a float tensor, got {d.dtype}")
        return [TensorDesc(d.shape, "bool", d.format, d.origin_format)]

    def compute(self, args: KernelArgs, inputs):
        a = {k: self.attr(args.attrs, k) for k in self.attrs}
        return [run_blocks(args, [inputs[0].reshape(-1)], lambda x: self.test(x, a), "bool")]

    @staticmethod
    def test(x, a):
        raise NotImplementedError


@register
class IsNan(_FloatPredicate):
    op_type = "IsNan"
    test = staticmethod(lambda x, a: np.isnan(x))


@register
class IsInf(_FloatPredicate):
    """Infinities, of the signs `detect_positive` / `detect_negative` select."""
    op_type = "IsInf"
    attrs = {"detect_positive": True, "detect_negative": True}
    vector_ops_per_elem = 2

    @staticmethod
    def test(x, a):
        pos = np.isposinf(x) if a["detect_positive"] else np.zeros(x.shape, bool)
        neg = np.isneginf(x) if a["detect_negative"] else np.zeros(x.shape, bool)
        return pos | neg


@register
class Round(UnaryOp):
    """Round half to even (ONNX Round, numpy's rounding)."""
    op_type = "Round"
    dtypes = FLOATS
    vector_ops_per_elem = 2
    fn = staticmethod(np.round)
