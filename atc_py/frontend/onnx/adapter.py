"""Adapter base: one class per ONNX op, `_impl_vN` per since-version (TVM relax style)."""
from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np

from ...common.limits import DEFAULT_FOLD_SIZE_LIMIT
from ...ir.graph import Value
from . import onnx_lite as onnx


class _AdapterTable(dict):
    """(domain, op type) -> adapter class; a key not registered yet imports the one adapters module that
    adapter_index.py names for it (a compile imports only the adapters its model uses)."""

    def _load(self, key):
        from .adapter_index import ADAPTER_MODULES
        module = ADAPTER_MODULES.get(key) if isinstance(key, tuple) else None
        if module is None:
            return None
        importlib.import_module(f"{__package__}.adapters.{module}")
        return dict.get(self, key)

    def __missing__(self, key):
        cls = self._load(key)
        if cls is None:
            raise KeyError(key)
        return cls

    def get(self, key, default=None):
        cls = dict.get(self, key)
        if cls is None:
            cls = self._load(key)
        return default if cls is None else cls

    def __contains__(self, key):
        return self.get(key) is not None


ADAPTERS: dict[tuple[str, str], type["OnnxOp"]] = _AdapterTable()


class AdapterError(Exception):
    """A node the adapter cannot translate (an attribute value outside what we support)."""


def onnx_op(name: str, domain: str = ""):
    def deco(cls):
        cls.onnx_name, cls.domain = name, domain
        ADAPTERS[(domain, name)] = cls
        return cls
    return deco


LAST_ONNX_OPSET = 28   # the newest default-domain opset the adapters are written against (onnx 1.23: 28)


class OnnxOp:
    onnx_name = ""
    domain = ""
    last_opset = LAST_ONNX_OPSET

    @classmethod
    def versions(cls) -> list[int]:
        """The since-versions this class implements; found once per class (dir() cost ~25 us per node)."""
        found = cls.__dict__.get("_versions_found")
        if found is None:
            found = tuple(sorted(int(k[len("_impl_v"):]) for k in dir(cls) if k.startswith("_impl_v")))
            cls._versions_found = found
        return list(found)

    @classmethod
    def supports(cls, opset: int) -> bool:
        return cls.impl_for(opset) is not None and opset <= cls.last_opset

    @classmethod
    def impl_for(cls, opset: int) -> Callable | None:
        """The implementation of the largest since-version <= opset."""
        usable = [v for v in cls.versions() if v <= opset]
        return getattr(cls, f"_impl_v{usable[-1]}") if usable else None


def attr_value(a: onnx.AttributeProto) -> Any:
    v = onnx.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, onnx.TensorProto):
        return onnx.to_array(v)
    if isinstance(v, list):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    return v


class NodeCtx:
    """What an adapter sees of one ONNX node and how it emits GE nodes."""

    def __init__(self, conv, node: onnx.NodeProto, name: str):
        self.conv = conv
        self.node = node
        self.name = name
        self.attrs = {a.name: attr_value(a) for a in node.attribute}

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    @property
    def n_inputs(self) -> int:
        return len(self.node.input)

    def input(self, i: int) -> Value | None:
        if i >= len(self.node.input) or not self.node.input[i]:
            return None
        return self.conv.value(self.node.input[i])

    def known(self, i: int) -> bool:
        """Whether input i is absent or its value is known now (a constant, or computed at import)."""
        v = self.input(i)
        return v is None or v.is_const

    def const(self, i: int) -> np.ndarray | None:
        v = self.input(i)
        return v.data if v is not None and v.is_const else None

    def const_budget(self, count: int, itemsize: int, what: str) -> None:
        """An adapter about to materialise `count` elements: at most the fold size limit (--fold_size_limit)."""
        limit = getattr(self.conv, "fold_limit", DEFAULT_FOLD_SIZE_LIMIT)
        if count * itemsize > limit:
            raise AdapterError(f"{what} would be a constant of {count * itemsize} bytes, more than the fold size "
                               f"limit ({limit} bytes, --fold_size_limit)")

    def make_const(self, suffix: str, data: np.ndarray) -> Value:
        return self.conv.graph.add_const(self.conv.graph.unique_name(f"{self.name}_{suffix}"), np.asarray(data))

    def emit(self, op_type: str, inputs: list[Value | None], attrs: dict | None = None, suffix: str = "",
             n_out: int = 1) -> list[Value]:
        """Add a GE node (named after the ONNX node) and infer its outputs now. Private attributes of the
        ONNX node (names starting with '_', e.g. _super_kernel_scope) pass through to it."""
        name = self.name if not suffix else self.conv.graph.unique_name(f"{self.name}_{suffix}")
        private = {k: v for k, v in self.attrs.items() if k.startswith("_")}
        return self.conv.emit(name, op_type, inputs, {**(attrs or {}), **private}, n_out)
