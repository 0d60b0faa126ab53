"""The output files of an execution, named and formatted as the tool whose line is run names and formats them:

* om-run: `<model name>_output_<k>` (msame's batch mode: `<input file stem>_output_<k>`), .npy by default, TXT with
  8 significant digits;
* ais_bench (io_operations.save_tensors_to_file): `<first input file's name up to its first dot>_<k>`
  (`pure_infer_data_<k>` without --input), TXT one row per last-axis vector, `%f` for floats and `%d` otherwise,
  each value followed by a space (utils.save_data_to_files);
* msame (model_process.cpp OutputModelResult): `<.om file name up to its last dot>_output_<k>` (batch mode: the
  input file's name up to its last dot), TXT as C++'s ostream prints a number (6 significant digits), each value
  followed by a space, one row per last-axis vector.

Names come from the folder, the output index and a sanitised stem only, and every file is written through
atc_py.common.atomic_write (a symlink planted at an output's name is replaced, never written through)."""
from __future__ import annotations

import os
import pathlib

import numpy as np

from atc_py.common.atomic_write import make_output_dir, safe_stem, write_in_folder

from ..load.model import DeviceModel

EXTENSIONS = {"NPY": "npy", "BIN": "bin", "TXT": "txt"}
PURE_INFER_STEM = "pure_infer_data"      # ais_bench's name of the data it makes up without --input
STEM_LIMIT = 200                         # an input file's name kept whole (a file name holds 255 bytes)


def ais_bench_stem(path: str | None) -> str:
    """ais_bench: os.path.basename(file).split('.')[0]."""
    return os.path.basename(path).split(".")[0] if path else PURE_INFER_STEM


def msame_stem(path: str) -> str:
    """msame: the name up to its last dot (Utils::modelName, and the input file of its batch mode)."""
    name = os.path.basename(path)
    return name[:name.rfind(".")] if "." in name else name


def stem_of(names: str, model: DeviceModel, model_path: str, files: tuple[str, ...], folder_mode: bool) -> str:
    """The part of the file names before `_<k>` / `_output_<k>`."""
    if names == "ais_bench":
        return safe_stem(ais_bench_stem(files[0] if files else None), STEM_LIMIT)
    if names == "msame":
        return safe_stem(msame_stem(files[0] if folder_mode and files else model_path), STEM_LIMIT) + "_output"
    first = files[0] if folder_mode and files else None
    return safe_stem(pathlib.Path(first).stem if first else model.name) + "_output"


def _txt_om_run(f, a: np.ndarray) -> None:
    np.savetxt(f, a.reshape(-1, a.shape[-1]) if a.ndim > 1 and a.shape[-1] else a.reshape(1, -1), fmt="%.8g")


def _rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1]) if a.ndim and a.shape[-1] else a.reshape(1, -1)


def _txt_ais_bench(f, a: np.ndarray) -> None:
    fmt = "%f" if a.dtype in (np.float16, np.float32, np.float64) else "%d"
    for row in _rows(a):
        f.write("".join(fmt % v + " " for v in row.tolist()).encode() + b"\n")


def _txt_msame(f, a: np.ndarray) -> None:
    floating = a.dtype.kind == "f" or a.dtype.kind == "V"
    rows = _rows(a.astype(np.float32) if floating else a)
    for row in rows:
        f.write("".join(("%g" % v if floating else "%d" % v) + " " for v in row.tolist()).encode() + b"\n")


TXT_WRITERS = {"om-run": _txt_om_run, "ais_bench": _txt_ais_bench, "msame": _txt_msame}


def write_outputs(outputs: list[np.ndarray], folder: str, fmt: str, stem: str, txt: str = "om-run") -> list[pathlib.Path]:
    """<folder>/<stem>_<k>.<ext> for each output, the folder created if missing."""
    d = make_output_dir(folder)
    paths = []
    for i, arr in enumerate(outputs):
        p = d / f"{stem}_{i}.{EXTENSIONS[fmt]}"
        if fmt == "NPY":
            write_in_folder(p, lambda f, a=arr: np.save(f, a, allow_pickle=False))
        elif fmt == "BIN":
            write_in_folder(p, lambda f, a=arr: f.write(np.asarray(a, order="C").tobytes()))
        else:
            write_in_folder(p, lambda f, a=arr: TXT_WRITERS[txt](f, np.asarray(a)))
        paths.append(p)
    return paths
