"""Load an ONNX file; external data is read only from inside the model's own folder."""
from __future__ import annotations

import mmap
import os
import pathlib

import numpy as np
from . import onnx_lite as onnx
from google.protobuf.message import DecodeError

from ...errors import AtcError
from ...limits import MAX_CONST_BYTES
from .lazy_weights import load_split


def _fail(path, reason: str) -> AtcError:
    return AtcError("E10041", path=str(path), reason=reason)


_TENSOR_ATTRS = (onnx.AttributeProto.UNDEFINED, onnx.AttributeProto.TENSOR, onnx.AttributeProto.TENSORS,
                 onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


def _graph_tensors(graph: onnx.GraphProto):
    """Initializers and attribute tensors of graph and its subgraphs. Attributes of other types are skipped
    without touching their payload (onnx's _get_all_tensors walks every attribute: 60 ms on DenseNet-121)."""
    yield from graph.initializer
    yield from _node_tensors(graph.node)


def _node_tensors(nodes):
    """Attribute tensors of these nodes, their subgraphs' included."""
    for node in nodes:
        for a in node.attribute:
            if a.type not in _TENSOR_ATTRS:
                continue
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            if a.HasField("g"):
                yield from _graph_tensors(a.g)
            for g in a.graphs:
                yield from _graph_tensors(g)


def _all_tensors(model: onnx.ModelProto):
    """Every TensorProto of the model (the main graph, subgraphs, functions' attribute tensors)."""
    yield from _graph_tensors(model.graph)
    for f in model.functions:
        yield from _node_tensors(f.node)


def _load_external(model: onnx.ModelProto, base: pathlib.Path, path) -> None:
    root = base.resolve()
    tensors = [t for t in _all_tensors(model) if t.data_location == onnx.TensorProto.EXTERNAL]
    for t in tensors:
        info = {e.key: e.value for e in t.external_data}
        loc = info.get("location", "")
        if not isinstance(loc, str) or "\0" in loc:
            raise _fail(path, f"external data location {loc!r} of tensor '{t.name}' is not a file name")
        target = (root / loc).resolve()
        if not loc or os.path.isabs(loc) or root not in target.parents:
            raise _fail(path, f"external data '{loc}' of tensor '{t.name}' is outside the model's folder")
        if not target.is_file():
            raise _fail(path, f"external data file '{loc}' of tensor '{t.name}' does not exist or is not a regular file")
        try:
            offset = int(info.get("offset", "0") or 0)
            size = target.stat().st_size
            length = int(info["length"]) if info.get("length") else size - offset
        except ValueError:
            raise _fail(path, f"bad offset/length for external data of tensor '{t.name}'") from None
        if offset < 0 or length < 0 or offset + length > size or length > MAX_CONST_BYTES:
            raise _fail(path, f"external data of tensor '{t.name}' ({offset}+{length}) exceeds '{loc}' ({size} B)")
        with open(target, "rb") as f:
            f.seek(offset)
            t.raw_data = f.read(length)
        del t.external_data[:]
        t.data_location = onnx.TensorProto.DEFAULT


def _check_file(path: str) -> pathlib.Path:
    p = pathlib.Path(path)
    if not p.is_file():
        raise _fail(path, "the file does not exist or is not a regular file")
    return p


def _check_model(model: onnx.ModelProto, path: str) -> onnx.ModelProto:
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise _fail(path, "the model has no graph")
    _load_external(model, pathlib.Path(path).parent, path)
    return model


def load_onnx(path: str) -> onnx.ModelProto:
    p = _check_file(path)
    try:
        model = onnx.load(str(p), load_external_data=False)
    except (DecodeError, RuntimeWarning, ValueError, OSError, UnicodeDecodeError) as exc:
        raise _fail(path, f"it is not a valid ONNX model ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # protobuf's C++ backend raises its own error types
        raise _fail(path, f"it is not a valid ONNX model ({type(exc).__name__}: {exc})") from None
    return _check_model(model, path)


def load_onnx_lazy(path: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The model and its main graph's raw weights as views of the file bytes (lazy_weights); any file the
    fast path does not take is loaded by load_onnx, with its errors."""
    p = _check_file(path)
    try:
        with open(p, "rb") as f:   # mapped, not read: the weights stay in the page cache until used
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if p.stat().st_size else b""
        model, arrays = load_split(data)
    except Exception:   # WireError, protobuf's decode errors: the normal loader decides and reports
        return load_onnx(path), {}
    return _check_model(model, path), arrays
