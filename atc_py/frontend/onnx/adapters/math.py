"""Math adapters: unary functions (trigonometric and hyperbolic ones, Round, IsNaN and IsInf included), broadcasting
binaries (Pow with an exponent of another type), comparisons, Where, Clip, variadic Max/Min/Mean/Sum."""
from __future__ import annotations

import numpy as np

from ..adapter import NodeCtx, OnnxOp, onnx_op


def _unary(onnx_name: str, ge_type: str, since: int, attrs: dict | None = None):
    """ONNX op -> GE op of the same arity; `attrs` maps ONNX attribute -> (GE name, default)."""
    def impl(cls, ctx: NodeCtx):
        ge_attrs = {ge: type(default)(ctx.attr(name, default)) for name, (ge, default) in (attrs or {}).items()}
        return ctx.emit(ge_type, [ctx.input(0)], ge_attrs)
    cls = type(onnx_name, (OnnxOp,), {f"_impl_v{since}": classmethod(impl)})
    return onnx_op(onnx_name)(cls)


for _name, _ge, _since in [("Exp", "Exp", 6), ("Log", "Log", 6), ("Neg", "Neg", 6), ("Abs", "Abs", 6),
                           ("Sqrt", "Sqrt", 6), ("Reciprocal", "Reciprocal", 6), ("Erf", "Erf", 9),
                           ("Sign", "Sign", 9), ("Floor", "Floor", 6), ("Ceil", "Ceil", 6),
                           ("Softsign", "Softsign", 1), ("Softplus", "Softplus", 1), ("HardSwish", "HardSwish", 14),
                           ("Not", "LogicalNot", 1)]:
    _unary(_name, _ge, _since)
_unary("Elu", "Elu", 6, {"alpha": ("alpha", 1.0)})
_unary("Selu", "Selu", 6, {"alpha": ("alpha", 1.67326319217681884765625),
                           "gamma": ("gamma", 1.05070102214813232421875)})
_unary("LeakyRelu", "LeakyRelu", 6, {"alpha": ("negative_slope", 0.01)})
_unary("HardSigmoid", "HardSigmoid", 6, {"alpha": ("alpha", 0.2), "beta": ("beta", 0.5)})
_unary("Shrink", "Shrink", 9, {"lambd": ("lambd", 0.5), "bias": ("bias", 0.0)})


for _name, _since in [("Sin", 7), ("Cos", 7), ("Tan", 7), ("Asin", 7), ("Acos", 7), ("Atan", 7), ("Sinh", 9),
                      ("Cosh", 9), ("Asinh", 9), ("Acosh", 9), ("Atanh", 9), ("Round", 11)]:
    _unary(_name, _name, _since)
_unary("IsNaN", "IsNan", 9)


@onnx_op("IsInf")
class IsInf(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        return ctx.emit("IsInf", [ctx.input(0)], {"detect_positive": bool(ctx.attr("detect_positive", 1)),
                                                  "detect_negative": bool(ctx.attr("detect_negative", 1))})



@onnx_op("Gelu")
class Gelu(OnnxOp):
    @classmethod
    def _impl_v20(cls, ctx: NodeCtx):
        approximate = ctx.attr("approximate", "none")
        if approximate == "none":
            return ctx.emit("Gelu", [ctx.input(0)])
        return ctx.emit("GeluV2", [ctx.input(0)], {"approximate": str(approximate)})


def legacy_broadcast(ctx: NodeCtx, a, b):
    """Opset < 7 binaries: with broadcast=1, B aligns with A starting at `axis` (default: trailing)."""
    if not ctx.attr("broadcast", 0) or b is None:
        return b
    ra, rb = len(a.desc.shape), len(b.desc.shape)
    axis = ctx.attr("axis")
    if axis is None or rb == ra:
        return b
    axis = int(axis) % ra
    shape = list(b.desc.shape) + [1] * (ra - axis - rb)
    return ctx.emit("Reshape", [b, ctx.make_const("bshape", np.array(shape, np.int64))], suffix="bcast")[0]


def _binary(onnx_name: str, ge_type: str, since: int, legacy: bool = True):
    def impl(cls, ctx: NodeCtx):
        return ctx.emit(ge_type, [ctx.input(0), ctx.input(1)])

    def impl_legacy(cls, ctx: NodeCtx):
        a = ctx.input(0)
        return ctx.emit(ge_type, [a, legacy_broadcast(ctx, a, ctx.input(1))])
    body = {f"_impl_v{since}": classmethod(impl)}
    if legacy and since > 1:
        body["_impl_v1"] = classmethod(impl_legacy)
    return onnx_op(onnx_name)(type(onnx_name, (OnnxOp,), body))


_binary("Add", "Add", 7)
_binary("Sub", "Sub", 7)
_binary("Mul", "Mul", 7)
_binary("Div", "RealDiv", 7)
_binary("Equal", "Equal", 7)
_binary("Less", "Less", 7)
_binary("Greater", "Greater", 7)
_binary("LessOrEqual", "LessEqual", 12, legacy=False)
_binary("GreaterOrEqual", "GreaterEqual", 12, legacy=False)
_binary("And", "LogicalAnd", 7)
_binary("Or", "LogicalOr", 7)
_binary("Xor", "LogicalXor", 7)


@onnx_op("Pow")
class Pow(OnnxOp):
    """Pow-12+ lets the exponent have another type: a float exponent of an integer base computes in the
    exponent's type and casts back (2 ** 0.5 is 1, not 2 ** 0); an integer exponent of a float base is cast to
    the base's type."""

    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        a = ctx.input(0)
        return ctx.emit("Pow", [a, legacy_broadcast(ctx, a, ctx.input(1))])

    @classmethod
    def _impl_v7(cls, ctx: NodeCtx):
        a, b = ctx.input(0), ctx.input(1)
        ta, tb = a.desc.dtype, b.desc.dtype
        if ta == tb:
            return ctx.emit("Pow", [a, b])
        if np.dtype(ta).kind in "iu" and np.dtype(tb).kind == "f":
            wide = ctx.emit("Cast", [a], {"dst_type": tb}, suffix="base")[0]
            y = ctx.emit("Pow", [wide, b], suffix="pow")[0]
            return ctx.emit("Cast", [y], {"dst_type": ta})
        e = ctx.emit("Cast", [b], {"dst_type": ta}, suffix="exponent")[0]
        return ctx.emit("Pow", [a, e])



@onnx_op("Mod")
class Mod(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        ge_type = "Mod" if int(ctx.attr("fmod", 0)) else "FloorMod"   # fmod=1: C fmod (the dividend's sign)
        return ctx.emit(ge_type, [ctx.input(0), ctx.input(1)])


@onnx_op("PRelu")
class PRelu(OnnxOp):
    @classmethod
    def _impl_v6(cls, ctx: NodeCtx):
        """Before opset 7 a 1-D slope of length C applies per channel (axis 1)."""
        x, s = ctx.input(0), ctx.input(1)
        xs, ss = x.desc.shape, s.desc.shape
        if len(ss) == 1 and len(xs) > 2 and ss[0] == xs[1] and ss[0] != xs[-1]:
            s = ctx.emit("Reshape", [s, ctx.make_const("slope", np.array([ss[0]] + [1] * (len(xs) - 2), np.int64))],
                         suffix="slope")[0]
        return ctx.emit("PRelu", [x, s])

    @classmethod
    def _impl_v7(cls, ctx: NodeCtx):
        return ctx.emit("PRelu", [ctx.input(0), ctx.input(1)])


@onnx_op("Where")
class Where(OnnxOp):
    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        return ctx.emit("Select", [ctx.input(0), ctx.input(1), ctx.input(2)])


def _scalar(v) -> float | int | None:
    return None if v is None else np.asarray(v).reshape(-1)[0].item()


@onnx_op("Clip")
class Clip(OnnxOp):
    @classmethod
    def _impl_v6(cls, ctx: NodeCtx):
        return ctx.emit("ClipByValue", [ctx.input(0)], {"clip_value_min": float(ctx.attr("min", -3.4028234663852886e38)),
                                                        "clip_value_max": float(ctx.attr("max", 3.4028234663852886e38))})

    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        if not (ctx.known(1) and ctx.known(2)):   # bounds from the graph: elementwise max / min
            y = ctx.input(0)
            if ctx.input(1) is not None:
                y = ctx.emit("Maximum", [y, ctx.input(1)], suffix="lo" if ctx.input(2) is not None else "")[0]
            if ctx.input(2) is not None:
                y = ctx.emit("Minimum", [y, ctx.input(2)])[0]
            return [y]
        return ctx.emit("ClipByValue", [ctx.input(0)], {"clip_value_min": _scalar(ctx.const(1)),
                                                        "clip_value_max": _scalar(ctx.const(2))})


def _variadic(onnx_name: str, ge_type: str):
    def impl(cls, ctx: NodeCtx):
        xs = [ctx.input(i) for i in range(ctx.n_inputs) if ctx.input(i) is not None]
        y = xs[0]
        if len(xs) == 1:
            return ctx.emit("Identity", xs)
        for k, x in enumerate(xs[1:]):
            last = k == len(xs) - 2
            y = ctx.emit(ge_type, [y, x], suffix="" if last else f"{k}")[0]
        return [y]
    return onnx_op(onnx_name)(type(onnx_name, (OnnxOp,), {"_impl_v6": classmethod(impl)}))


_variadic("Max", "Maximum")
_variadic("Min", "Minimum")


@onnx_op("Mean")
class Mean(OnnxOp):
    @classmethod
    def _impl_v6(cls, ctx: NodeCtx):
        xs = [ctx.input(i) for i in range(ctx.n_inputs) if ctx.input(i) is not None]
        total = xs[0] if len(xs) == 1 else ctx.emit("AddN", xs, suffix="sum")[0]
        n = ctx.make_const("count", np.array(len(xs), dtype=xs[0].desc.dtype))
        return ctx.emit("RealDiv", [total, n])


@onnx_op("Sum")
class Sum(OnnxOp):
    @classmethod
    def _impl_v6(cls, ctx: NodeCtx):
        xs = [ctx.input(i) for i in range(ctx.n_inputs)]
        if len(xs) == 1:
            return ctx.emit("Identity", xs)
        return ctx.emit("AddN", xs)
