"""The op registry: GE op type → OpSpec instance; plugins add to it (custom ops)."""
from __future__ import annotations

from .base import OpSpec

_REGISTRY: dict[str, OpSpec] = {}


def register(cls: type[OpSpec]) -> type[OpSpec]:
    """Class decorator: registers one instance under `cls.op_type`."""
    if not cls.op_type:
        raise ValueError(f"{cls.__name__} has no op_type")
    _REGISTRY[cls.op_type] = cls()
    return cls


def get_op(op_type: str) -> OpSpec | None:
    _load_builtin()
    return _REGISTRY.get(op_type)


def all_ops() -> dict[str, OpSpec]:
    _load_builtin()
    return dict(_REGISTRY)


_loaded = False


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from . import (activation, aipp, asc_backend, attention_moe, binary_more, control, conv_nd,  # noqa: F401
                   conv_pool, elementwise, graph_ops, index_ops, map_index, math_unary, matmul, norm, reduce, resize,
                   scan_mask, shape_layout, strings, value_params)
    from . import detection, layout_ops, losses, quant, rnn, sampling, signal, window_ops  # noqa: F401  (issue 14b families)
    from . import (activation_more, attention, bitwise, gather_scatter, math_more, norm_more,  # noqa: F401
                   recurrent_state, trig, value_dependent)
