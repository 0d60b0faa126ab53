"""Python attribute values <-> ge.proto.AttrDef (typed: bool, int, float, str, lists, TensorDef, graphs: AttrDef.g and
list.g, as GE stores graph-valued attributes)."""
from __future__ import annotations

from typing import Any

from ..proto import ge_ir_pb2 as ge

LV = ge.AttrDef.ListValue


def to_attr(value: Any) -> ge.AttrDef:
    a = ge.AttrDef()
    set_attr(a, value)
    return a


def set_attr(a: ge.AttrDef, value: Any) -> None:
    """Fill an (empty) AttrDef in place, e.g. op.attr[key]: building one and copying it in cost twice as much."""
    # the scalar kinds first (most attributes; none of them is a TensorDef or has to_graph_def)
    if isinstance(value, bool):
        a.b = value
    elif isinstance(value, int):
        a.i = value
    elif isinstance(value, float):
        a.f = value
    elif isinstance(value, str):
        a.s = value.encode()
    elif isinstance(value, bytes):
        a.s = value
    elif isinstance(value, ge.TensorDef):
        a.t.CopyFrom(value)
    elif hasattr(value, "to_graph_def"):           # a graph-valued attribute (AscGraph, a fused graph)
        a.g.CopyFrom(value.to_graph_def())
    elif isinstance(value, (list, tuple)) and value and all(hasattr(x, "to_graph_def") for x in value):
        a.list.val_type = LV.VT_LIST_GRAPH
        for x in value:
            a.list.g.add().CopyFrom(x.to_graph_def())
    elif isinstance(value, (list, tuple)):
        items = list(value)
        if all(isinstance(x, bool) for x in items) and items:
            a.list.b.extend(items)
            a.list.val_type = LV.VT_LIST_BOOL
        elif all(isinstance(x, int) and not isinstance(x, bool) for x in items):
            a.list.i.extend(items)
            a.list.val_type = LV.VT_LIST_INT
        elif all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items):
            a.list.f.extend(float(x) for x in items)
            a.list.val_type = LV.VT_LIST_FLOAT
        elif all(isinstance(x, str) for x in items):
            a.list.s.extend(x.encode() for x in items)
            a.list.val_type = LV.VT_LIST_STRING
        else:
            raise TypeError(f"unsupported list attribute {value!r}")
    elif value is None:
        a.list.val_type = LV.VT_LIST_NONE
    else:
        if hasattr(value, "tolist"):
            set_attr(a, value.tolist())
            return
        raise TypeError(f"unsupported attribute {value!r}")


def from_attr(a: ge.AttrDef) -> Any:
    kind = a.WhichOneof("value")
    if kind == "s":
        return a.s.decode("utf-8", "replace")
    if kind in ("i", "f", "b", "dt"):
        return getattr(a, kind)
    if kind in ("t", "g"):
        return getattr(a, kind)
    if kind == "list":
        vt = a.list.val_type
        if vt == LV.VT_LIST_NONE:
            return None
        if vt == LV.VT_LIST_BOOL:
            return list(a.list.b)
        if vt == LV.VT_LIST_FLOAT:
            return list(a.list.f)
        if vt == LV.VT_LIST_STRING:
            return [s.decode("utf-8", "replace") for s in a.list.s]
        if vt == LV.VT_LIST_GRAPH:
            return list(a.list.g)
        return list(a.list.i)
    return None
