"""Where each tensor of a fusion group sits in the group's loop nest.

A group runs in one iteration space, the *anchor* (the shape of its largest tensor): axis k of the AscGraph
iterates anchor dim k. Every tensor of the group is a view of that space: each of its own dims iterates one
anchor axis (in order, no transposition) or is a size-1 dim that broadcasts. `dim_map[value][j]` is the anchor
axis of the value's dim j. Maps follow the ops' own semantics: numpy right-alignment for elementwise ops,
reduced dims kept (keep_dims) or dropped for reductions, same shape for the normalisations. A group whose
tensors cannot all be placed (a transpose, a reshape, two tensors of the same size in different layouts)
has no layout and is not fused that way. A dim unknown until run time (-1, dynamic models) is placed like a
known one: two such dims an op aligns are one size variable. That holds because fusion.fusable leaves out an
op aligning unknown dims of two tensors not provably of one shape (it may broadcast one of them); a run where
they still differ is an error naming the node, not a wrong result.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.graph import Node, Value
from .lowering import RULES


@dataclass
class Layout:
    anchor: tuple[int, ...]
    dim_map: dict[int, tuple[int, ...]]      # id(Value) -> anchor axis of each of its dims

    def present(self, v: Value) -> tuple[bool, ...]:
        """Per anchor axis: does the value iterate it (its dim there has the anchor's size)? An anchor dim of
        1 is iterated by nothing: every tensor has repeat 1 there (the axis has the constant size 1)."""
        mask = [False] * len(self.anchor)
        for d, a in zip(v.desc.shape, self.dim_map[id(v)]):
            if d == self.anchor[a] != 1:
                mask[a] = True
        return tuple(mask)


def _values(nodes: list[Node]):
    for n in nodes:
        for v in n.inputs:
            if v is not None:
                yield v
        yield from n.outputs


def _size(v: Value) -> int:
    """Elements, a dim unknown until run time (-1) counted as larger than any known one."""
    n = 1
    for d in v.desc.shape:
        n *= (1 << 31) if d < 0 else d
    return n


def plan_layout(nodes: list[Node]) -> Layout | None:
    """The group's layout, or None when its tensors do not share one iteration space."""
    vals = {id(v): v for v in _values(nodes)}
    anchor_v = max(vals.values(), key=lambda v: (_size(v), len(v.desc.shape)))
    anchor = tuple(anchor_v.desc.shape)
    if not anchor:
        return None
    maps: dict[int, tuple[int, ...]] = {}
    for v in vals.values():
        if tuple(v.desc.shape) == anchor:
            maps[id(v)] = tuple(range(len(anchor)))

    def put(v: Value, m: tuple[int, ...]) -> bool:
        """Record a map; False when it contradicts one already known or does not fit the anchor."""
        if id(v) in maps:
            return maps[id(v)] == m
        if len(m) != len(v.desc.shape) or list(m) != sorted(set(m)):
            return False
        for d, a in zip(v.desc.shape, m):
            if d != 1 and d != anchor[a]:
                return False
        maps[id(v)] = m
        return True

    changed = True
    while changed:
        changed = False
        for n in nodes:
            rule = RULES[n.op_type]
            before = len(maps)
            if not rule.propagate(n, maps, put):
                return None
            changed |= len(maps) != before
    if any(i not in maps for i in vals):
        return None
    return Layout(anchor, maps)
