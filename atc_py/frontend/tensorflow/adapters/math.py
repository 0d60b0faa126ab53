"""Elementwise and reduction adapters: arithmetic, activations, Erfc, SquaredDifference, ClipByValue,
Mean/Sum/Max/Min/Prod, ArgMax, Cast, Cumsum, Einsum."""
from __future__ import annotations

import numpy as np

from ..values import dtype_name
from . import TfAdapterError, tf_op

BINARY = {"Add": "Add", "AddV2": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "RealDiv", "Div": "RealDiv",
          "Pow": "Pow", "Maximum": "Maximum", "Minimum": "Minimum", "FloorMod": "FloorMod",
          "FloorDiv": "FloorDiv", "Equal": "Equal", "NotEqual": "NotEqual", "Less": "Less", "Greater": "Greater",
          "LessEqual": "LessEqual", "GreaterEqual": "GreaterEqual", "LogicalAnd": "LogicalAnd",
          "LogicalOr": "LogicalOr"}
UNARY = {"Relu": "Relu", "Relu6": "Relu6", "Elu": "Elu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Square": "Square",
         "Rsqrt": "Rsqrt", "Sqrt": "Sqrt", "Abs": "Abs", "Neg": "Neg", "Exp": "Exp", "Log": "Log",
         "Reciprocal": "Reciprocal", "Floor": "Floor", "Ceil": "Ceil", "Sign": "Sign", "Erf": "Erf",
         "Softplus": "Softplus", "Softsign": "Softsign", "LogicalNot": "LogicalNot", "Selu": "Selu"}
REDUCE = {"Mean": "ReduceMeanD", "Sum": "ReduceSumD", "Max": "ReduceMaxD", "Min": "ReduceMinD",
          "Prod": "ReduceProdD"}


def _binary(ctx):
    return ctx.emit(BINARY[ctx.node.op], [ctx.input(0), ctx.input(1)])


def _unary(ctx):
    return ctx.emit(UNARY[ctx.node.op], [ctx.input(0)])


for _op in BINARY:
    tf_op(_op)(_binary)
for _op in UNARY:
    tf_op(_op)(_unary)


@tf_op("LeakyRelu")
def leaky_relu(ctx):
    return ctx.emit("LeakyRelu", [ctx.input(0)], {"negative_slope": float(ctx.attr("alpha", 0.2))})


@tf_op("AddN")
def add_n(ctx):
    xs = [ctx.input(i) for i in range(ctx.n_inputs)]
    return ctx.emit("AddN", xs) if len(xs) > 1 else ctx.emit("Identity", xs)


@tf_op("Softmax", "LogSoftmax")
def softmax(ctx):
    return ctx.emit("SoftmaxV2" if ctx.node.op == "Softmax" else "LogSoftmaxV2", [ctx.input(0)], {"axes": [-1]})


@tf_op(*REDUCE)
def reduce(ctx):
    axes = ctx.const_ints(1, "reduction_indices")
    return ctx.emit(REDUCE[ctx.node.op], [ctx.input(0)], {"axes": axes, "keep_dims": bool(ctx.attr("keep_dims", False)),
                                                          "noop_with_empty_axes": True})


@tf_op("ArgMax", "ArgMin")
def arg(ctx):
    axis = ctx.const_ints(1, "dimension")
    y = ctx.emit("ArgMaxD" if ctx.node.op == "ArgMax" else "ArgMinD", [ctx.input(0)],
                 {"dimension": axis[0], "keep_dims": False}, suffix="int64")[0]
    out = dtype_name(ctx.attr("output_type", 9))
    return ctx.emit("Cast", [y], {"dst_type": out}) if out != "int64" else ctx.emit("Identity", [y])


@tf_op("Cast")
def cast(ctx):
    return ctx.emit("Cast", [ctx.input(0)], {"dst_type": dtype_name(ctx.attr("DstT"))})


@tf_op("Select", "SelectV2")
def select(ctx):
    return ctx.emit("Select", [ctx.input(0), ctx.input(1), ctx.input(2)])


@tf_op("ClipByValue")
def clip(ctx):
    """Scalar constant bounds: one ClipByValue; tensor bounds (TF broadcasts them) or bounds computed at run
    time: Maximum then Minimum."""
    lo, hi = ctx.const(1), ctx.const(2)
    if lo is not None and hi is not None and lo.size == 1 and hi.size == 1 and \
            len(ctx.input(1).desc.shape) <= len(ctx.input(0).desc.shape) >= len(ctx.input(2).desc.shape):
        return ctx.emit("ClipByValue", [ctx.input(0)], {"clip_value_min": lo.item(), "clip_value_max": hi.item()})
    y = ctx.emit("Maximum", [ctx.input(0), ctx.input(1)], suffix="min")[0]
    return ctx.emit("Minimum", [y, ctx.input(2)])


@tf_op("Erfc")
def erfc(ctx):
    """1 - erf(x) (Keras' exact GELU freezes to 0.5 * x * erfc(-x / sqrt(2)))."""
    x = ctx.input(0)
    e = ctx.emit("Erf", [x], suffix="erf")[0]
    return ctx.emit("Sub", [ctx.make_const("one", np.ones((), x.desc.dtype)), e])


@tf_op("SquaredDifference")
def squared_difference(ctx):
    d = ctx.emit("Sub", [ctx.input(0), ctx.input(1)], suffix="diff")[0]
    return ctx.emit("Square", [d])


@tf_op("Cumsum")
def cumsum(ctx):
    return ctx.emit("Cumsum", [ctx.input(0), ctx.input(1)], {"exclusive": int(bool(ctx.attr("exclusive", False))),
                                                           "reverse": int(bool(ctx.attr("reverse", False)))})


@tf_op("Einsum")
def einsum(ctx):
    eq = ctx.attr("equation")
    if not isinstance(eq, str) or not eq:
        raise TfAdapterError("Einsum needs its equation attribute")
    return ctx.emit("Einsum", [ctx.input(i) for i in range(ctx.n_inputs)], {"equation": eq.replace(" ", "")})
