"""Zero-copy initializers: the main graph's raw weights are numpy views of the file's bytes.

`onnx.load` copies every raw_data into the protobuf arena and `numpy_helper.to_array` copies it again;
on a 150 MB model that is most of the frontend's time. Here the file is read once, the protobuf wire
format is walked down to ModelProto.graph(7).initializer(5).raw_data(9) (field numbers of onnx.proto),
the rest of the model (with those raw_data fields cut out) is parsed by protobuf as usual, and each cut
tensor becomes np.frombuffer over the file bytes. Anything unusual (external data, exotic dtypes, a big-endian
host, a wire-format surprise) keeps its bytes in the proto and takes the normal path.
"""
from __future__ import annotations

import sys

import numpy as np

from . import onnx_lite as onnx

MODEL_GRAPH, GRAPH_INITIALIZER = 7, 5
TENSOR_DATA_TYPE, TENSOR_RAW_DATA, TENSOR_DATA_LOCATION = 2, 9, 14
_PLAIN = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
          onnx.TensorProto.FLOAT16: np.float16, onnx.TensorProto.INT8: np.int8, onnx.TensorProto.UINT8: np.uint8,
          onnx.TensorProto.INT16: np.int16, onnx.TensorProto.UINT16: np.uint16, onnx.TensorProto.INT32: np.int32,
          onnx.TensorProto.UINT32: np.uint32, onnx.TensorProto.INT64: np.int64, onnx.TensorProto.UINT64: np.uint64,
          onnx.TensorProto.BOOL: np.bool_}


class WireError(ValueError):
    """The bytes are not the protobuf this walker expects; the caller falls back to onnx.load."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise WireError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _fields(buf: bytes, start: int, end: int):
    """(number, wire type, field start, value start, value end) for each field of buf[start:end]."""
    pos = start
    while pos < end:
        field_start = pos
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            value_start = pos
            _, pos = _varint(buf, pos)
        elif wt == 1:
            value_start, pos = pos, pos + 8
        elif wt == 2:
            length, value_start = _varint(buf, pos)
            pos = value_start + length
        elif wt == 5:
            value_start, pos = pos, pos + 4
        else:
            raise WireError(f"wire type {wt}")
        if pos > end:
            raise WireError("field runs past its message")
        yield num, wt, field_start, value_start, pos


def _tensor(buf: bytes, start: int, end: int) -> tuple[bytes, tuple[int, int] | None]:
    """The tensor's bytes without raw_data, and raw_data's span, when its bytes can be viewed as they are."""
    dtype, raw, external = None, None, False
    for num, wt, _, vs, ve in _fields(buf, start, end):
        if num == TENSOR_DATA_TYPE and wt == 0:
            dtype = _varint(buf, vs)[0]
        elif num == TENSOR_RAW_DATA and wt == 2:
            raw = (vs, ve)
        elif num == TENSOR_DATA_LOCATION and wt == 0:
            external = _varint(buf, vs)[0] == onnx.TensorProto.EXTERNAL
    if raw is None or external or dtype not in _PLAIN:
        return buf[start:end], None
    kept = [buf[fs:fe] for num, wt, fs, _, fe in _fields(buf, start, end) if not (num == TENSOR_RAW_DATA and wt == 2)]
    return b"".join(kept), raw


def _message(key_num: int, body: bytes) -> bytes:
    return _encode_varint(key_num << 3 | 2) + _encode_varint(len(body)) + body


def split_weights(data: bytes) -> tuple[bytes, list[tuple[int, int] | None]]:
    """The model bytes with the main graph's raw weights cut out, and per initializer the cut span."""
    out, spans = [], []
    for num, wt, fs, vs, ve in _fields(data, 0, len(data)):
        if num != MODEL_GRAPH or wt != 2:
            out.append(data[fs:ve])
            continue
        graph = []
        for gnum, gwt, gfs, gvs, gve in _fields(data, vs, ve):
            if gnum == GRAPH_INITIALIZER and gwt == 2:
                body, span = _tensor(data, gvs, gve)
                spans.append(span)
                graph.append(_message(GRAPH_INITIALIZER, body))
            else:
                graph.append(data[gfs:gve])
        out.append(_message(MODEL_GRAPH, b"".join(graph)))
    return b"".join(out), spans


def load_split(data: bytes) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """(model, name -> read-only array view of `data`) — raises WireError if the fast path does not apply."""
    if sys.byteorder != "little":
        raise WireError("raw_data is little-endian")
    stripped, spans = split_weights(data)
    model = onnx.ModelProto.FromString(stripped)
    inits = model.graph.initializer
    if len(inits) != len(spans):
        raise WireError("initializer count differs")
    arrays: dict[str, np.ndarray] = {}
    for t, span in zip(inits, spans):
        if span is None:
            continue
        dtype = np.dtype(_PLAIN[t.data_type])
        count = int(np.prod(t.dims, dtype=np.int64)) if len(t.dims) else 1
        if count * dtype.itemsize != span[1] - span[0]:
            raise WireError(f"raw_data of '{t.name}' has {span[1] - span[0]} bytes for {count} x {dtype}")
        arrays[t.name] = np.frombuffer(data, dtype, count, span[0]).reshape(tuple(t.dims))
    return model, arrays
