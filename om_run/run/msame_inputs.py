"""msame's ways of giving a model its inputs, for om-run: raw `.bin` files (the bytes of one input, in the
model's dtype and shape), `.npy`/`.npz`, comma-separated per input, or folders whose files are processed one
by one (msame's batch mode: the k-th file of each folder is the k-th execution), plus `--dymShape` for the
shapes of a dynamic-shape model. Every file is read with the checks of io.py (regular file, sizes checked
before anything is allocated)."""
from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ir.dtypes import dtype_by_name

from ..load.model import describe, shape_fits
from .io import (
    MAX_ARRAY_BYTES,
    as_input_type,
    as_model_types,
    fits_input,
    load_npy,
    load_npz,
    npz_inputs,
    open_regular,
    random_inputs,
)
from .options import InputFiles

MAX_BATCH_FILES = 100_000


@dataclass
class Batch:
    """One execution's inputs; `stem` is set in msame's batch mode (the first input file's stem, which names the
    outputs), `files` the files it was read from (none for made-up data)."""
    stem: str | None
    arrays: list[np.ndarray]
    files: tuple[str, ...] = ()


def check_dym_shape(shapes: dict[str, tuple[int, ...]] | None, model) -> dict[str, tuple[int, ...]]:
    """msame --dymShape (options.parse_named_shapes read it): each name an input of the model, each shape within
    that input's range."""
    by_name = {io.name: io for io in model.inputs}
    for name, shape in (shapes or {}).items():
        io = by_name.get(name)
        if io is None:
            raise AtcError("E30002", reason=f"--dymShape names '{name}'; the model's inputs are {list(by_name)}")
        if not shape_fits(io, shape):
            raise AtcError("E30002", reason=f"--dymShape {name}:{list(shape)} does not fit the input's shape "
                                            f"{describe(io)}")
    return dict(shapes or {})


def input_shapes(model, dym: dict[str, tuple[int, ...]]) -> list[tuple[int, ...]] | None:
    """Every input's shape for this run: its static shape or the --dymShape one (None if some stay unknown)."""
    shapes = []
    for io in model.inputs:
        shape = dym.get(io.name, io.desc.shape)
        if any(d < 0 for d in shape):
            return None
        shapes.append(tuple(shape))
    return shapes


def load_bin(path: str, io, shape: tuple[int, ...] | None) -> np.ndarray:
    """A raw input: exactly the bytes of the input's dtype and shape (for a dynamic input, of its --dymShape, or
    any whole number of elements that fits its one dynamic dim). The file's size is checked against that before
    a byte is read (a 10 GB file for a 4 KB input is refused unread), on the descriptor that is then read."""
    f, size = open_regular(path, ".bin input")
    with f:
        dt = dtype_by_name(io.desc.dtype).np
        if dt.kind == "O":
            raise AtcError("E30002", reason=f"input '{io.name}' holds strings; give it as .npy")
        want_shape = shape if shape is not None else io.desc.shape
        if any(d < 0 for d in want_shape):
            known = int(np.prod([d for d in want_shape if d >= 0], dtype=np.int64)) * dt.itemsize
            if list(want_shape).count(-1) != 1 or known == 0 or size % known:
                raise AtcError("E30002", reason=f"{path}: {size} bytes do not make input '{io.name}' {describe(io)}; "
                                                "give its shape with --dymShape")
            want_shape = tuple(size // known if d < 0 else d for d in want_shape)
        need = int(np.prod(want_shape, dtype=np.int64)) * dt.itemsize
        if size != need or need > MAX_ARRAY_BYTES:
            raise AtcError("E30002", reason=f"{path} has {size} bytes; input '{io.name}' "
                                            f"({io.desc.dtype}{list(want_shape)}) needs {need}")
        if not shape_fits(io, want_shape):
            raise AtcError("E30002", reason=f"{path}: shape {list(want_shape)} does not fit input '{io.name}' "
                                            f"{describe(io)}")
        data = f.read(need)
    if len(data) != need:   # the file was cut after its size was checked
        raise AtcError("E30002", reason=f"{path} has {len(data)} bytes; input '{io.name}' needs {need}")
    return np.frombuffer(data, dt).reshape(want_shape).copy()


def load_file(path: str, io, shape) -> np.ndarray:
    if path.endswith(".npy"):
        return as_input_type(load_npy(path, fits_input(io)), io)
    return load_bin(path, io, shape)


def _folder(path: str) -> list[str]:
    """The input files of a folder, sorted (msame's order), listed entry by entry: a folder of more than
    MAX_BATCH_FILES entries is refused without holding all its names. Subfolders and hidden entries are not
    inputs; any other entry must be a regular file (through its link): a dangling link, a FIFO or a device
    among the inputs is refused, naming it, never skipped (the run would have one input fewer than the folder
    names)."""
    files = []
    try:
        with os.scandir(path) as it:
            for e in it:
                if e.name.startswith(".") or _is_dir(e):
                    continue
                if not _is_file(e):
                    raise AtcError("E30002", reason=f"input folder '{path}' holds '{e.name}', which is "
                                                    f"{_what(e)}, not an input file")
                files.append(e.path)
                if len(files) > MAX_BATCH_FILES:
                    break
    except OSError as exc:
        raise AtcError("E30002", reason=f"cannot list input folder '{path}' ({exc.strerror or exc})") from None
    if not files or len(files) > MAX_BATCH_FILES:
        raise AtcError("E30002", reason=f"input folder '{path}' holds {'more than ' * bool(files)}"
                                        f"{min(len(files), MAX_BATCH_FILES)} files (1..{MAX_BATCH_FILES})")
    return sorted(files, key=os.path.basename)


def _is_dir(e: os.DirEntry) -> bool:
    try:
        return e.is_dir()           # follows a link
    except OSError:
        return False


def _is_file(e: os.DirEntry) -> bool:
    try:
        return e.is_file()          # follows a link; False for a dangling one
    except OSError:
        return False


def _what(e: os.DirEntry) -> str:
    try:
        if e.is_symlink() and not os.path.exists(e.path):
            return "a dangling symbolic link (or a loop of them)"
    except OSError:
        pass
    return "not a regular file (a FIFO, socket or device)"


def input_batches(model, files: InputFiles | None, seed: int, dym: dict[str, tuple[int, ...]], pure: str = "random"):
    """The executions' inputs (an iterable of Batch): made up without --input (io.random_inputs: `pure`, seeded),
    else read from its files — folders lazily, one execution's files at a time."""
    shapes = input_shapes(model, dym)
    if files is None:
        if shapes is None:
            raise AtcError("E30002", reason="the model has dynamic inputs: give their shapes with --dymShape (or "
                                            "give the inputs) to run it on random data")
        return [Batch(None, random_inputs(model, seed, shapes, pure))]
    if files.npz is not None:
        data = load_npz(files.npz, npz_inputs(model, files.npz))
        names = [io.name for io in model.inputs]
        keys = names if set(data) == set(names) else [f"arr_{i}" for i in range(len(names))]
        return [Batch(None, as_model_types(model, [data[k] for k in keys]), (files.npz,))]
    items = files.paths
    if len(items) != len(model.inputs):
        raise AtcError("E30002", reason=f"--input gives {len(items)} item(s); the model has {len(model.inputs)} "
                                        "inputs (comma-separated, one file or folder each)")
    per_shape = [dym.get(io.name) for io in model.inputs]
    if all(os.path.isdir(p) for p in items if p):
        folders = [_folder(p) for p in items]
        if len({len(f) for f in folders}) != 1:
            raise AtcError("E30002", reason=f"the input folders hold different numbers of files "
                                            f"{[len(f) for f in folders]}")
        # one execution's files at a time (msame's batch mode): a folder of many inputs is never held at once
        return (Batch(pathlib.Path(files[0]).stem,
                      [load_file(f, io, s) for f, io, s in zip(files, model.inputs, per_shape)], files)
                for files in zip(*folders))
    return [Batch(None, [load_file(p, io, s) for p, io, s in zip(items, model.inputs, per_shape)], tuple(items))]
