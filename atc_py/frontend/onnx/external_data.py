"""ONNX external data: where each tensor's bytes are, checked, and left in the file: a main-graph initializer
as a FileTensor (streamed by the compiler, never whole in memory), any other tensor (a Constant's value, a
subgraph's initializer, bfloat16 / float8) marked with its checked file and mapped when the converter asks
for its array (to_array). Its bytes never go into a protobuf message: protobuf cannot hold 2 GiB, and a
message that large under an address-space limit crashed inside protobuf (SIGSEGV) instead of failing.
Only tensors numpy cannot view as they are stored (4-bit packed, strings, a big-endian host), and every
tensor of a self-contained proto (load_onnx, for onnxruntime), are read into the proto, each of at most
MAX_READ_INTO_BYTES.

Nothing in the model is trusted: the location must be a file inside the model's own folder, offset and
length are integers within the file as it is, and a tensor left in the file must have exactly the bytes its
dtype and shape need.
"""
from __future__ import annotations

import errno
import math
import os
import pathlib
import sys

import numpy as np

from ...common.errors import AtcError
from ...common.limits import MAX_CONST_BYTES
from ...ir.file_tensor import FileTensor
from . import onnx_lite as onnx
from .lazy_weights import _PLAIN

MAX_READ_INTO_BYTES = 1 << 30   # external bytes read into a TensorProto (protobuf's limit is 2 GiB a message)
RESOLVED, MODEL = "atc_py.resolved", "atc_py.model"   # external_data keys: the checked file, the model (errors)
_PACKED = {onnx.TensorProto.STRING, onnx.TensorProto.INT4, onnx.TensorProto.UINT4}
_PACKED |= {getattr(onnx.TensorProto, n) for n in ("FLOAT4E2M1", "INT2", "UINT2") if hasattr(onnx.TensorProto, n)}


def _fail(path, reason: str) -> AtcError:
    return AtcError("E10041", path=str(path), reason=reason)


def _short(loc: str, keep: int = 120) -> str:
    """A location as an error shows it: a name of thousands of characters is cut in the middle."""
    return loc if len(loc) <= keep else f"{loc[:keep // 2]}...({len(loc)} characters)...{loc[-keep // 2:]}"


def _why(exc: Exception) -> str:
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
        return "it runs through a loop of symbolic links"
    if getattr(exc, "errno", None) == errno.ENAMETOOLONG:
        return "a component or the whole path is longer than the file system allows"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _view_dtype(data_type: int) -> np.dtype | None:
    """The numpy dtype the tensor's stored bytes are, as they are (None: packed, strings, or a big-endian host)."""
    if data_type in _PACKED or sys.byteorder != "little":
        return None
    code = _PLAIN.get(data_type)
    if code is not None:
        return np.dtype(code)
    try:
        dt = np.dtype(onnx.full().helper.tensor_dtype_to_np_dtype(data_type))
    except (KeyError, TypeError, ValueError):
        return None
    return dt if dt.kind in "fiucbV" and not dt.hasobject else None


def _span(t, root: pathlib.Path, path) -> tuple[pathlib.Path, int, int, str]:
    """(data file, offset, length, location) of an external tensor, checked against the file."""
    info = {e.key: e.value for e in t.external_data}
    loc = info.get("location", "")
    if not isinstance(loc, str) or "\0" in loc:
        raise _fail(path, f"external data location {loc!r} of tensor '{t.name}' is not a file name")
    if not loc or os.path.isabs(loc):
        raise _fail(path, f"external data '{_short(loc)}' of tensor '{t.name}' is outside the model's folder")
    try:
        target = (root / loc).resolve()
        inside = root in target.parents
        regular = inside and target.is_file()
        size = target.stat().st_size if regular else 0
    except (OSError, RuntimeError) as exc:    # RuntimeError: pathlib's word for a symbolic link loop
        raise _fail(path, f"external data location '{_short(loc)}' of tensor '{t.name}' cannot be resolved: "
                          f"{_why(exc)}") from None
    if not inside:
        raise _fail(path, f"external data '{_short(loc)}' of tensor '{t.name}' is outside the model's folder")
    if not regular:
        raise _fail(path, f"external data file '{_short(loc)}' of tensor '{t.name}' does not exist or is not a "
                          "regular file")
    try:
        offset = int(info.get("offset", "0") or 0)
        length = int(info["length"]) if info.get("length") else size - offset
    except ValueError:
        raise _fail(path, f"bad offset/length for external data of tensor '{t.name}'") from None
    if offset < 0 or length < 0 or offset + length > size or length > MAX_CONST_BYTES:
        raise _fail(path, f"external data of tensor '{t.name}' ({offset}+{length}) exceeds '{loc}' ({size} B)")
    return target, offset, length, loc


def file_tensor(t, root: pathlib.Path, path) -> FileTensor | None:
    """The tensor left in its file, or None when it is not one the compiler streams (a dtype numpy does not
    hold natively, a big-endian host): then its bytes are read into the proto."""
    target, offset, length, loc = _span(t, root, path)
    code = _PLAIN.get(t.data_type)
    if code is None or sys.byteorder != "little":
        return None
    shape = tuple(int(d) for d in t.dims)
    need = math.prod(shape) * np.dtype(code).itemsize
    if need != length:
        raise _fail(path, f"external data of tensor '{t.name}' has {length} bytes in '{loc}'; its shape "
                          f"{list(shape)} of {np.dtype(code).name} needs {need}")
    return FileTensor(str(target), offset, shape, np.dtype(code).name, t.name, str(path))


def leave_in_file(t, root: pathlib.Path, path) -> bool:
    """Check the tensor's span and mark it with its checked file (mapped_array maps it when the converter reads
    it); False when numpy cannot view its bytes as stored (read_into must read them)."""
    target, offset, length, loc = _span(t, root, path)
    dtype = _view_dtype(t.data_type)
    if dtype is None:
        return False
    need = math.prod(int(d) for d in t.dims) * dtype.itemsize
    if need != length:
        raise _fail(path, f"external data of tensor '{t.name}' has {length} bytes in '{loc}'; its shape "
                          f"{list(t.dims)} of {dtype.name} needs {need}")
    for key, value in ((RESOLVED, str(target)), (MODEL, str(path))):
        e = t.external_data.add()
        e.key, e.value = key, value
    return True


def mapped_array(t) -> np.ndarray | None:
    """A tensor leave_in_file marked, as a read-only array over its mapped bytes (None: not one it marked)."""
    info = {e.key: e.value for e in t.external_data}
    if t.data_location != onnx.TensorProto.EXTERNAL or RESOLVED not in info:
        return None
    dtype = _view_dtype(t.data_type)
    offset = int(info.get("offset", "0") or 0)
    shape = tuple(int(d) for d in t.dims)
    raw = FileTensor(info[RESOLVED], offset, (math.prod(shape) * dtype.itemsize,), "uint8", t.name,
                     info.get(MODEL, "")).load()
    return raw.view(dtype).reshape(shape)


def read_into(t, root: pathlib.Path, path) -> None:
    """The tensor's bytes read into its raw_data (it is then an ordinary tensor of the proto): for tensors numpy
    cannot view as stored, of at most MAX_READ_INTO_BYTES."""
    target, offset, length, loc = _span(t, root, path)
    if length > MAX_READ_INTO_BYTES:
        raise _fail(path, f"external data of tensor '{t.name}' ({length} bytes in '{loc}') is larger than "
                          f"{MAX_READ_INTO_BYTES} bytes, the most atc-py reads into a protobuf message")
    try:
        with open(target, "rb") as f:
            f.seek(offset)
            data = f.read(length)
    except MemoryError:
        raise _fail(path, f"not enough memory to read the {length} bytes of external data of tensor "
                          f"'{t.name}'") from None
    if len(data) != length:   # the file was cut after its size was checked
        raise _fail(path, f"external data of tensor '{t.name}' ({offset}+{length}) exceeds '{loc}' (truncated)")
    t.raw_data = data
    del t.external_data[:]
    t.data_location = onnx.TensorProto.DEFAULT
