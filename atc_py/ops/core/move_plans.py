"""How CANN's data-movement kernels cut a tensor over the cores and how many MTE instructions each core issues.

A kernel that moves a tensor in a few large DataCopy instructions is priced by its bytes (atc_py/ops/core/cost.py).
One whose rows are short or not 32-byte aligned issues an instruction per row or per channel, and those instructions,
not the bytes, set its time (Work.mte_moves, priced at RuntimeProfile.mte_move_cycles each). The plans below
follow the public CANN op sources (the canndev tree: op_tiling/transpose.cc with tbe/impl/dynamic/transpose.py,
tbe/impl/trans_data_positive_source_ntc.py and trans_data_negative_target_ntc.py), simplified where the exact
figure changes a count by a few instructions; each function says what it keeps. A static ONNX Transpose runs the
dynamic kernel: ConstToAttrPass makes it TransposeD, TransposedUpdateFusionPass turns it back into Transpose when
that kernel supports the shape (on 310P its op info has dynamicCompileStatic), so the static transpose_d.py is not
what is modelled.
"""
from __future__ import annotations

from dataclasses import dataclass

from .base import TilingContext, TilingResult, Work, ceil_div, prod
from .elementwise_tiling import elementwise_tiling

BLOCK = 32                 # bytes in one UB block: the granule every move and burst is counted in
VNC_LANES = 16             # vnchwconv transposes 16 x 16 blocks: an element-as-block pass writes 16 slots a value
ROW_COPY_MAX = 256         # Transpose: rows up to this many bytes that are not block-aligned take the borrow path
ALIGNED_MIN_BURST = 4      # Transpose: an aligned row of at least this many blocks moves in bulk (scenario 9)
ROW_FIX_MOVES = 3          # Transpose row copy: the last row's anti-overlap fix (in, out, out of its last block)
CR_GATE_ALIGNED = 32       # TransData NC1HWC0 -> NCHW: H*W from which one vnchwconv pass serves (H*W % 16 == 0)
CR_GATE_RAGGED = 240       # ... and when H*W is not a multiple of 16; below it 16 images share the UB lines
LINES = 16                 # NC1HWC0 -> NCHW below the gate: images per pass (one UB line each)
RESERVED_UB = 4096         # Transpose keeps this much of the UB for itself


@dataclass(frozen=True)
class MovePlan:
    """The busiest core's share: `cores` that get work, the MTE instructions (`moves`) and vector element-ops
    (vnchwconv passes, UB-to-UB copies) the busiest one issues."""
    cores: int
    moves: int
    vector_ops: int = 0


class PlannedMove:
    """Mixin of a data-movement op (before OpSpec in its bases) whose launch follows its `plan`: the cores it
    names, and the busiest block's MTE instructions and vector passes on top of the even share of its bytes."""
    padded_vector_work = False   # the plans count the device layout's passes themselves

    def plan(self, ctx: TilingContext) -> MovePlan | None:
        raise NotImplementedError

    def planned_tiling(self, ctx: TilingContext) -> TilingResult:
        """Blocks of consecutive elements over the plan's cores (all the op's cores without a plan)."""
        plan = self.plan(ctx)
        res = elementwise_tiling(self, ctx, 2, False, plan.cores if plan else None)
        res.tiling_key = 0
        return res

    def block_work(self, ctx: TilingContext, block_dim: int) -> Work:
        w = super().block_work(ctx, block_dim)
        plan = self.plan(ctx)
        if plan:
            w.mte_moves, w.vector_ops = plan.moves, w.vector_ops + plan.vector_ops
        return w


def _score(loops: int, cores: int) -> int:
    """CANN's multi-core axis score (_get_mc_info_*): a full round of cores, the remainder, a bonus when even."""
    full = loops >= cores
    return (cores if full else 0) + loops % cores + (cores if full and loops % cores == 0 else 0)


def _split(loops: dict[str, int], cores: int) -> tuple[str, int, int]:
    """The axis CANN splits over the cores (best score; ties in the order given), its loops per core and the
    cores that get work."""
    axis = max(loops, key=lambda a: (_score(loops[a], cores), -list(loops).index(a)))
    per = ceil_div(loops[axis], cores)
    return axis, per, ceil_div(loops[axis], per)


def _merge(shape, perm) -> tuple[list[int], list[int]]:
    """Transpose's axis reduction: drop unit axes, merge axes that stay neighbours in the same order."""
    keep = [a for a in range(len(shape)) if shape[a] != 1]
    at = {a: i for i, a in enumerate(keep)}
    runs: list[list[int]] = []
    for a in (at[a] for a in perm if shape[a] != 1):
        if runs and runs[-1][-1] + 1 == a:
            runs[-1].append(a)
        else:
            runs.append([a])
    in_order = sorted(runs)                                      # the merged axes as the input lays them out
    dims = [prod(shape[keep[a]] for a in r) for r in in_order]
    return dims, [in_order.index(r) for r in runs]


def transpose_plan(shape, perm, itemsize: int, cores: int, ub_bytes: int) -> MovePlan | None:
    """A transpose that keeps its last axis (after merging) moves whole rows of it. CANN picks (transpose.cc):
    * aligned rows of at least 4 blocks (scenario 9): bulk moves, one in and one out per loop of rows that fit
      half the UB;
    * unaligned rows over 256 bytes (scenario 1): row by row, in passes of the rows one UB holds; inside a pass
      each row is two moves in and two out (its body and its overlapping last block), the rows after the last
      full pass one in and one out, and the last row a scalar anti-overlap fix;
    * shorter unaligned rows (scenario 5, "borrow axis"): tiles through vnchwconv, each element widened to a
      block (1/16 of the UB used), two UB-to-UB reorders of the widened tile and a second vnchwconv back; five
      moves a tile of about a sixteenth of the UB.
    None when the last axis moves (not modelled: the default streaming cost applies) or nothing moves."""
    dims, p = _merge(list(shape), list(perm))
    if len(dims) < 2 or p[-1] != len(dims) - 1 or 0 in dims:
        return None
    row = dims[-1] * itemsize
    rows = prod(dims[:-1])
    ub_blocks = (ub_bytes - RESERVED_UB) // BLOCK
    if row % BLOCK == 0 and row // BLOCK >= ALIGNED_MIN_BURST:
        # a loop moves one whole axis of rows: the largest that fits half the UB and still feeds every core
        fit = sorted((d for d in dims[:-1] if d * row <= ub_bytes // 2), reverse=True) or [1]
        loops = next((ceil_div(rows, d) for d in fit if ceil_div(rows, d) >= cores), ceil_div(rows, fit[-1]))
        used = min(cores, loops)
        return MovePlan(used, 2 * ceil_div(loops, used))
    if row > ROW_COPY_MAX:
        used = min(cores, rows)
        per_core = ceil_div(rows, used)
        per_pass = max(1, ub_blocks // ceil_div(row, BLOCK))
        in_passes = (per_core - 1) // per_pass * per_pass
        return MovePlan(used, 4 * in_passes + 2 * (per_core - 1 - in_passes) + ROW_FIX_MOVES)
    slots = ub_bytes // (2 * VNC_LANES * itemsize)              # payload one widened tile may hold
    tile = dims[-1] * max(1, slots // dims[-1] // VNC_LANES * VNC_LANES)
    elems = prod(dims)
    tiles = ceil_div(elems, tile)
    used = min(cores, tiles)
    per_core = ceil_div(tiles, used)
    widened = VNC_LANES * min(per_core * tile, elems)
    return MovePlan(used, 5 * per_core, 3 * widened)           # two vnchwconv passes and the UB reorder


def _hw_loops(hw: int, c0: int, itemsize: int, ub_bytes: int) -> int:
    """The H*W loops of a 5HD conversion: as many as a C1 block (C0 channels) needs of half the UB."""
    return ceil_div(hw * c0 * itemsize, ub_bytes // 2)


def to_5hd_plan(n: int, c: int, hw: int, c0: int, cores: int, itemsize: int, ub_bytes: int) -> MovePlan | None:
    """NCHW -> NC1HWC0 (trans_data_positive_source_ntc, one vnchwconv a C1 block): CANN splits the best-scoring
    of the N, C1 and H*W loops over the cores; each (image, C1 block, H*W loop) is read in, turned and written
    out. An H*W that is not a multiple of C0 cannot be read as C0 strided bursts: one move per channel instead.
    None for an empty tensor."""
    if min(n, c, hw) <= 0:
        return None
    c1, hwl = ceil_div(c, c0), _hw_loops(hw, c0, itemsize, ub_bytes)
    axis, per, used = _split({"n": n, "c1": c1, "hw": hwl}, cores)
    ragged = hw % c0 != 0
    image_reads = c if ragged else c1                             # one image's moves in, over all its C1 blocks
    if axis == "c1":
        return MovePlan(used, n * hwl * per * ((c0 if ragged else 1) + 1))
    images = per * hwl if axis == "n" else n * per
    return MovePlan(used, images * (image_reads + c1))


def from_5hd_plan(n: int, c: int, hw: int, c0: int, cores: int, itemsize: int,
                  ub_bytes: int) -> MovePlan | None:
    """NC1HWC0 -> NCHW (trans_data_negative_target_ntc). From H*W of the gate up, one vnchwconv pass per image
    and H*W loop (a move in, a move out; the images or the H*W loops are split over the cores). Below it 16
    images share the UB lines of a pass: each image is read in one move, each channel of the pass's C1 blocks
    reordered by a UB-to-UB move of one-block bursts, and the pass written out in one strided move; the C1
    blocks a pass takes are what one UB line holds of them (H*W padded to C0). None for an empty tensor."""
    if min(n, c, hw) <= 0:
        return None
    c1 = ceil_div(c, c0)
    gate = CR_GATE_ALIGNED if hw % c0 == 0 else CR_GATE_RAGGED
    if hw >= gate:
        hwl = _hw_loops(hw, c0, itemsize, ub_bytes)
        axis, per, used = _split({"n": n, "hw": hwl}, cores)
        return MovePlan(used, 2 * (per * hwl if axis == "n" else n * per))
    line = ub_bytes // itemsize // (2 * LINES) - c0
    unit = min(c1, max(1, line // (ceil_div(hw, c0) * c0 * c0)))
    groups = ceil_div(n, LINES)
    axis, per, used = _split({"n": groups, "c": ceil_div(c1, unit)}, cores)
    passes = per * ceil_div(c1, unit) if axis == "n" else groups * per
    images = min(n, LINES) * passes
    return MovePlan(used, images + passes * (unit * c0 + 1), 3 * passes * unit * c0 * hw * LINES)
