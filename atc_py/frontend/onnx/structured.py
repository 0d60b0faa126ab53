"""ONNX sequences and optionals as the importer holds them: resolved at compile time (GE has no sequence or
optional tensors). A `Sequence` is a list of IR Values, an `Optional` holds a Value, a Sequence or nothing.
Where such a value crosses something that carries tensors only — a graph input or output, an If's outputs,
a body's captured names — it travels as its *leaves*, the tensors it is made of, and is rebuilt on the
other side with the same structure (`leaves` / `rebuild`)."""
from __future__ import annotations

from dataclasses import dataclass

from ...ir.graph import Value
from .adapter import AdapterError


@dataclass
class Sequence:
    items: list[Value] | None       # None: the length is known but the elements are not (non-constant splits)
    length: int
    why_unknown: str = ""

    def elements(self) -> list[Value]:
        if self.items is None:
            raise AdapterError(f"the sequence's elements are not known at compile time ({self.why_unknown})")
        return self.items


@dataclass
class Optional:
    content: Value | Sequence | None     # None: an empty optional


def is_structured(v) -> bool:
    return isinstance(v, (Sequence, Optional))


def leaves(v) -> list[Value]:
    """The tensors `v` is made of, in order (an empty optional has none)."""
    if isinstance(v, Sequence):
        return list(v.elements())
    if isinstance(v, Optional):
        return [] if v.content is None else leaves(v.content)
    return [v]


def rebuild(template, values):
    """`template`'s structure over the next Values of the iterator `values`."""
    if isinstance(template, Sequence):
        items = [next(values) for _ in template.elements()]
        return Sequence(items, len(items))
    if isinstance(template, Optional):
        return Optional(None if template.content is None else rebuild(template.content, values))
    return next(values)


def describe(v) -> str:
    if isinstance(v, Sequence):
        return f"a sequence of {v.length}"
    if isinstance(v, Optional):
        return "an empty optional" if v.content is None else f"an optional holding {describe(v.content)}"
    return "a tensor"


def mismatch(a, b) -> str | None:
    """Why values of structures `a` and `b` cannot be the two sides of one output (None: they can)."""
    if type(a) is not type(b) and (is_structured(a) or is_structured(b)):
        return f"{describe(a)} against {describe(b)}"
    if isinstance(a, Sequence):
        if a.length != b.length:
            return f"{describe(a)} against {describe(b)} (a sequence's length is fixed when compiling)"
        a.elements(), b.elements()
        return None
    if isinstance(a, Optional):
        if (a.content is None) != (b.content is None):
            return f"{describe(a)} against {describe(b)} (whether an optional holds a value is fixed when compiling)"
        return None if a.content is None else mismatch(a.content, b.content)
    return None
