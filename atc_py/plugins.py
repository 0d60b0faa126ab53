"""Custom operator packages: Python modules with the same registrations as atc_py.ops (and, optionally,
ONNX adapters), loaded from --op_plugin PATH or ASCEND_CUSTOM_OPP_PATH (':'-separated files or folders).
Every op a plugin registers is *custom*: its kernel is a cust_ one, its tiling-sink task is CUST_AI_CPU with an
extra workspace, and its device-tiling library lands in the CUST_AICPU_KERNELS partition. An op of a builtin type
replaces the builtin, as CANN's custom op priority has it (ops/core/registry.py keeps that so whatever the import
order), in atc-py and in om-run, which load the same plugins; the build says so at info level.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import sys

from .common.errors import AtcError
from .ops.core import registry

ENV = "ASCEND_CUSTOM_OPP_PATH"
_loaded: dict[str, list[str]] = {}      # plugin file -> the op types it registered


def plugin_paths(option: str = "", include_env: bool = True) -> list[pathlib.Path]:
    """The plugin files of an --op_plugin value (folders give their *.py files) and, by default, of ENV."""
    parts = [p for p in (option or "").split(":") if p]
    if include_env:
        parts += [p for p in os.environ.get(ENV, "").split(":") if p]
    files: list[pathlib.Path] = []
    for part in parts:
        path = pathlib.Path(part)
        if os.path.isdir(path):      # os.path: False (not OSError) for a name too long
            files += sorted(f for f in path.glob("*.py") if not f.name.startswith("_"))
        elif os.path.isfile(path) and path.suffix == ".py":
            files.append(path)
        else:
            raise AtcError("E10001", value=part, parameter="--op_plugin",
                           reason="The path is neither a Python file nor a folder of Python files.")
    return files


def load_plugins(option: str = "", log=None) -> list[str]:
    """Import each plugin once; returns the custom op types registered. `log(level, text)`: told of each builtin
    op type a plugin's op overrides."""
    registered: list[str] = []
    for path in plugin_paths(option):
        key = str(path.resolve())
        if key not in _loaded:
            registry.all_ops()   # every builtin first: the plugin's ops replace them
            # every builtin ONNX adapter first, as when they were imported eagerly: a plugin's adapter for a
            # builtin op type replaces the builtin one, never the other way round
            from .frontend.onnx.adapters import load_all
            load_all()
            _loaded[key] = sorted(set(_import(path, key)))
        registered += _loaded[key]
        for op_type in _loaded[key]:
            if log is not None and registry.shadowed(op_type):
                log("info", f"custom op {op_type} of {path.name} overrides the builtin {op_type} (custom op "
                            "priority): its kernel runs, as a custom op")
    return registered


def _import(path: pathlib.Path, key: str) -> list[str]:
    """Run the plugin's module inside the registry's plugin scope; the op types it registered."""
    name = "atc_py_plugin_" + hashlib.sha256(key.encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with registry.plugin_scope(path.stem) as types:
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:  # noqa: BLE001 -- a broken plugin is the user's input (sys.exit in it too): no traceback
            sys.modules.pop(name, None)
            what = f"it called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else \
                f"{type(exc).__name__}: {exc}"
            raise AtcError("E10001", value=str(path), parameter="--op_plugin",
                           reason=f"The plugin failed to load: {what}") from None
    return types
