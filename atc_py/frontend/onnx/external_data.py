"""ONNX external data: where each tensor's bytes are, checked, and either read into the proto or left in the
file as a FileTensor (streamed by the compiler, never whole in memory).

Nothing in the model is trusted: the location must be a file inside the model's own folder, offset and
length are integers within the file as it is, and a tensor streamed from the file must have exactly the
bytes its dtype and shape need.
"""
from __future__ import annotations

import math
import os
import pathlib
import sys

import numpy as np

from ...errors import AtcError
from ...ir.file_tensor import FileTensor
from ...limits import MAX_CONST_BYTES
from . import onnx_lite as onnx
from .lazy_weights import _PLAIN


def _fail(path, reason: str) -> AtcError:
    return AtcError("E10041", path=str(path), reason=reason)


def _span(t, root: pathlib.Path, path) -> tuple[pathlib.Path, int, int, str]:
    """(data file, offset, length, location) of an external tensor, checked against the file."""
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


def read_into(t, root: pathlib.Path, path) -> None:
    """The tensor's bytes read into its raw_data (it is then an ordinary tensor of the proto)."""
    target, offset, length, loc = _span(t, root, path)
    with open(target, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    if len(data) != length:   # the file was cut after its size was checked
        raise _fail(path, f"external data of tensor '{t.name}' ({offset}+{length}) exceeds '{loc}' (truncated)")
    t.raw_data = data
    del t.external_data[:]
    t.data_location = onnx.TensorProto.DEFAULT
