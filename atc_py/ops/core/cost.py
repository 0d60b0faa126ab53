"""Cycles of a kernel's largest block on its core, from the op's Work and the SoC.

block cycles = max(cube, vector, MTE) + head, where
* cube   = fractals / (fractal rate x dtype rate x cube efficiency) + one fixpipe drain per L0C output tile;
* vector = vector ops / (vec_calc_size elements per cycle x the op class's vector efficiency);
* MTE    = the block's bytes through the core's port to the L2, `l2_rate` bytes per cycle ([AICoreMemoryRates]),
           plus `move_cycles` for each of the MTE instructions a row- or channel-wise mover issues (Work.mte_moves):
           every byte crosses the L2. The ini's `ddr_rate` is not a port of its own: it is each core's share of
           the chip's DRAM bandwidth when all cores stream (ddr_rate x cores x clock: 910B1 AI Cores 1.42 TB/s of
           the HBM's 1.6, 310P3 AI Cores 144 GB/s + vector cores 63 of the 204 published,
           shared/reference/research/peers.md). The DRAM bandwidth is applied chip-wide, shared by every running
           kernel, by the simulator (om_run/sim/machine.py), as is the chip's L2 bandwidth;
* head   = the per-block head (scalar setup, first DMA latency, pipeline fill) + cross-core syncs.
The non-SoC figures are CostParams; the simulator fills them from its runtime profile (om_run/sim/profile.py,
where each has its source or is marked assumed) and the defaults here are only for callers without a profile.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...platform.soc import SocSpec
from .base import AIC, MIX, OpSpec, TilingContext, Work

VEC_REF_ITEMSIZE = 2  # vec_calc_size counts fp16 elements per cycle


@dataclass
class CostParams:
    head_cycles: int = 2000
    cube_fractals_per_cycle: float = 1.0
    cube_efficiency: float = 1.0
    cube_tile_overhead_cycles: int = 0
    fp32_cube_rate: float = 0.5
    vector_efficiency: dict = field(default_factory=dict)   # op class -> fraction of peak (missing: 1.0)
    sync_cycles: int = 0
    move_cycles: int = 0          # per MTE instruction counted in Work.mte_moves


@dataclass
class BlockCost:
    """One block's cycles per pipe, at the core's own rates (chip-level bandwidth is the simulator's)."""
    cube: int
    vector: int
    mte: int
    head: int
    bytes: int = 0
    serial: bool = False      # data movement and vector work do not overlap (no double buffering)

    @property
    def cycles(self) -> int:
        if self.serial:
            return max(self.cube, self.vector + self.mte) + self.head
        return max(self.cube, self.vector, self.mte) + self.head


def cube_rate(dtype: str | None, params: CostParams) -> float:
    """Fractals per cycle for a cube dtype: the fp16 fractal rate, fp32 at fp32_cube_rate of it."""
    itemsize = np.dtype(dtype).itemsize if dtype else 4
    return params.cube_fractals_per_cycle * (params.fp32_cube_rate if itemsize >= 4 else 1.0)


def work_cost(spec: OpSpec, w: Work, soc: SocSpec, params: CostParams | None = None) -> BlockCost:
    """Cycles of a block doing `w` (the block's own work, see OpSpec.block_work)."""
    p = params or CostParams()
    itemsize = np.dtype(w.dtype).itemsize if w.dtype else 4
    cube = 0
    if w.fractals and spec.core_type in (AIC, MIX):
        cube = int(w.fractals / (cube_rate(w.dtype, p) * p.cube_efficiency)) + w.cube_tiles * p.cube_tile_overhead_cycles
    vec_per_cycle = max(1.0, soc.vec_calc_size * VEC_REF_ITEMSIZE / itemsize)
    eff = float(p.vector_efficiency.get(w.vector_class, p.vector_efficiency.get("default", 1.0)))
    vector = int(w.vector_ops / (vec_per_cycle * eff))
    mte = int(w.bytes / max(1, soc.l2_rate)) + w.mte_moves * p.move_cycles
    return BlockCost(cube, vector, mte, p.head_cycles + w.syncs * p.sync_cycles, w.bytes, not w.pipelined)


def block_cost(spec: OpSpec, ctx: TilingContext, block_dim: int, soc: SocSpec,
               params: CostParams | None = None) -> BlockCost:
    """The largest block's cost when the op runs with `block_dim` blocks."""
    return work_cost(spec, spec.launch_block_work(ctx, block_dim), soc, params)
