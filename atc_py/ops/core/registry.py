"""The op registry: GE op type → OpSpec instance; plugins add to it (custom ops).

An op a plugin registers is custom, and it wins over a builtin of its type whatever the import order (CANN's
custom op priority): registered inside plugin_scope it replaces the builtin; a builtin module imported after it
(the lazy get_op path) leaves it in place. The builtin it shadows stays at hand (builtin_op): AscIR's elementwise
nodes are the builtin ops' arithmetic, not a plugin's kernel."""
from __future__ import annotations

import importlib
from contextlib import contextmanager

from .base import OpSpec

_REGISTRY: dict[str, OpSpec] = {}
_SHADOWED: dict[str, OpSpec] = {}       # builtin specs an op of a plugin replaced
_scope: list | None = None              # while a plugin imports: [vendor, the op types it registers]


def register(cls: type[OpSpec]) -> type[OpSpec]:
    """Class decorator: registers one instance under `cls.op_type` (a custom one inside plugin_scope)."""
    if not cls.op_type:
        raise ValueError(f"{cls.__name__} has no op_type")
    current = _REGISTRY.get(cls.op_type)
    if _scope is None:
        if current is not None and current.is_custom and not cls.is_custom:   # a builtin after the plugin
            _SHADOWED[cls.op_type] = cls()
            return cls
        _REGISTRY[cls.op_type] = cls()
        return cls
    vendor, types = _scope
    cls.is_custom = True
    # where CANN installs a custom op package: opp/vendors/<vendor>; the vendor is the plugin's name, so the .om
    # does not depend on the build machine's paths
    cls.custom_op_file_path = f"vendors/{vendor}"
    if current is not None and not current.is_custom:
        _SHADOWED[cls.op_type] = current
    _REGISTRY[cls.op_type] = cls()
    types.append(cls.op_type)
    return cls


@contextmanager
def plugin_scope(vendor: str):
    """Registrations inside are a plugin's: custom, under opp/vendors/<vendor>. Yields the op types registered."""
    global _scope
    _scope = [vendor, []]
    try:
        yield _scope[1]
    finally:
        _scope = None


def shadowed(op_type: str) -> bool:
    """Whether a plugin's op replaced the builtin of this type."""
    return op_type in _SHADOWED


def builtin_op(op_type: str) -> OpSpec | None:
    """The builtin registration of a type, even where a plugin's op replaced it."""
    return _SHADOWED.get(op_type) or get_op(op_type)


# The op families live one level up, in atc_py.ops: this package names them and never imports them statically.
FAMILIES_PACKAGE = __package__.rpartition(".")[0]

# The op modules in the order the eager load imports them (all_ops, plugins); get_op imports only the one
# op_index.OP_MODULES names for a type (a compile imports the ops its model uses). A bare name is a module of
# FAMILIES_PACKAGE; a dotted one is absolute: an op that lives with the feature it belongs to (AscBackend
# with autofuse, whose fusion pass imports the op library: an import from here would close a cycle).
BUILTIN_MODULES = (
    "activation", "aipp", "atc_py.autofuse.asc_backend", "attention_moe", "control", "conv_nd", "paged_attention",
    "conv_pool", "elementwise", "graph_ops", "index_ops", "map_index", "math_unary", "matmul", "channel_norm", "layer_norm", "reduce",
    "resize", "scan_mask", "shape_layout", "strings", "value_params",
    "detection", "layout_ops", "losses", "quant", "rnn", "sampling", "signal", "window_ops",
    "attention", "bitwise", "gather_scatter", "linear_algebra", "axes_norm", "recurrent_state", "hccl",
    "trig", "value_dependent", "transdata", "confusion_transpose", "qlinear", "qlinear_pool")


def module_name(module: str) -> str:
    """The full name of a BUILTIN_MODULES / op_index entry."""
    return module if "." in module else f"{FAMILIES_PACKAGE}.{module}"


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
