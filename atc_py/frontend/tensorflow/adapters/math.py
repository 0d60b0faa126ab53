"""Elementwise and reduction adapters: arithmetic, activations, Mean/Sum/Max/Min/Prod, ArgMax, Cast."""
from __future__ import annotations

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
    lo, hi = ctx.const(1), ctx.const(2)
    if lo is None or hi is None:
        raise TfAdapterError("clip bounds must be constants")
    return ctx.emit("ClipByValue", [ctx.input(0)], {"clip_value_min": lo.item(), "clip_value_max": hi.item()})
