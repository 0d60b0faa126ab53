"""Cycles per block of one launch on its core type (DESIGN §8.3), from the op's Work and the SoC.

AI Core block cycles = max(cube, vector, data movement) + a fixed head. SoC figures: clock (applied by the
caller), MKN per dtype, vec_calc_size, ddr_rate / l2_rate and l2_size. The non-SoC figures (head cycles,
cube fractal rate, fp32 rate) are parameters; their defaults are the simulator's runtime-profile defaults.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..platform.soc import SocSpec
from .base import AIC, MIX, OpSpec, TilingContext, Work

VEC_REF_ITEMSIZE = 2  # vec_calc_size counts fp16 elements per cycle


@dataclass
class BlockCost:
    cube: int
    vector: int
    mte: int
    head: int

    @property
    def cycles(self) -> int:
        return max(self.cube, self.vector, self.mte) + self.head


def work_cost(spec: OpSpec, w: Work, block_dim: int, soc: SocSpec, head_cycles: int = 2000,
              cube_fractals_per_cycle: float = 1.0, fp32_cube_rate: float = 0.5) -> BlockCost:
    blocks = max(1, block_dim)
    itemsize = np.dtype(w.dtype).itemsize if w.dtype else 4
    cube = 0
    if w.fractals and spec.core_type in (AIC, MIX):
        rate = cube_fractals_per_cycle * (fp32_cube_rate if itemsize >= 4 else 1.0)
        cube = int(-(-w.fractals // blocks) / rate)
    vec_per_cycle = max(1.0, soc.vec_calc_size * VEC_REF_ITEMSIZE / itemsize)
    vector = int(-(-w.vector_ops // blocks) / vec_per_cycle)
    rate = soc.l2_rate if w.bytes <= soc.l2_size else soc.ddr_rate
    mte = int(-(-w.bytes // blocks) / max(1, rate))
    return BlockCost(cube, vector, mte, head_cycles)


def block_cost(spec: OpSpec, ctx: TilingContext, block_dim: int, soc: SocSpec, **params) -> BlockCost:
    return work_cost(spec, spec.launch_work(ctx), block_dim, soc, **params)
