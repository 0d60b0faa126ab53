"""The op registry: GE op type → OpSpec instance; plugins add to it (custom ops)."""
from __future__ import annotations

import importlib

from .base import OpSpec

_REGISTRY: dict[str, OpSpec] = {}


def register(cls: type[OpSpec]) -> type[OpSpec]:
    """Class decorator: registers one instance under `cls.op_type`."""
    if not cls.op_type:
        raise ValueError(f"{cls.__name__} has no op_type")
    _REGISTRY[cls.op_type] = cls()
    return cls


# The op modules in the order the eager load imports them (all_ops, plugins); get_op imports only the one
# op_index.OP_MODULES names for a type (issue 18: a compile imports the ops its model uses). A bare name is a
# module of this package; a dotted one is absolute: an op that lives with the feature it belongs to (AscBackend
# with autofuse, whose fusion pass imports the op library: an import from here would close a cycle).
BUILTIN_MODULES = (
    "activation", "aipp", "atc_py.autofuse.asc_backend", "attention_moe", "binary_more", "control", "conv_nd",
    "conv_pool", "elementwise", "graph_ops", "index_ops", "map_index", "math_unary", "matmul", "norm", "reduce",
    "resize", "scan_mask", "shape_layout", "strings", "value_params",
    "detection", "layout_ops", "losses", "quant", "rnn", "sampling", "signal", "window_ops",  # issue 14b families
    "activation_more", "attention", "bitwise", "gather_scatter", "math_more", "norm_more", "recurrent_state",
    "trig", "value_dependent", "transdata", "qlinear", "qlinear_pool")


def module_name(module: str) -> str:
    """The full name of a BUILTIN_MODULES / op_index entry."""
    return module if "." in module else f"{__package__}.{module}"


def get_op(op_type: str) -> OpSpec | None:
    spec = _REGISTRY.get(op_type)
    if spec is None and not _loaded:
        from .op_index import OP_MODULES
        module = OP_MODULES.get(op_type)
        if module is not None:
            importlib.import_module(module_name(module))
            spec = _REGISTRY.get(op_type)
    return spec


def all_ops() -> dict[str, OpSpec]:
    _load_builtin()
    return dict(_REGISTRY)


_loaded = False


def _load_builtin() -> None:
    """Every builtin op module (all_ops: plugins diff the registry around their import, tests list it)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN_MODULES:
        importlib.import_module(module_name(module))
