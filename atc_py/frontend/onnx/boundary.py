"""Sequence and optional graph inputs and outputs. A GE model takes and gives tensors only, and atc-py resolves
sequences when compiling (structured.py), so such a value crosses the model's boundary as its tensors:

* a sequence input `s` is one model input per element, named `s[0]`, `s[1]`, ...; --input_shape gives the
  elements (and so the length): `s[0]:2,3;s[1]:4,3` (`s[]:` for an empty sequence);
* an optional input is its content when present (a tensor `o` as any tensor input, a sequence as above);
  `o[]:` in --input_shape compiles it absent;
* a sequence output `y` is one model output per element, named `y[0]`, `y[1]`, ...; an optional output is its
  content, or no output at all when it is empty.
"""
from __future__ import annotations

import re

from ...common.errors import AtcError
from . import onnx_lite as onnx
from .structured import Optional, Sequence

STRUCTURED = ("sequence_type", "optional_type")


def element_name(name: str, k: int) -> str:
    return f"{name}[{k}]"


def empty_key(name: str) -> str:
    return f"{name}[]"


def kind(inp: onnx.ValueInfoProto) -> str | None:
    """'sequence_type' / 'optional_type' / 'tensor_type' / ... of a graph input or output."""
    return inp.type.WhichOneof("value")


def _content(t: onnx.TypeProto) -> onnx.TypeProto:
    return t.optional_type.elem_type if t.WhichOneof("value") == "optional_type" else t


def problem(inp: onnx.ValueInfoProto) -> str | None:
    """Why a graph input cannot be compiled (None: it can): sequences of tensors and optionals of a tensor or
    of such a sequence are resolved when compiling; maps, nested sequences and sparse tensors are not."""
    t = _content(inp.type)
    if t.WhichOneof("value") == "sequence_type":
        t = t.sequence_type.elem_type
    if t.WhichOneof("value") != "tensor_type":
        return (f"graph input '{inp.name}' is not a tensor, a sequence of tensors or an optional of either "
                "(maps, nested sequences and sparse tensors are not supported)")
    return None


def element_keys(shapes: dict, name: str) -> list[str] | None:
    """The --input_shape keys of a sequence input's elements, in order (None: none given)."""
    if empty_key(name) in shapes:
        return []
    pat = re.compile(re.escape(name) + r"\[(\d+)\]")
    ks = sorted(int(m.group(1)) for key in shapes if isinstance(key, str) and (m := pat.fullmatch(key)))
    if not ks:
        return None
    if ks != list(range(len(ks))):
        raise AtcError("E10001", value=";".join(element_name(name, k) for k in ks), parameter="--input_shape",
                       reason=f"the elements of sequence input '{name}' must be numbered 0, 1, ... without gaps")
    return [element_name(name, k) for k in ks]


def is_own_key(key, structured_names: set[str]) -> bool:
    """Whether an --input_shape key names an element of (or empties) a sequence or optional input."""
    m = re.fullmatch(r"(.*)\[\d*\]", key) if isinstance(key, str) else None
    return m is not None and m.group(1) in structured_names


def structured_input(conv, inp: onnx.ValueInfoProto, index: int) -> tuple[object, int]:
    """The input's value (a Sequence, or an Optional) and how many model inputs (Data nodes) it made."""
    shapes = conv.input_shapes
    if any(isinstance(k, int) for k in shapes):
        raise AtcError("E10001", value="(by index)", parameter="--input_shape",
                       reason=f"the model has a sequence or optional input '{inp.name}': name the inputs")
    t = inp.type
    optional = kind(inp) == "optional_type"
    if optional:
        if empty_key(inp.name) in shapes:
            return Optional(None), 0
        t = t.optional_type.elem_type
        if t.WhichOneof("value") == "tensor_type":
            return Optional(conv.tensor_input(inp.name, t.tensor_type, inp.name, index)), 1
    keys = element_keys(shapes, inp.name)
    if keys is None:
        raise AtcError("E10001", value="NULL", parameter="--input_shape",
                       reason=f"input '{inp.name}' is a sequence: give its elements' shapes, "
                              f"'{element_name(inp.name, 0)}:d,d;{element_name(inp.name, 1)}:d,d' "
                              f"('{empty_key(inp.name)}:' for an empty one)")
    tt = t.sequence_type.elem_type.tensor_type
    items = [conv.tensor_input(key, tt, key, index + k) for k, key in enumerate(keys)]
    seq = Sequence(items, len(items))
    return (Optional(seq) if optional else seq), len(items)


def output_leaves(name: str, v) -> list[tuple[str, object]]:
    """(model output name, tensor) of one graph output."""
    if isinstance(v, Sequence):
        return [(element_name(name, k), e) for k, e in enumerate(v.elements())]
    if isinstance(v, Optional):
        return [] if v.content is None else output_leaves(name, v.content)
    return [(name, v)]
