"""Input loading (npy list / npz by name / deterministic random) and msame-style output writing."""
from __future__ import annotations

import os
import pathlib
import tempfile
import zipfile

import numpy as np

from atc_py.ir.dtypes import dtype_by_name

from atc_py.errors import AtcError

from .loader import DeviceModel


def _load_npy(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise AtcError("E30002", reason=f"cannot read '{path}' as .npy ({exc})") from None


def _load_npz(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise AtcError("E30002", reason=f"cannot read '{path}' as .npz ({exc})") from None


def random_inputs(model: DeviceModel, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for io in model.inputs:
        dt = dtype_by_name(io.desc.dtype).np
        if dt.kind == "O":
            out.append(np.array([f"s{v}" for v in rng.integers(0, 10, io.desc.numel)], object).reshape(io.desc.shape))
        elif dt.kind == "f":
            out.append(rng.standard_normal(io.desc.shape).astype(dt))
        elif dt.kind == "b":
            out.append(rng.integers(0, 2, io.desc.shape).astype(dt))
        else:
            out.append(rng.integers(0, 10, io.desc.shape).astype(dt))
    return out


def load_inputs(model: DeviceModel, spec: str | None, seed: int) -> list[np.ndarray]:
    if not spec:
        return random_inputs(model, seed)
    if spec.endswith(".npz"):
        data = _load_npz(spec)
        names = [io.name for io in model.inputs]
        if set(data) != set(names):
            if all(k.startswith("arr_") for k in data) and len(data) == len(names):
                return [data[f"arr_{i}"] for i in range(len(names))]
            raise AtcError("E30002", reason=f"{spec} has arrays {sorted(data)}, the model's inputs are {names}")
        return [data[n] for n in names]
    return [_load_npy(p) for p in spec.split(",")]


def load_expected(model: DeviceModel, path: str) -> list[np.ndarray]:
    data = _load_npz(path)
    names = [io.name for io in model.outputs]
    if all(n in data for n in names):
        return [data[n] for n in names]
    if all(f"arr_{i}" in data for i in range(len(names))):
        return [data[f"arr_{i}"] for i in range(len(names))]
    raise AtcError("E30002", reason=f"{path} has arrays {sorted(data)}; expected the output names {names} "
                                    f"or arr_0..arr_{len(names) - 1}")


def atomic_write(path, data: bytes) -> None:
    """Write bytes to path through a temp file + rename."""
    path = pathlib.Path(path)
    _atomic_write(path, lambda f: f.write(data))


def _atomic_write(path: pathlib.Path, write) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_outputs(model: DeviceModel, outputs: list[np.ndarray], out_dir: str, fmt: str) -> list[pathlib.Path]:
    d = pathlib.Path(out_dir)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AtcError("E30002", reason=f"cannot create output directory '{out_dir}' ({exc.strerror})") from None
    paths = []
    for i, arr in enumerate(outputs):
        ext = {"NPY": "npy", "BIN": "bin", "TXT": "txt"}[fmt]
        p = d / f"{model.name}_output_{i}.{ext}"
        if fmt == "NPY":
            _atomic_write(p, lambda f, a=arr: np.save(f, a, allow_pickle=False))
        elif fmt == "BIN":
            _atomic_write(p, lambda f, a=arr: f.write(np.asarray(a, order="C").tobytes()))
        else:
            _atomic_write(p, lambda f, a=arr: np.savetxt(f, a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1),
                                                         fmt="%.8g"))
        paths.append(p)
    return paths
