"""HintBuilder: the AscGraph of one fusion group, built node by node by the lowering rules (lowering.py).

The group's anchor shape gives the axes `z0..z{r-1}` over size variables `s0..s{r-1}`. Every on-chip tensor is
described over all axes (repeat 1, stride 0 where it does not iterate an axis); a tensor in global memory
(a Data output, a Store output) lists the axes of its own dims, so the graph also says the shape of each
input and output. Group inputs become Data + Load, scalar constants become Scalar nodes, group outputs Store +
Output; elementwise operands are broadcast explicitly (Broadcast nodes) to their result's repeats.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..ir.graph import ORIGIN_NAMES, ORIGIN_PERM, Value
from .expr import ONE, ZERO, Expr
from .graph import HINT, AscGraph, AscNode, TensorAttr, contiguous_strides
from .layout import Layout


@dataclass(frozen=True)
class Ref:
    """A tensor inside the graph: the node producing it and the anchor axes it iterates."""
    node: AscNode
    mask: tuple[bool, ...]

    @property
    def dtype(self) -> str:
        return self.node.y.dtype

    @property
    def is_scalar(self) -> bool:
        return self.node.type == "Scalar"


def scalar_text(value: np.ndarray) -> str:
    """A constant's value as text that reads back to the same number (repr of a float is exact)."""
    x = np.asarray(value).reshape(-1)[0]
    if x.dtype.kind == "b":
        return "1" if x else "0"
    if x.dtype.kind in "iu":
        return str(int(x))
    return repr(float(x))


def is_scalar_const(v: Value) -> bool:
    return v.is_const and v.desc.numel == 1 and v.data is not None


class HintBuilder:
    def __init__(self, name: str, layout: Layout):
        self.layout = layout
        self.g = AscGraph(name, HINT)
        r = len(layout.anchor)
        # axis z_k of size s_k; an anchor dim of 1 stays the constant 1 (no tensor iterates it)
        self.sizes = [ONE if d == 1 else self.g.create_size_var(f"s{k}") for k, d in enumerate(layout.anchor)]
        for k in range(r):
            self.g.create_axis(f"z{k}", self.sizes[k])
        self.loops = list(range(r))
        self.refs: dict[int, Ref] = {}          # id(Value) -> its tensor in the graph
        self.inputs: list[Value] = []           # group inputs, in Data index order
        self.outputs: list[Value] = []
        self._count: Counter = Counter()
        # "<IR node>\t<output>\t<graph>/<AscIR node>": the AscIR node computing each member's result (om-run
        # compare reads a fused group's inner values through it: the _asc_origins attribute of the fused node)
        self.origins: list[str] = []

    # -- tensors ----------------------------------------------------------------------------------------
    def local(self, mask: tuple[bool, ...], dtype: str) -> TensorAttr:
        reps: list[Expr] = [s if m else ONE for s, m in zip(self.sizes, mask)]
        return TensorAttr(dtype, list(self.loops), reps, contiguous_strides(reps))

    def gm(self, v: Value) -> TensorAttr:
        """A value in global memory: one axis per own dim (repeat 1 where the dim broadcasts)."""
        dims = self.layout.dim_map[id(v)]
        reps = [self.sizes[a] if d == self.layout.anchor[a] else ONE for d, a in zip(v.desc.shape, dims)]
        return TensorAttr(v.desc.dtype, list(dims), reps, contiguous_strides(reps))

    def _name(self, type_: str) -> str:
        k = self._count[type_]
        self._count[type_] += 1
        return f"{type_.lower()}{k}"

    # -- nodes ------------------------------------------------------------------------------------------
    def emit(self, type_: str, inputs: list[Ref], mask: tuple[bool, ...], dtype: str, attrs: dict | None = None) -> Ref:
        node = self.g.add_node(type_, self._name(type_), [(r.node, 0) for r in inputs], attrs, self.loops,
                               [self.local(mask, dtype)])
        return Ref(node, mask)

    def ref(self, v: Value) -> Ref:
        """The tensor of a value: produced in the group, a Scalar for a one-element constant, else Data + Load."""
        if id(v) in self.refs:
            return self.refs[id(v)]
        if is_scalar_const(v):
            node = self.g.add_node("Scalar", self._name("Scalar"), [], {"value": scalar_text(v.data)}, self.loops,
                                   [self.local((False,) * len(self.loops), v.desc.dtype)])
            r = Ref(node, (False,) * len(self.loops))
        else:
            data = self.g.add_node("Data", f"data{len(self.inputs)}", [], {"index": len(self.inputs)}, self.loops,
                                   [self.gm(v)])
            self.inputs.append(v)
            mask = self.layout.present(v)
            load = self.g.add_node("Load", self._name("Load"), [(data, 0)], {"offset": ZERO}, self.loops,
                                   [self.local(mask, v.desc.dtype)])
            r = Ref(load, mask)
        self.refs[id(v)] = r
        return r

    def bind(self, v: Value, r: Ref) -> None:
        """The group value v is the tensor r (a lowering rule's result)."""
        want = self.layout.present(v)
        if r.mask != want or r.dtype != v.desc.dtype:
            raise ValueError(f"lowering of {v.name} gives {r.dtype} over {r.mask}, the value is {v.desc.dtype} "
                             f"over {want}")
        self.refs[id(v)] = r
        if v.producer is not None:
            names = v.producer.attrs.get(ORIGIN_NAMES) or [v.producer.name]
            perm = ",".join(map(str, v.producer.attrs.get(ORIGIN_PERM) or []))
            self.origins.append(f"{names[-1]}\t{v.index}\t{self.g.name}/{r.node.name}" + (f"\t{perm}" if perm else ""))

    def bcast(self, r: Ref, mask: tuple[bool, ...]) -> Ref:
        """r grown to the axes of mask (a Scalar broadcasts by itself)."""
        if r.mask == mask or r.is_scalar:
            return r
        return self.emit("Broadcast", [r], mask, r.dtype)

    def cast(self, r: Ref, dtype: str) -> Ref:
        return r if r.dtype == dtype else self.emit("Cast", [r], r.mask, dtype, {"dst_type": dtype})

    def scalar(self, value, dtype: str) -> Ref:
        node = self.g.add_node("Scalar", self._name("Scalar"), [], {"value": scalar_text(np.asarray(value, dtype))},
                               self.loops, [self.local((False,) * len(self.loops), dtype)])
        return Ref(node, (False,) * len(self.loops))

    def reduce(self, type_: str, r: Ref, axes: set[int]) -> Ref:
        """Reduce r over the anchor axes it iterates among `axes` (none: r itself)."""
        axes = {a for a in axes if r.mask[a]}
        if not axes:
            return r
        mask = tuple(m and a not in axes for a, m in enumerate(r.mask))
        return self.emit(type_, [r], mask, r.dtype)

    def elementwise(self, type_: str, inputs: list[Ref], dtype: str, attrs: dict | None = None) -> Ref:
        """An elementwise node over the union of its operands' axes, operands broadcast to it."""
        mask = tuple(any(r.mask[a] for r in inputs) for a in range(len(self.loops)))
        return self.emit(type_, [self.bcast(r, mask) for r in inputs], mask, dtype, attrs)

    def output(self, v: Value) -> None:
        r = self.refs[id(v)]
        store = self.g.add_node("Store", self._name("Store"), [(r.node, 0)], {"offset": ZERO}, self.loops,
                                [self.gm(v)])
        self.g.add_node("Output", f"output{len(self.outputs)}", [(store, 0)], {"index": len(self.outputs)},
                        self.loops, [self.gm(v)])
        self.outputs.append(v)
