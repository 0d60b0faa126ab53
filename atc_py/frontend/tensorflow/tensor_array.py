"""TensorFlow's TensorArrayV3 family (what tf.compat.v1.nn.dynamic_rnn and a v1 tf.while_loop over TensorArrays
freeze to), as dense tensors, like the TensorList ops (functions.py).

TensorFlow threads a TensorArray through a graph as two values: a resource handle and a scalar float "flow"
that orders the reads after the writes. Here the flow IS the array: a dense tensor [size, *element_shape]
(TensorArrayV3: zeros; Write: InplaceUpdate of one row; Scatter: of several; Split: the value reshaped into
equal pieces; Read / Gather: rows gathered at device indices; Concat: rows joined along their first dim; Size:
a constant). The handle becomes a scalar token nothing reads, so a v1 loop carries the array as its flow loop
variable and the handle as an unused invariant. Every op reads the array from its flow input.

The size and the element shape must be known when compiling and the array must not grow (dynamic_size
false): a dense tensor cannot change shape between iterations of a static loop. Arrays whose elements have
different shapes (Split with unequal lengths) are refused the same way, with the reason, naming the node.
"""
from __future__ import annotations

import numpy as np

from ...common.limits import MAX_CONST_BYTES
from .adapters import TfAdapterError, tf_op
from .values import dtype_name


def _flow(ctx, i: int):
    """The array a flow input carries (a dense tensor of rank >= 1)."""
    v = ctx.input(i)
    if len(v.desc.shape) < 1:
        raise TfAdapterError(f"input {i} is not the flow of a TensorArray this converter built (a scalar)")
    return v


@tf_op("TensorArrayV3")
def tensor_array(ctx):
    size = ctx.const_ints(0, "size")
    if len(size) != 1 or size[0] < 0:
        raise TfAdapterError(f"size {size} must be one non-negative integer")
    if ctx.attrs.get("dynamic_size"):
        raise TfAdapterError("a TensorArray with dynamic_size=True may grow while a loop runs; atc-py keeps an "
                             "array as one dense tensor of a shape known when compiling")
    shape = ctx.attrs.get("element_shape")
    if shape is None or any(d < 0 for d in shape):
        raise TfAdapterError(f"the element shape {shape if shape is not None else 'unknown rank'} must be known "
                             "when compiling (give --input_shape for unknown batch dims)")
    dt = dtype_name(ctx.attr("dtype"))
    numel = size[0] * int(np.prod(shape, dtype=np.int64))
    if numel * np.dtype(dt).itemsize > MAX_CONST_BYTES:
        raise TfAdapterError(f"an array of {size[0]} elements of shape {shape} ({dt}) is larger than "
                             f"{MAX_CONST_BYTES} bytes")
    flow = ctx.make_const("flow", np.zeros([size[0]] + list(shape), dt))
    return [ctx.make_const("handle", np.zeros((), np.int32)), flow]


def _rows(ctx, idx):
    """A row index as the 1-D indices InplaceUpdate takes."""
    if len(idx.desc.shape) == 0:
        return ctx.emit("Unsqueeze", [idx], {"axes": [0]}, suffix="row")[0]
    return idx


def _checked_value(ctx, flow, value, rows: int):
    """value must be `rows` elements of the array's element shape and dtype."""
    want = (rows,) + tuple(flow.desc.shape[1:])
    if value.desc.dtype != flow.desc.dtype or tuple(value.desc.shape) != want:
        raise TfAdapterError(f"the value {value.desc.dtype}{list(value.desc.shape)} does not fit an array of "
                             f"{flow.desc.dtype} elements of shape {list(flow.desc.shape[1:])} ({rows} element(s))")
    return value


@tf_op("TensorArrayWriteV3")
def tensor_array_write(ctx):
    flow, idx = _flow(ctx, 3), ctx.input(1)
    elem = _checked_value(ctx, flow, ctx.emit("Unsqueeze", [ctx.input(2)], {"axes": [0]}, suffix="elem")[0], 1)
    return ctx.emit("InplaceUpdate", [flow, _rows(ctx, idx), elem])


@tf_op("TensorArrayScatterV3")
def tensor_array_scatter(ctx):
    flow, idx, value = _flow(ctx, 3), ctx.input(1), ctx.input(2)
    if len(idx.desc.shape) != 1 or idx.desc.shape[0] < 0:
        raise TfAdapterError(f"indices must be a vector of known length, got shape {list(idx.desc.shape)}")
    _checked_value(ctx, flow, value, idx.desc.shape[0])
    known = ctx.const(1)
    if known is not None and np.array_equal(np.asarray(known).reshape(-1), np.arange(flow.desc.shape[0])):
        return [value]                      # unstack: every row, in order
    return ctx.emit("InplaceUpdate", [flow, idx, value])


@tf_op("TensorArraySplitV3")
def tensor_array_split(ctx):
    flow, value = _flow(ctx, 3), ctx.input(1)
    lengths = ctx.const_ints(2, "lengths")
    n, elem = flow.desc.shape[0], tuple(flow.desc.shape[1:])
    if len(lengths) != n:
        raise TfAdapterError(f"{len(lengths)} lengths split the value into an array of {n} elements")
    if len(set(lengths)) > 1 or not elem or (lengths and lengths[0] != elem[0]):
        raise TfAdapterError(f"lengths {lengths} must all equal the first dim of the element shape "
                             f"{list(elem)}: elements of different shapes are not one dense tensor")
    if value.desc.dtype != flow.desc.dtype or tuple(value.desc.shape) != (n * elem[0],) + elem[1:]:
        raise TfAdapterError(f"the value {value.desc.dtype}{list(value.desc.shape)} does not split into {n} "
                             f"elements of shape {list(elem)}")
    shape = ctx.make_const("shape", np.array((n,) + elem, np.int64))
    return ctx.emit("Reshape", [value, shape])


@tf_op("TensorArrayReadV3")
def tensor_array_read(ctx):
    idx = ctx.input(1)
    if len(idx.desc.shape) != 0:
        raise TfAdapterError(f"index must be a scalar, got shape {list(idx.desc.shape)}")
    return ctx.emit("GatherV2D", [_flow(ctx, 2), idx], {"axis": 0})


@tf_op("TensorArrayGatherV3")
def tensor_array_gather(ctx):
    idx = ctx.input(1)
    if len(idx.desc.shape) != 1:
        raise TfAdapterError(f"indices must be a vector, got shape {list(idx.desc.shape)}")
    known = ctx.const(1)
    flow = _flow(ctx, 2)
    if known is not None and np.array_equal(np.asarray(known).reshape(-1), np.arange(flow.desc.shape[0])):
        return [flow]                       # stack: every row, in order
    return ctx.emit("GatherV2D", [flow, idx], {"axis": 0})


@tf_op("TensorArrayConcatV3")
def tensor_array_concat(ctx):
    flow = _flow(ctx, 1)
    shape = tuple(flow.desc.shape)
    if len(shape) < 2:
        raise TfAdapterError(f"elements of shape {list(shape[1:])} have no first dim to concatenate along")
    joined = ctx.make_const("shape", np.array((shape[0] * shape[1],) + shape[2:], np.int64))
    value = ctx.emit("Reshape", [flow, joined])[0]
    return [value, ctx.make_const("lengths", np.full(shape[0], shape[1], np.int64))]


@tf_op("TensorArraySizeV3")
def tensor_array_size(ctx):
    return [ctx.make_const("size", np.array(_flow(ctx, 1).desc.shape[0], np.int32))]


@tf_op("TensorArrayCloseV3")
def tensor_array_close(ctx):
    return []                               # nothing to free: the array is an ordinary tensor
