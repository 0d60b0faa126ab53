"""TensorFlow AttrValue / TensorProto / DataType -> Python and numpy values."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...common.limits import MAX_CONST_BYTES, MAX_RANK
from ...proto import tf_graph_pb2 as tf

NUMPY = {tf.DT_FLOAT: "float32", tf.DT_DOUBLE: "float64", tf.DT_INT32: "int32", tf.DT_UINT8: "uint8",
         tf.DT_INT16: "int16", tf.DT_INT8: "int8", tf.DT_INT64: "int64", tf.DT_BOOL: "bool",
         tf.DT_UINT16: "uint16", tf.DT_HALF: "float16", tf.DT_UINT32: "uint32", tf.DT_UINT64: "uint64",
         tf.DT_STRING: "string"}


class TfValueError(Exception):
    """A value the converter cannot represent (unsupported dtype, malformed tensor)."""


def dtype_name(code: int) -> str:
    name = NUMPY.get(code)
    if name is None:
        raise TfValueError(f"TensorFlow dtype {tf.DataType.Name(code) if code in tf.DataType.values() else code} "
                           "is not supported")
    return name


def shape_of(s: tf.TensorShapeProto) -> list[int] | None:
    return None if s.unknown_rank else [int(d.size) for d in s.dim]


def tensor_to_numpy(t: tf.TensorProto) -> np.ndarray:
    """The tensor's values; its shape is checked first (no negative dims, at most MAX_CONST_BYTES)."""
    dt = dtype_name(t.dtype)
    shape = shape_of(t.tensor_shape) or []
    if len(shape) > MAX_RANK or any(d < 0 for d in shape):
        raise TfValueError(f"tensor shape {shape} is not a valid constant shape")
    n = math.prod(shape)
    itemsize = 16 if dt == "string" else np.dtype(dt).itemsize
    if n * itemsize > MAX_CONST_BYTES:
        raise TfValueError(f"a constant of shape {shape} ({dt}) would need {n * itemsize} bytes "
                           f"(limit {MAX_CONST_BYTES})")
    if dt == "string":
        vals = np.array([s.decode("utf-8", "replace") for s in t.string_val], object)
        return np.resize(vals, n).reshape(shape) if vals.size else np.full(shape, "", object)
    if t.tensor_content:
        arr = np.frombuffer(t.tensor_content, dtype=dt)
        if arr.size != n:
            raise TfValueError(f"tensor_content has {arr.size} values, the shape {shape} needs {n}")
        return arr.reshape(shape).copy()
    if dt == "float16":
        vals = np.array(t.half_val, np.uint16).view(np.float16)
    else:
        field = {"float32": t.float_val, "float64": t.double_val, "int64": t.int64_val, "bool": t.bool_val,
                 "uint32": t.uint32_val, "uint64": t.uint64_val}.get(dt, t.int_val)
        vals = np.array(list(field), dtype=dt)
    if vals.size == 0:
        return np.zeros(shape, dt)
    if vals.size < n:  # a splat: the last value repeats
        vals = np.concatenate([vals, np.full(n - vals.size, vals[-1], dt)])
    return vals[:n].reshape(shape)


def attr_value(a: tf.AttrValue) -> Any:
    kind = a.WhichOneof("value")
    if kind == "s":
        return a.s.decode("utf-8", "replace")
    if kind in ("i", "f", "b"):
        return getattr(a, kind)
    if kind == "type":
        return a.type
    if kind == "shape":
        return shape_of(a.shape)
    if kind == "tensor":
        return tensor_to_numpy(a.tensor)
    if kind == "list":
        lv = a.list
        for f in ("i", "f", "b", "type"):
            if len(getattr(lv, f)):
                return list(getattr(lv, f))
        if len(lv.s):
            return [s.decode("utf-8", "replace") for s in lv.s]
        if len(lv.shape):
            return [shape_of(s) for s in lv.shape]
        return []
    return None
