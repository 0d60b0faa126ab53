"""Input loading (npy list / npz by name / deterministic random or zero data); output_files.py writes the outputs.

Input files are untrusted: each must be a regular file, its .npy header is read and checked (no object
dtype, a size the file actually holds and below MAX_ARRAY_BYTES) before any array is allocated, and npz
members are read the same way.
"""
from __future__ import annotations

import ast
import os
import stat
import zipfile
from typing import BinaryIO, Callable

import ml_dtypes
import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ir.dtypes import dtype_by_name, is_float

from ..load.model import DeviceModel, describe, shape_fits

MAX_ARRAY_BYTES = 16 << 30        # one input or expected array (the largest model input we simulate is far below)
MAX_NPY_HEADER = 1 << 16          # numpy writes headers of a few hundred bytes
NPY_MAGIC = b"\x93NUMPY"


def _bad(path, reason: str) -> AtcError:
    return AtcError("E30002", reason=f"cannot read '{path}': {reason}")


def regular_file(path: str, what: str) -> int:
    """The size of `path`, which must be an existing regular file (a FIFO would block, /dev/zero never ends)."""
    if not path:
        raise AtcError("E30002", reason=f"{what}: empty file name")
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _bad(path, exc.strerror or str(exc)) from None
    if not stat.S_ISREG(st.st_mode):
        raise _bad(path, f"{what} must be a regular file")
    return st.st_size


def open_regular(path: str, what: str) -> tuple[BinaryIO, int]:
    """`path` open for reading and its size, checked on the open descriptor (the file checked is the file read):
    a regular file, opened without blocking (a FIFO swapped in after a check would block the open)."""
    regular_file(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _bad(path, exc.strerror or str(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _bad(path, f"{what} must be a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise


Fits = Callable[[tuple, np.dtype], "str | None"]   # an array's shape and dtype -> why it cannot be the input


def fits_input(io) -> Fits:
    """What check_inputs will require of an input's array (its dtype, or raw records of its width as .npy writes
    ml_dtypes; a shape within its dims and ranges), asked of a file's header before its data is read: a 10 GB
    .npy for a 4 KB input is refused unread."""
    want = dtype_by_name(io.desc.dtype).np

    def check(shape: tuple, dtype: np.dtype) -> str | None:
        raw = dtype.kind == "V" and dtype.names is None and dtype.itemsize == want.itemsize
        if (dtype != want and not raw) or not shape_fits(io, shape):   # check_inputs' words
            return f"input '{io.name}' must be {io.desc.dtype}{describe(io)}, got {dtype.name}{list(shape)}"
        return None
    return check


def _read_npy(f, available: int, path, fits: Fits | None = None) -> np.ndarray:
    """One .npy stream: header parsed and checked (against `fits`, what the caller will take) before the data is
    read."""
    magic = f.read(8)
    if len(magic) < 8 or magic[:6] != NPY_MAGIC or magic[6] not in (1, 2, 3):
        raise _bad(path, "not a .npy file")
    head_len_size = 2 if magic[6] == 1 else 4
    raw = f.read(head_len_size)
    if len(raw) < head_len_size:
        raise _bad(path, "truncated .npy header")
    hlen = int.from_bytes(raw, "little")
    if hlen > MAX_NPY_HEADER:
        raise _bad(path, f".npy header of {hlen} bytes")
    header = f.read(hlen)
    try:
        d = ast.literal_eval(header.decode("latin1" if magic[6] < 3 else "utf-8"))
        dtype = np.dtype(d["descr"]) if isinstance(d["descr"], str) else None
        shape, fortran = tuple(int(x) for x in d["shape"]), bool(d["fortran_order"])
    except (ValueError, SyntaxError, KeyError, TypeError, MemoryError, RecursionError):
        raise _bad(path, "malformed .npy header") from None
    if dtype is None or dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise _bad(path, "arrays of objects or structured dtypes are not model inputs")
    if any(x < 0 for x in shape):
        raise _bad(path, f"negative dimension in shape {shape}")
    nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    body = available - 8 - head_len_size - hlen
    if nbytes > MAX_ARRAY_BYTES or nbytes > body:
        raise _bad(path, f"shape {list(shape)} of {dtype} needs {nbytes} bytes, the file holds {max(body, 0)}")
    why = fits(shape, dtype) if fits is not None else None
    if why:
        raise _bad(path, f"{why} (refused before reading its {nbytes} bytes)")
    data = f.read(nbytes)
    if len(data) != nbytes:
        raise _bad(path, "truncated .npy data")
    arr = np.frombuffer(data, dtype).reshape(shape[::-1] if fortran else shape)
    return (arr.T if fortran else arr).copy()


def load_npy(path: str, fits: Fits | None = None) -> np.ndarray:
    f, size = open_regular(path, ".npy input")
    try:
        with f:
            return _read_npy(f, size, path, fits)
    except OSError as exc:
        raise _bad(path, exc.strerror or str(exc)) from None


def load_npz(path: str, select: Callable[[list[str]], dict[str, Fits]] | None = None) -> dict[str, np.ndarray]:
    """The archive's arrays by name. select(names) (given the member names before any is read) says which to read
    and what each must fit, or raises: an archive of other arrays, or of one too large, is refused unread."""
    f, size = open_regular(path, ".npz file")
    try:
        with f, zipfile.ZipFile(f) as z:
            infos = z.infolist()
            for info in infos:
                if not info.filename.endswith(".npy"):
                    raise _bad(path, f"member '{info.filename}' is not an array of the archive")
                if info.file_size > MAX_ARRAY_BYTES + MAX_NPY_HEADER or info.file_size > 1024 * max(size, 1):
                    raise _bad(path, f"member '{info.filename}' claims {info.file_size} bytes")
            wanted = select([i.filename[:-4] for i in infos]) if select is not None else None
            out = {}
            for info in infos:
                name = info.filename[:-4]
                if wanted is not None and name not in wanted:
                    continue
                with z.open(info) as m:
                    out[name] = _read_npy(m, info.file_size, f"{path}:{info.filename}",
                                          wanted[name] if wanted is not None else None)
            return out
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError, ValueError) as exc:
        raise _bad(path, f"not a valid .npz ({exc})") from None


def npz_inputs(model, path: str) -> Callable[[list[str]], dict[str, Fits]]:
    """load_npz's select for a model's inputs: members named after the inputs, or arr_0.. in input order."""
    def select(names: list[str]) -> dict[str, Fits]:
        by_name = {io.name: io for io in model.inputs}
        if set(names) == set(by_name):
            return {n: fits_input(by_name[n]) for n in names}
        if all(k.startswith("arr_") for k in names) and len(names) == len(model.inputs):
            keys = [f"arr_{i}" for i in range(len(names))]
            if set(keys) == set(names):
                return {k: fits_input(io) for k, io in zip(keys, model.inputs)}
        raise AtcError("E30002", reason=f"{path} has arrays {sorted(names)}, the model's inputs are {list(by_name)}")
    return select


def random_inputs(model: DeviceModel, seed: int, shapes: list[tuple] | None = None,
                  pure: str = "random") -> list[np.ndarray]:
    """Deterministic made-up inputs (of `shapes` for a dynamic-shape model). pure: "random" (om-run: values of the
    input's kind, seeded), "zero" (ais_bench's default pure inference), "bytes" (ais_bench's --pure_data_type
    random: every byte 0..255, seeded)."""
    rng = np.random.default_rng(seed)
    out = []
    for k, io in enumerate(model.inputs):
        dt = dtype_by_name(io.desc.dtype).np
        shape = tuple(shapes[k]) if shapes is not None else io.desc.shape
        n = int(np.prod(shape, dtype=np.int64))
        if pure != "random" and dt.kind != "O":
            raw = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8) if pure == "bytes" else \
                np.zeros(n * dt.itemsize, np.uint8)
            out.append(raw.view(dt).reshape(shape))
        elif dt.kind == "O":
            out.append(np.array([f"s{v}" for v in rng.integers(0, 10, n)], object).reshape(shape))
        elif is_float(io.desc.dtype):
            out.append(rng.standard_normal(shape).astype(dt))
        elif dt.kind == "b":
            out.append(rng.integers(0, 2, shape).astype(dt))
        else:   # 0..9, within the type (int4 holds -8..7, uint2 0..3)
            top = 10 if dt.kind in "iu" else min(10, int(ml_dtypes.iinfo(dt).max) + 1)
            out.append(rng.integers(0, top, shape).astype(dt))
    return out


def as_input_type(arr: np.ndarray, io) -> np.ndarray:
    """.npy files hold ml_dtypes arrays (bfloat16, float8, int4...) as raw records ('<V2'): such an array for an
    input of that width is read as the input's type."""
    want = dtype_by_name(io.desc.dtype).np
    if arr.dtype.kind == "V" and arr.dtype.names is None and arr.dtype.itemsize == want.itemsize and arr.dtype != want:
        return arr.view(want)
    return arr


def as_model_types(model: DeviceModel, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """as_input_type for each input."""
    return [as_input_type(a, io) for io, a in zip(model.inputs, arrays)] + list(arrays[len(model.inputs):])


def load_inputs(model: DeviceModel, spec: str | None, seed: int) -> list[np.ndarray]:
    if not spec:
        return random_inputs(model, seed)
    if spec.endswith(".npz"):
        data = load_npz(spec, npz_inputs(model, spec))
        names = [io.name for io in model.inputs]
        if set(data) != set(names):
            return as_model_types(model, [data[f"arr_{i}"] for i in range(len(names))])
        return as_model_types(model, [data[n] for n in names])
    paths = spec.split(",")
    if len(paths) != len(model.inputs):
        raise AtcError("E30002", reason=f"--input gives {len(paths)} file(s); the model has {len(model.inputs)} inputs")
    return as_model_types(model, [load_npy(p, fits_input(io)) for p, io in zip(paths, model.inputs)])


def load_expected(model: DeviceModel, path: str) -> list[np.ndarray]:
    data = load_npz(path)
    names = [io.name for io in model.outputs]
    if all(n in data for n in names):
        return [data[n] for n in names]
    if all(f"arr_{i}" in data for i in range(len(names))):
        return [data[f"arr_{i}"] for i in range(len(names))]
    raise AtcError("E30002", reason=f"{path} has arrays {sorted(data)}; expected the output names {names} "
                                    f"or arr_0..arr_{len(names) - 1}")
