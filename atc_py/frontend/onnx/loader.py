"""Load an ONNX file; external data is read only from inside the model's own folder."""
from __future__ import annotations

import mmap
import os
import pathlib

import numpy as np
from google.protobuf.message import DecodeError

from ...common.errors import AtcError
from ...ir.file_tensor import FileTensor
from . import onnx_lite as onnx
from .external_data import file_tensor, leave_in_file, read_into
from .lazy_weights import load_split
from .work import check_work


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


def _load_external(model: onnx.ModelProto, base: pathlib.Path, path, streamed: dict | None = None) -> None:
    """Every external tensor checked. For a compile (`streamed` given) the main graph's initializers of plain
    dtypes go to `streamed` (name -> FileTensor) and the others stay in their file, mapped when read
    (external_data.py); only those numpy cannot view as stored are read into the proto. Without `streamed`
    (load_onnx: a self-contained proto, for onnxruntime) every one is read in."""
    root = base.resolve()
    external = lambda t: t.data_location == onnx.TensorProto.EXTERNAL   # noqa: E731

    def place(t) -> None:
        if streamed is None or not leave_in_file(t, root, path):
            read_into(t, root, path)
    for t in model.graph.initializer:
        if external(t):
            ft = file_tensor(t, root, path) if streamed is not None else None
            if ft is not None:
                streamed[t.name] = ft
            else:
                place(t)
    rest = [t for t in _node_tensors(model.graph.node) if external(t)]
    rest += [t for f in model.functions for t in _node_tensors(f.node) if external(t)]
    for t in rest:
        place(t)


def _check_file(path: str) -> pathlib.Path:
    p = pathlib.Path(path)
    if not os.path.isfile(p):     # False for a name too long or a link loop too
        raise _fail(path, "the file does not exist or is not a regular file")
    return p


def _check_model(model: onnx.ModelProto, path: str, streamed: dict | None = None) -> onnx.ModelProto:
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise _fail(path, "the model has no graph")
    check_work(model.graph, path)       # before anything walks every subgraph
    _load_external(model, pathlib.Path(path).parent, path, streamed)
    return model


def load_onnx(path: str) -> onnx.ModelProto:
    """The model with every tensor's bytes in the proto (external data read in)."""
    return _check_model(_parse(path, _check_file(path)), path)


def _parse(path: str, p: pathlib.Path) -> onnx.ModelProto:
    try:
        model = onnx.load(str(p), load_external_data=False)
    except (DecodeError, RuntimeWarning, ValueError, OSError, UnicodeDecodeError) as exc:
        raise _fail(path, f"it is not a valid ONNX model ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # noqa: BLE001 -- protobuf's C++ backend raises its own error types
        raise _fail(path, f"it is not a valid ONNX model ({type(exc).__name__}: {exc})") from None
    return model


def load_onnx_lazy(path: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray | FileTensor]]:
    """The model and its main graph's weights: raw ones as views of the file bytes (lazy_weights), external
    ones as FileTensors (left in their file: the compiler streams them); any file the fast path does not take
    is loaded by load_onnx, with its errors (its external weights streamed all the same)."""
    p = _check_file(path)
    try:
        with open(p, "rb") as f:   # mapped, not read: the weights stay in the page cache until used
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if p.stat().st_size else b""
        model, arrays = load_split(data)
    except Exception:   # noqa: BLE001 -- WireError, protobuf's decode errors: the normal loader decides and reports
        streamed: dict = {}
        return _check_model(_parse(path, p), path, streamed), streamed
    streamed = {}
    _check_model(model, path, streamed)
    return model, {**arrays, **streamed}
