"""Operator dumps (om-run --dump DIR, or an ACL dump configuration --acl_json): each dumped operator's input and/or
output tensors as .npy files named as CANN names its dump files, `{op_type}.{op_name}.{task_id}.{stream_id}.
{timestamp}` (timestamp: the task's simulated start in µs), plus `.input.{k}.npy` / `.output.{k}.npy`, and an
index (`dump_index.json`) mapping every file to its task, stream, dtype, shape, format and the original framework
ops it covers (GE's `_datadump_original_op_names`, which fusion and folding keep).

acl.json's dump section as ACL reads it: {"dump": {"dump_path": DIR, "dump_mode": "output" | "input" | "all",
"dump_list": [{"model_name": NAME, "layer": [op names]}]}} — no layer list dumps every operator of the model.
Tensors are written as they are produced (one at a time: bounded memory); without a dump nothing is checked.
"""
from __future__ import annotations

import io
import json
import os
import stat
import threading
from dataclasses import dataclass, field

import numpy as np

from atc_py.common.atomic_write import make_output_dir, safe_stem, write_in_folder
from atc_py.common.errors import AtcError
from atc_py.ir.formats import DEVICE_FORMATS, to_device

MAX_ACL_JSON_BYTES = 1 << 20
MODES = ("output", "input", "all")


def _bad(reason: str) -> AtcError:
    return AtcError("E30002", reason=reason)


@dataclass(frozen=True)
class DumpConfig:
    path: str
    mode: str = "output"
    layers: frozenset | None = None       # op names to dump (None: all)
    model_name: str | None = None         # the dump_list's model (None: any)


def read_acl_json(path: str) -> DumpConfig:
    """The dump section of an acl.json (a regular file of bounded size, checked field by field)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _bad(f"--acl_json {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ACL_JSON_BYTES:
        raise _bad(f"--acl_json {path} is not a regular file of at most {MAX_ACL_JSON_BYTES} bytes")
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except (ValueError, RecursionError):
        raise _bad(f"--acl_json {path} is not JSON") from None
    dump = doc.get("dump") if isinstance(doc, dict) else None
    if not isinstance(dump, dict) or not isinstance(dump.get("dump_path"), str) or not dump["dump_path"]:
        raise _bad(f"--acl_json {path}: a dump section with dump_path is needed ({{\"dump\": {{\"dump_path\": ...}}}})")
    mode = dump.get("dump_mode", "output")
    if mode not in MODES:
        raise _bad(f"--acl_json {path}: dump_mode {mode!r} is not one of {', '.join(MODES)}")
    layers, model = None, None
    items = dump.get("dump_list", [])
    if not isinstance(items, list) or len(items) > 1024:
        raise _bad(f"--acl_json {path}: dump_list must be a list")
    for item in items:
        if not isinstance(item, dict):
            raise _bad(f"--acl_json {path}: each dump_list entry is an object (model_name, layer)")
        model = item.get("model_name", model)
        layer = item.get("layer")
        if layer is not None:
            if not isinstance(layer, list) or not all(isinstance(x, str) for x in layer) or len(layer) > 1 << 16:
                raise _bad(f"--acl_json {path}: layer must be a list of op names")
            layers = (layers or frozenset()) | frozenset(layer)
    if model is not None and not isinstance(model, str):
        raise _bad(f"--acl_json {path}: model_name must be a string")
    return DumpConfig(dump["dump_path"], mode, layers, model)


@dataclass
class Dumper:
    """Writes the dumps of one om-run; `index` lists them (written by finish())."""
    config: DumpConfig
    root: str = ""
    index: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, model_name: str, op_names: set[str]) -> None:
        cfg = self.config
        if cfg.model_name is not None and cfg.model_name != model_name:
            raise _bad(f"the dump configuration names model {cfg.model_name!r}; this model is {model_name!r}")
        if cfg.layers is not None:
            unknown = sorted(cfg.layers - op_names)
            if len(unknown) == len(cfg.layers):
                raise _bad(f"the dump list names no op of the model ({', '.join(unknown[:5])}"
                           f"{' ...' if len(unknown) > 5 else ''}); its ops are named like "
                           f"{', '.join(sorted(op_names)[:3])}")
        self.root = str(make_output_dir(os.path.join(cfg.path, safe_stem(model_name)), "dump"))

    def wants(self, op_name: str, original: list[str]) -> bool:
        layers = self.config.layers
        return layers is None or op_name in layers or any(n in layers for n in original)

    def dump(self, op_type: str, op_name: str, task: int, stream: int, time_us: int, original: list[str],
             inputs, outputs, out_descs, in_descs=None) -> None:
        """The tensors as the device holds them (a 5HD tensor in NC1HWC0), each with its format and, for a
        device format, the origin format and shape that convert it back (what msit's compare reads)."""
        mode = self.config.mode
        base = f"{safe_stem(op_type, 128)}.{safe_stem(op_name, 128)}.{task}.{stream}.{time_us}"
        groups = ([("input", inputs)] if mode in ("input", "all") else []) + \
                 ([("output", outputs)] if mode in ("output", "all") else [])
        for kind, arrays in groups:
            descs = out_descs if kind == "output" else (in_descs or [])
            for k, arr in enumerate(arrays):
                if arr is None:
                    continue
                a = np.asarray(arr)
                d = descs[k] if k < len(descs) else None
                if d is not None and d.format in DEVICE_FORMATS and d.origin_shape is not None and \
                        tuple(a.shape) == tuple(d.origin_shape):   # a filter the kernel plan holds converted back
                    a = to_device(a, d.format, d.origin_format)
                name = f"{base}.{kind}.{k}.npy"
                buf = io.BytesIO()
                np.save(buf, a)
                write_in_folder(os.path.join(self.root, name), buf.getvalue())
                fmt = d.format if d is not None else "ND"
                origin = {"origin_format": d.origin_format, "origin_shape": list(d.origin_shape)} \
                    if d is not None and d.origin_shape is not None else {}
                with self.lock:
                    self.index.append({"file": name, "op_name": op_name, "op_type": op_type, "task": task,
                                       "stream": stream, "timestamp": time_us, "kind": kind, "index": k,
                                       "dtype": str(a.dtype), "shape": list(a.shape), "format": fmt, **origin,
                                       "original_names": list(original)})

    def finish(self) -> str:
        path = os.path.join(self.root, "dump_index.json")
        write_in_folder(path, (json.dumps({"dumps": self.index}, indent=1) + "\n").encode())
        return path
