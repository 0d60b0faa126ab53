"""Adapters for gathers, scatters and value-dependent index ops: GatherElements, GatherND, ScatterElements,
Scatter (opset 9-10), ScatterND, TensorScatter, OneHot, NonZero, Compress, Unique, EyeLike."""
from __future__ import annotations

import numpy as np

from ....ir.dtypes import dtype_from_onnx
from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from ..onnx_lite import TensorProto

_REDUCTIONS = ("none", "add", "mul", "max", "min")


@onnx_op("GatherElements")
class GatherElements(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        return ctx.emit("GatherElements", [ctx.input(0), ctx.input(1)], {"dim": int(ctx.attr("axis", 0))})


@onnx_op("GatherND")
class GatherND(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        return ctx.emit("GatherNd", [ctx.input(0), ctx.input(1)], {"batch_dims": int(ctx.attr("batch_dims", 0))})


def _reduction(ctx: NodeCtx) -> str:
    red = str(ctx.attr("reduction", "none"))
    if red not in _REDUCTIONS:
        raise AdapterError(f"reduction '{red}' is not one of {', '.join(_REDUCTIONS)}")
    return red


@onnx_op("ScatterElements")
class ScatterElements(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        return ctx.emit("ScatterElements", [ctx.input(0), ctx.input(1), ctx.input(2)],
                        {"axis": int(ctx.attr("axis", 0)), "reduction": _reduction(ctx)})


@onnx_op("Scatter")
class Scatter(OnnxOp):
    """The opset 9-10 name of ScatterElements (no reduction)."""

    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        return ctx.emit("ScatterElements", [ctx.input(0), ctx.input(1), ctx.input(2)],
                        {"axis": int(ctx.attr("axis", 0)), "reduction": "none"})


_SCATTER_ND = {"none": "TensorScatterUpdate", "add": "TensorScatterAdd", "mul": "TensorScatterMul",
               "max": "TensorScatterMax", "min": "TensorScatterMin"}


@onnx_op("ScatterND")
class ScatterND(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        return ctx.emit(_SCATTER_ND[_reduction(ctx)], [ctx.input(0), ctx.input(1), ctx.input(2)])


@onnx_op("TensorScatter")
class TensorScatter(OnnxOp):
    @classmethod
    def _impl_v24(cls, ctx: NodeCtx):
        return ctx.emit("Scatter", [ctx.input(0), ctx.input(1), ctx.input(2)],
                        {"axis": int(ctx.attr("axis", -2)), "reduce": "update", "mode": str(ctx.attr("mode", "linear"))})


@onnx_op("OneHot")
class OneHot(OnnxOp):
    """values = [off_value, on_value] becomes CANN's two scalar inputs; a depth computed by the graph makes the
    node value-dependent (its output size is the depth's value)."""

    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        values = ctx.input(2)
        if values.desc.numel != 2:
            raise AdapterError(f"values must hold [off_value, on_value], got {list(values.desc.shape)}")
        flat = ctx.emit("Reshape", [values, ctx.make_const("vshape", np.array([2], np.int64))], suffix="values")[0]
        off, on = (ctx.emit("StridedSliceD", [flat], {"begin": [i], "end": [i + 1], "axes": [0], "strides": [1]},
                            suffix=name)[0] for i, name in ((0, "off"), (1, "on")))
        return ctx.emit("OneHot", [ctx.input(0), ctx.input(1), on, off], {"axis": int(ctx.attr("axis", -1))})


@onnx_op("NonZero")
class NonZero(OnnxOp):
    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        return ctx.emit("NonZero", [ctx.input(0)], {"transpose": True, "dtype": "int64"})


@onnx_op("Compress")
class Compress(OnnxOp):
    """x's slices along `axis` (the flattened x without it) where condition is true: the positions of the true
    entries (NonZero: value-dependent, so the gather runs in the dynamic-shape partition) then a gather."""

    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        x, cond = ctx.input(0), ctx.input(1)
        if len(cond.desc.shape) != 1:
            raise AdapterError(f"condition must be 1-D, got {list(cond.desc.shape)}")
        axis = ctx.attr("axis")
        if axis is None:
            x = ctx.emit("Reshape", [x, ctx.make_const("flat", np.array([-1], np.int64))], suffix="flatten")[0]
            axis = 0
        rank = len(x.desc.shape)
        if not -rank <= int(axis) < rank:
            raise AdapterError(f"axis {axis} is out of range for rank {rank}")
        axis = int(axis) % rank
        if cond.desc.shape[0] > x.desc.shape[axis]:
            raise AdapterError(f"condition has {cond.desc.shape[0]} entries, more than dim {axis} "
                               f"({x.desc.shape[axis]})")
        pos = ctx.emit("NonZero", [cond], {"transpose": True, "dtype": "int64"}, suffix="positions")[0]
        idx = ctx.emit("Squeeze", [pos], {"axes": [0]}, suffix="indices")[0]
        return ctx.emit("GatherV2D", [x, idx], {"axis": axis})


@onnx_op("Unique")
class Unique(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        attrs = {"sorted": bool(ctx.attr("sorted", 1))}
        if ctx.attr("axis") is not None:
            attrs["axis"] = int(ctx.attr("axis"))
        return ctx.emit("UniqueWithCountsExt2", [ctx.input(0)], attrs, n_out=4)


@onnx_op("EyeLike")
class EyeLike(OnnxOp):
    """Ones on the k-th diagonal of a 2-D tensor shaped like the input: the shape is static, so the result is a
    constant (what CANN's plugin builds from MatrixDiagV2 folds the same way)."""

    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        x = ctx.input(0)
        if len(x.desc.shape) != 2:
            raise AdapterError(f"EyeLike takes a 2-D input, got {list(x.desc.shape)}")
        to = ctx.attr("dtype")
        if to is None:
            dtype = x.desc.dtype
        else:
            dt = dtype_from_onnx(int(to))
            if dt is None:
                name = TensorProto.DataType.Name(int(to)) if int(to) in TensorProto.DataType.values() else str(to)
                raise AdapterError(f"dtype {name} is not supported")
            dtype = dt.name
        rows, cols = x.desc.shape
        ctx.const_budget(rows * cols, np.dtype(dtype).itemsize, "EyeLike")
        return [ctx.make_const("eye", np.eye(rows, cols, k=int(ctx.attr("k", 0)), dtype=dtype))]
