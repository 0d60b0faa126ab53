"""Auto schedule: HintGraph -> ImplGraphs (one per tiling key), and `Nest`, the loop nest an ImplGraph runs.

The schedule, in CANN's terms:
* the axes no reduction touches (parallel axes) are merged into one axis M (MergeAxis, type MERGED);
* M is tile-split for the Unified Buffer (TileSplit: `Mt` of a tiling variable `Mt_size`, `MT` = Ceiling(M/Mt))
  and the tile-outer axis block-split for the cores (BlockSplit: `MTb` of `MTb_size` tiles per core, `MTB` =
  Ceiling(MT/MTb) blocks);
* every computing node runs in `[MTB, MTb, Mt] + reduce axes`; `Mt` and the reduce axes are vectorized (one
  tile is a numpy array over them), MTb is the loop inside a block; a node whose result does not depend on
  the tile (gamma, a bias over the reduced axes) is hoisted out of the tile loop: `[MTB] + reduce axes`;
* Loads go to VECIN queues, tensors the Stores read to VECOUT queues, the rest to VECCALC buffers that
  tensors with disjoint lifetimes and equal sizes share; queue sizes are symbolic in the tile size.
The recorded ImplGraph double-buffers the queues (tiling key 0: the MTE2/MTE3 copies of the next tile
overlap the vector work of this one); `variants` derives key 1 (single buffers, when a double-buffered tile
does not fit UB) and key 2 (tensors in GM workspace, when not even one row fits). The Data outputs and
Output inputs stay as the HintGraph has them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import ascir
from .expr import ONE, Expr, Sym, ceil_div, product
from .graph import (
    BLOCK_IN,
    BLOCK_OUT,
    GM,
    IMPL,
    MERGED,
    ORIGINAL,
    TILE_IN,
    TILE_OUT,
    UB,
    AscGraph,
    AscGraphError,
    AscNode,
    Mem,
    TensorAttr,
    contiguous_strides,
)

KEYS = (0, 1, 2)
DOUBLE, SINGLE, SPILL = KEYS


def reduce_axes(g: AscGraph) -> list[int]:
    """Axes some reduction reduces: they stay whole inside a tile."""
    out: set[int] = set()
    for n in g.of_kind(ascir.REDUCE):
        x = n.input_attr(0)
        out |= {a for a, ri, ro in zip(n.y.axis, x.repeats, n.y.repeats) if ri != ro}
    return sorted(out)


def schedule(hint: AscGraph) -> AscGraph:
    """The ImplGraph (tiling key 0: double-buffered queues)."""
    return _impl(hint, DOUBLE)


def variants(impl: AscGraph) -> list[AscGraph]:
    """The ImplGraphs of tiling keys 0, 1, 2: the schedule as recorded, then the same loop nest with single
    buffers and with its tensors in GM workspace (what the tiling falls back to when UB is too small)."""
    out = [impl]
    for key in KEYS[1:]:
        v = impl.clone()
        place_memory(v, key)
        v.attrs["tiling_key"] = key
        out.append(v)
    return out


def _impl(hint: AscGraph, key: int) -> AscGraph:
    impl = AscGraph(hint.name, IMPL)
    for v in hint.size_vars:
        impl.create_size_var(v)
    for ax in hint.axes:
        impl.create_axis(ax.name, ax.size)
    red = reduce_axes(hint)
    par = [a for a in range(len(hint.axes)) if a not in red]
    split: list[int] = []
    if par:
        if len(par) == 1:
            m = impl.axes[par[0]]
        else:
            m = impl.create_axis("".join(impl.axes[a].name for a in par), product(impl.axes[a].size for a in par),
                                 MERGED, tuple(par))
        t_var = impl.create_size_var(f"{m.name}t_size")
        t_out = impl.create_axis(f"{m.name}T", ceil_div(m.size, t_var), TILE_OUT, (m.id,))
        t_in = impl.create_axis(f"{m.name}t", t_var, TILE_IN, (m.id,), t_out.id)
        t_out.split_peer = t_in.id
        b_var = impl.create_size_var(f"{t_out.name}b_size")
        b_out = impl.create_axis(f"{t_out.name}B", ceil_div(t_out.size, b_var), BLOCK_OUT, (t_out.id,))
        b_in = impl.create_axis(f"{t_out.name}b", b_var, BLOCK_IN, (t_out.id,), b_out.id)
        b_out.split_peer = b_in.id
        split = [b_out.id, b_in.id, t_in.id]
        impl.attrs["tile_vars"] = [t_var.name, b_var.name]
    else:
        impl.attrs["tile_vars"] = []
    impl.attrs["tiling_key"] = key
    full = split + red
    hoisted = split[:1] + red
    copies: dict[int, AscNode] = {}
    up = hoistable(hint, par)
    # exec order: inputs, what runs once per block, the tile loop, outputs
    rank = {ascir.DATA: 0, ascir.OUTPUT: 3}
    for n in sorted(hint.nodes, key=lambda n: rank.get(n.ir.kind, 1 if id(n) in up else 2)):
        kind = n.ir.kind
        ins = [(copies[id(src)], k) for src, k in n.inputs]
        if kind in (ascir.DATA, ascir.OUTPUT):
            node = impl.add_node(n.type, n.name, ins, n.attrs, n.sched_axis, [_copy(n.y)])
        else:
            sched = hoisted if id(n) in up else full
            t = _copy(n.y) if kind == ascir.STORE else _local(impl, n.y, par, red, split)
            if kind == ascir.BROADCAST and t.repeats == ins[0][0].y.repeats:
                copies[id(n)] = ins[0][0]      # grows only parallel axes the Load already gathers
                continue
            node = impl.add_node(n.type, n.name, ins, n.attrs, sched, [t])
            node.loop_axis = sched[0] if id(n) in up and split else (split[1] if split else -1)
        copies[id(n)] = node
    place_memory(impl, key)
    return impl


def hoistable(hint: AscGraph, par: list[int]) -> set[int]:
    """Nodes whose result is the same for every tile: they do not iterate a parallel axis and read only such
    nodes (a Store of one writes it once per block)."""
    out: set[int] = set()
    if not par:
        return out
    for n in hint.nodes:
        kind = n.ir.kind
        if kind in (ascir.DATA, ascir.OUTPUT):
            continue
        if kind == ascir.STORE:
            src = n.inputs[0][0]
            if id(src) in out:
                out.add(id(n))
            continue
        t = n.y
        along_m = any(r != 1 for a, r in zip(t.axis, t.repeats) if a in par)
        inputs_ok = all(id(src) in out or src.type == "Data" for src, _ in n.inputs)
        if not along_m and inputs_ok:
            out.add(id(n))
    return out


def _copy(t: TensorAttr) -> TensorAttr:
    return TensorAttr(t.dtype, list(t.axis), list(t.repeats), list(t.strides))


def _local(impl: AscGraph, t: TensorAttr, par: list[int], red: list[int], split: list[int]) -> TensorAttr:
    """An on-chip tensor over [MTB, MTb, Mt] + reduce axes: along M it is either a whole tile (it iterates some
    parallel axis: the Load gathers it) or one row (repeat 1)."""
    rep = dict(zip(t.axis, t.repeats))
    reps: list[Expr] = []
    if split:
        along_m = any(rep.get(a, ONE) != 1 for a in par)
        reps += [impl.axes[a].size if along_m else ONE for a in split]
    reps += [rep.get(a, ONE) for a in red]
    vec = split[2:] + red
    vec_reps = reps[2:] if split else reps
    return TensorAttr(t.dtype, split + red, reps, contiguous_strides(reps), list(vec), contiguous_strides(vec_reps))


def place_memory(impl: AscGraph, key: int) -> None:
    """Queues and buffers for every on-chip tensor (sizes in bytes of one buffer, symbolic in the tile size)."""
    order = {id(n): k for k, n in enumerate(impl.nodes)}
    last_use: dict[int, int] = {}
    feeds_store: set[int] = set()
    for n in impl.nodes:
        for src, _ in n.inputs:
            last_use[id(src)] = max(last_use.get(id(src), -1), order[id(n)])
            if n.type == "Store":
                feeds_store.add(id(src))
    que = tensor = 0
    slots: list[tuple[int, Expr, int]] = []     # (buf id, size, free after node k)
    deepest = max((len(n.sched_axis) for n in impl.nodes if n.ir.kind not in (ascir.DATA, ascir.OUTPUT)), default=0)
    for n in impl.nodes:
        kind = n.ir.kind
        if kind in (ascir.DATA, ascir.OUTPUT, ascir.STORE):
            n.y.mem = Mem()
            continue
        if kind == ascir.SCALAR:        # an immediate operand of the vector instructions
            n.y.mem = Mem(UB, "VECCALC", "Global")
            continue
        t = n.y
        size = _tile_bytes(impl, t)
        mem = Mem(UB, "VECCALC", "Buffer", tensor, -1, size)
        tensor += 1
        if key == SPILL:
            mem = Mem(GM, "GM", "Global", mem.tensor_id, -1, size)
        elif kind == ascir.LOAD or id(n) in feeds_store:
            mem.position = "VECIN" if kind == ascir.LOAD else "VECOUT"
            mem.alloc_type = "Queue"
            once = len(n.sched_axis) < deepest          # hoisted: loaded once per block, nothing to overlap
            mem.que_id, mem.que_depth, mem.buf_num = que, 1, 2 if key == DOUBLE and not once else 1
            mem.reuse_id = que
            que += 1
        else:
            here, until = order[id(n)], last_use.get(id(n), order[id(n)])
            slot = next((k for k, (_, s, free) in enumerate(slots) if s == size and free < here), None)
            if slot is None:
                slots.append((len(slots), size, until))
                slot = len(slots) - 1
            else:
                slots[slot] = (slots[slot][0], size, until)
            mem.buf_id = mem.reuse_id = slots[slot][0] + 1000
        n.y.mem = mem


def _tile_bytes(impl: AscGraph, t: TensorAttr) -> Expr:
    """Bytes of one tile of t: its vectorized repeats times the element size."""
    reps = [r for a, r in zip(t.axis, t.repeats) if a in t.vectorized_axis]
    return product(reps) * int(np.dtype(t.dtype).itemsize)


@dataclass
class Nest:
    """The loop nest of an ImplGraph in the form auto schedule writes (and om-run runs): parallel axes merged
    into M, split into tiles and blocks; the reduce axes vectorized whole."""
    par: list[int]
    red: list[int]
    merged: int | None
    tile_in: int | None
    block_out: int | None
    block_in: int | None
    tile_var: str | None
    block_var: str | None

    @property
    def split(self) -> list[int]:
        return [self.block_out, self.block_in, self.tile_in] if self.tile_in is not None else []

    @property
    def full(self) -> list[int]:
        return self.split + self.red

    @property
    def hoisted(self) -> list[int]:
        return self.split[:1] + self.red

    def along_m(self, t: TensorAttr) -> bool:
        """Does an on-chip tensor hold a whole tile along M (else one row)?"""
        return bool(self.split) and t.repeats[2] != 1

    def is_hoisted(self, n: AscNode) -> bool:
        return bool(self.split) and n.sched_axis == self.hoisted

    @classmethod
    def of(cls, impl: AscGraph, hint: AscGraph | None = None) -> "Nest":
        """Read the nest off an ImplGraph, or AscGraphError when it is not in the form om-run runs."""
        where = f"graph {impl.name!r}"

        def fail(field_: str, reason: str):
            raise AscGraphError(where, field_, reason)
        by_type: dict[str, list[int]] = {}
        for ax in impl.axes:
            by_type.setdefault(ax.type, []).append(ax.id)
        for t in (MERGED, TILE_IN, TILE_OUT, BLOCK_IN, BLOCK_OUT):
            if len(by_type.get(t, [])) > 1:
                fail("axis", f"{len(by_type[t])} axes of type {t}; the schedule has at most one")
        original = by_type.get(ORIGINAL, [])
        if hint is not None and [(impl.axes[a].name, impl.axes[a].size) for a in original] != \
                [(a.name, a.size) for a in hint.axes]:
            fail("axis", "the original axes are not the HintGraph's")
        tiles = [by_type.get(t, []) for t in (TILE_OUT, TILE_IN, BLOCK_OUT, BLOCK_IN)]
        if not any(tiles):
            if by_type.get(MERGED):
                fail("axis", "a merged axis without its tile and block split")
            nest = cls([], list(original), None, None, None, None, None, None)
        else:
            if not all(tiles):
                fail("axis", "the tile and block splits need all four of TILE_OUT, TILE_IN, BLOCK_OUT, BLOCK_IN")
            (t_out,), (t_in,), (b_out,), (b_in,) = tiles
            ax = impl.axes
            if ax[t_in].from_ != ax[t_out].from_ or len(ax[t_in].from_) != 1:
                fail("axis", f"{ax[t_in].name} and {ax[t_out].name} must split one axis")
            m = ax[t_in].from_[0]
            if ax[b_in].from_ != (t_out,) or ax[b_out].from_ != (t_out,):
                fail("axis", f"{ax[b_in].name} and {ax[b_out].name} must split {ax[t_out].name}")
            if ax[m].type == MERGED:
                par = list(ax[m].from_)
                if ax[m].size != product(ax[a].size for a in par):
                    fail("axis", f"merged axis {ax[m].name} has size {ax[m].size}, not the product of its axes")
            elif ax[m].type == ORIGINAL:
                par = [m]
            else:
                fail("axis", f"{ax[m].name} is split but is neither an original nor a merged axis")
            if any(ax[a].type != ORIGINAL for a in par) or par != sorted(set(par)):
                fail("axis", "the merged axes must be distinct original axes in order")
            tv, bv = ax[t_in].size, ax[b_in].size
            if not isinstance(tv, Sym) or not isinstance(bv, Sym) or tv == bv:
                fail("axis", "tile and block inner sizes must be two tiling variables")
            if ax[t_out].size != ceil_div(ax[m].size, tv) or ax[b_out].size != ceil_div(ax[t_out].size, bv):
                fail("axis", "outer split sizes must be Ceiling(size / inner size)")
            for used in (tv.name, bv.name):
                for a in original:
                    if used in ax[a].size.symbols():
                        fail("axis", f"tiling variable {used} sizes an original axis")
            red = [a for a in original if a not in par]
            nest = cls(par, red, m, t_in, b_out, b_in, tv.name, bv.name)
        nest._check_nodes(impl, fail)
        return nest

    def _check_nodes(self, impl: AscGraph, fail) -> None:
        done: set[int] = set()
        for n in impl.nodes:
            kind = n.ir.kind
            if kind in (ascir.DATA, ascir.OUTPUT):
                continue
            where = f"node {n.name!r} ({n.type})"
            hoist = self.is_hoisted(n)
            if n.sched_axis != self.full and not hoist:
                raise AscGraphError(where, "sched.axis", "not the loop nest of the schedule")
            if hoist and not all(id(src) in done or src.type == "Data" for src, _ in n.inputs):
                raise AscGraphError(where, "sched.axis", "hoisted out of the tile loop but reads a tensor inside it")
            if hoist:
                done.add(id(n))
            if kind == ascir.STORE:
                continue
            t = n.y
            if t.axis != self.full or t.vectorized_axis != self.split[2:] + self.red:
                raise AscGraphError(where, "axis", "on-chip tensors iterate the schedule's axes, the tile and reduce "
                                    "axes vectorized")
            if self.split:
                want = [impl.axes[a].size for a in self.split]
                if t.repeats[:3] != want and t.repeats[:3] != [ONE] * 3:
                    raise AscGraphError(where, "repeats", "along the split axes a tensor is a whole tile or one row")
                if hoist and self.along_m(t):
                    raise AscGraphError(where, "repeats", "a hoisted node cannot hold a whole tile")
            if t.mem is None:
                raise AscGraphError(where, "mem", "an on-chip tensor needs its memory placement")
