"""Index and shape-from-value adapters: GatherNd, ScatterNd, OneHot, TopKV2, Where (one input), BroadcastTo,
ZerosLike/OnesLike (Range is in rnn.py). A parameter TensorFlow gives as a tensor (TopKV2's k, OneHot's depth,
ScatterNd's shape, BroadcastTo's shape) is used as a value when import knows it and is
otherwise read at run time by the value-dependent op form (the node runs in the dynamic-shape partition)."""
from __future__ import annotations

import numpy as np

from ..values import dtype_name
from . import TfAdapterError, tf_op


@tf_op("GatherNd")
def gather_nd(ctx):
    return ctx.emit("GatherNd", [ctx.input(0), ctx.input(1)], {"batch_dims": 0})


@tf_op("ScatterNd")
def scatter_nd(ctx):
    """zeros(shape) with the updates added at the indices (duplicates add up, as TensorFlow sums them)."""
    idx, upd, shape = ctx.input(0), ctx.input(1), ctx.input(2)
    zeros = ctx.emit("Fill", [shape], {"value": 0.0, "dtype": upd.desc.dtype}, suffix="zeros")[0]
    return ctx.emit("TensorScatterAdd", [zeros, idx, upd])


@tf_op("OneHot")
def one_hot(ctx):
    """TensorFlow gives a negative index an all-off row, where OneHot (ONNX's rule) counts it from the end:
    negative indices become the type's largest value first, which is out of range for either rule."""
    idx = ctx.input(0)
    if idx.desc.dtype not in ("int32", "int64", "uint8"):
        raise TfAdapterError(f"indices must be uint8, int32 or int64, got {idx.desc.dtype}")
    if idx.desc.dtype != "uint8":
        dt = np.dtype(idx.desc.dtype)
        neg = ctx.emit("Less", [idx, ctx.make_const("zero", np.zeros((), dt))], suffix="negative")[0]
        idx = ctx.emit("Select", [neg, ctx.make_const("off", np.array(np.iinfo(dt).max, dt)), idx],
                       suffix="indices")[0]
    return ctx.emit("OneHot", [idx, ctx.input(1), ctx.input(2), ctx.input(3)], {"axis": int(ctx.attr("axis", -1))})


@tf_op("TopKV2")
def top_k(ctx):
    """values and int32 indices along the last axis; a k known at import is an attribute (TopKV2), else
    the tensor form (TopK) reads it at run time."""
    x, k = ctx.input(0), ctx.const(1)
    attrs = {"dim": -1, "largest": True, "sorted": bool(ctx.attr("sorted", True))}
    if k is not None:
        if k.size != 1 or k.dtype.kind not in "iu":
            raise TfAdapterError(f"k must be one integer, got {k.dtype}{list(k.shape)}")
        vals, idx = ctx.emit("TopKV2", [x], {**attrs, "k": int(k.reshape(-1)[0])}, suffix="topk", n_out=2)
    else:
        kv = ctx.emit("Reshape", [ctx.input(1), ctx.make_const("kshape", np.array([1], np.int64))], suffix="k")[0]
        vals, idx = ctx.emit("TopK", [x, kv], attrs, suffix="topk", n_out=2)
    out = dtype_name(ctx.attr("index_type", 3)) if "index_type" in ctx.attrs else "int32"
    return [vals, ctx.emit("Cast", [idx], {"dst_type": out}, suffix="indices")[0]]


@tf_op("Where")
def where(ctx):
    """The coordinates of the true (non-zero) elements, [n, rank] int64: n is known only when the data is."""
    return ctx.emit("NonZero", [ctx.input(0)], {"transpose": False, "dtype": "int64"})


@tf_op("BroadcastTo")
def broadcast_to(ctx):
    return ctx.emit("Expand", [ctx.input(0), ctx.input(1)])


@tf_op("ZerosLike", "OnesLike")
def fill_like(ctx):
    """A constant when the shape is known (the values never matter); else Fill of the run-time shape."""
    x = ctx.input(0)
    value = 0 if ctx.node.op == "ZerosLike" else 1
    if x.desc.known:
        return [ctx.make_const("fill", np.full(x.desc.shape, value, x.desc.dtype))]
    shape = ctx.emit("Shape", [x], suffix="shape")[0]
    return ctx.emit("Fill", [shape], {"value": float(value), "dtype": x.desc.dtype})
