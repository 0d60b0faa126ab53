"""Auto tiling: from the ImplGraph's symbols and concrete sizes, the tiling key, tile size, tiles per core and
block_dim, within the SoC's Unified Buffer and core count; and the TilingData layout the symbols define.

* The size variables are bound from the input shapes (each Data node says which variable each dim is).
* The UB footprint of a key is evaluated from the queues' and buffers' symbolic sizes (each rounded up to the
  32-byte UB block, queues times their buffer count); the tile is the largest number of rows (elements of
  the merged parallel axis) whose footprint fits, at most a core's share; key 0 (double-buffered) is kept
  when a tile of at least one row fits, else key 1, else key 2 (tensors in GM workspace, one row per tile).
* TilingData: every size variable, then the tile and block tiling variables, as little-endian uint64 in
  graph order: the kernel runs from these values, not from the shapes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ops.core.base import TilingStruct, ceil_div
from . import ascir
from .expr import ExprError, Sym
from .graph import GM, UB, AscGraph, AscGraphError
from .schedule import DOUBLE, SINGLE, SPILL, Nest

UB_BLOCK = 32


class TilingError(ValueError):
    """Shapes that do not fit the graph (a dim the graph does not allow, two dims one variable must equal)."""


def bind_sizes(hint: AscGraph, shapes: list[tuple[int, ...]]) -> dict[str, int]:
    """Size variables from the input shapes: Data k's dims are its tensor's repeats."""
    datas = hint.data_nodes
    if len(shapes) != len(datas):
        raise TilingError(f"{len(shapes)} inputs for {len(datas)} Data nodes")
    env: dict[str, int] = {}
    for node, shape in zip(datas, shapes):
        reps = node.y.repeats
        if len(shape) != len(reps):
            raise TilingError(f"input {node.attrs['index']} has rank {len(shape)}, Data {node.name} has {len(reps)}")
        for k, (r, d) in enumerate(zip(reps, shape)):
            if isinstance(r, Sym):
                if env.setdefault(r.name, int(d)) != d:
                    raise TilingError(f"input {node.attrs['index']} dim {k} is {d}, but {r.name} = {env[r.name]}")
    for ax in hint.axes:
        missing = ax.size.symbols() - env.keys()
        if missing:
            raise TilingError(f"size variable(s) {', '.join(sorted(missing))} are set by no input")
    for node, shape in zip(datas, shapes):
        for k, (r, d) in enumerate(zip(node.y.repeats, shape)):
            if r.eval(env) != d:
                raise TilingError(f"input {node.attrs['index']} dim {k} is {d}, the graph needs {r} = {r.eval(env)}")
    return env


def output_shapes(hint: AscGraph, env: dict[str, int]) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(r.eval(env) for r in n.input_attr(0).repeats), n.y.dtype) for n in hint.output_nodes]


def tiling_struct(hint: AscGraph, impl: AscGraph) -> TilingStruct:
    """TilingData layout: the graph's size variables, then its tiling variables (uint64 each)."""
    names = list(hint.size_vars) + [v for v in impl.attrs.get("tile_vars", []) if v not in hint.size_vars]
    return TilingStruct(*[(n, "Q") for n in names])


def _align(n: int) -> int:
    return -(-n // UB_BLOCK) * UB_BLOCK


def buffers(impl: AscGraph) -> list[tuple[str, int, object, int]]:
    """The distinct on-chip allocations: (kind, id, size expression, buffer count); for GM workspace, kind 'ws'."""
    seen: dict[tuple[str, int], tuple[str, int, object, int]] = {}
    for n in impl.nodes:
        m = n.y.mem if n.outputs else None
        if m is None or n.ir.kind in (ascir.DATA, ascir.OUTPUT, ascir.STORE, ascir.SCALAR):
            continue
        if m.hardware == UB and m.alloc_type == "Queue":
            key = ("que", m.que_id)
            cnt = m.buf_num
        elif m.hardware == UB and m.alloc_type == "Buffer":
            key = ("buf", m.buf_id)
            cnt = 1
        elif m.hardware == GM:
            key = ("ws", m.tensor_id)
            cnt = 1
        else:
            continue
        prev = seen.get(key)
        if prev is None:
            seen[key] = (key[0], key[1], [m.size], cnt)
        else:
            prev[2].append(m.size)
    return list(seen.values())


def footprint(impl: AscGraph, env: dict[str, int]) -> tuple[int, int]:
    """(UB bytes, GM workspace bytes per block) of one tile at the sizes in env."""
    ub = ws = 0
    for kind, _, sizes, cnt in buffers(impl):
        size = max(s.eval(env) for s in sizes)
        if kind == "ws":
            ws += _align(size)
        else:
            ub += _align(size) * cnt
    return ub, ws


@dataclass
class TilingPlan:
    key: int
    block_dim: int
    values: dict[str, int] = field(default_factory=dict)     # size and tiling variables
    workspace: list[int] = field(default_factory=list)
    ub_bytes: int = 0
    rows: int = 1                                           # elements of the merged parallel axis
    tile: int = 1                                           # rows per tile


def auto_tiling(hint: AscGraph, impls: list[AscGraph], env: dict[str, int], ub_size: int, cores: int,
                nest: Nest | None = None) -> TilingPlan:
    nest = nest or Nest.of(impls[0])
    if not nest.split:
        ub, ws = footprint(impls[DOUBLE], env)
        key = DOUBLE if ub <= ub_size else SINGLE
        if footprint(impls[key], env)[0] > ub_size:
            key = SPILL
        ub, ws = footprint(impls[key], env)
        return TilingPlan(key, 1, dict(env), [ws] if ws else [], ub, 1, 1)
    rows = 1
    for a in nest.par:
        rows *= impls[0].axes[a].size.eval(env)
    if rows <= 0:   # an empty iteration space (no box survived): one block of one-row tiles, nothing to do
        values = {**env, nest.tile_var: 1, nest.block_var: 1}
        ub, ws = footprint(impls[SINGLE], values)
        return TilingPlan(SINGLE, 1, values, [ws] if ws else [], ub, 0, 1)
    share = max(1, ceil_div(rows, max(1, cores)))          # rows per core when every core works
    for key in (DOUBLE, SINGLE):
        most = _largest_tile(impls[key], env, nest, min(rows, share), ub_size)
        if most:
            break
    else:
        key, most = SPILL, 1 if nest.red else min(rows, share)
    per_block = ceil_div(share, most)                       # tiles per core, then the even tile that gives them
    m = ceil_div(share, per_block)
    if not nest.red and m < rows:   # a flat elementwise tile: whole 32-byte blocks of the narrowest dtype
        itemsize = min(int(np.dtype(n.y.dtype).itemsize) for n in impls[0].nodes)
        align = max(1, UB_BLOCK // itemsize)
        if m > align:
            m -= m % align
    tiles = ceil_div(rows, m)
    per_block = ceil_div(tiles, max(1, cores))
    block_dim = ceil_div(tiles, per_block)
    values = dict(env)
    values[nest.tile_var], values[nest.block_var] = m, per_block
    ub, ws = footprint(impls[key], values)
    if key != SPILL and ub > ub_size:
        raise AscGraphError(f"graph {hint.name!r}", "tiling", f"tile of {m} rows needs {ub} B of UB ({ub_size})")
    return TilingPlan(key, block_dim, values, [ws * block_dim] if ws else [], ub, rows, m)


def _largest_tile(impl: AscGraph, env: dict[str, int], nest: Nest, most: int, ub_size: int) -> int:
    """The most rows (<= most) whose footprint fits ub_size; 0 when not even one row does."""
    def fits(m: int) -> bool:
        try:
            return footprint(impl, {**env, nest.tile_var: m, nest.block_var: 1})[0] <= ub_size
        except ExprError:
            return False
    if not fits(1):
        return 0
    lo, hi = 1, max(1, most)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
