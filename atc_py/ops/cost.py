"""Cycles per block of one launch on its core type (DESIGN §8.3), from the op's Work and the SoC.

AI Core block cycles = max(cube, vector, data movement) + a fixed head. Every figure is either the
SoC's (clock, MKN, vec_calc_size, ddr/l2 rates, l2_size) or a named, documented assumption below.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..platform.soc import SocSpec
from .base import AIC, MIX, OpSpec, TilingContext

# Assumptions (no public measurements; to be calibrated against msprof):
CUBE_FRACTALS_PER_CYCLE = 1.0   # one 16x16x16 (fp16) fractal MAC per cycle per cube core
FP32_CUBE_RATE = 0.5            # fp32 runs the cube at half rate (DESIGN §8.3)
VEC_BYTES_PER_ELEM_REF = 2      # vec_calc_size counts fp16 elements per cycle
BLOCK_HEAD_CYCLES = 2000        # per-block start-up: scalar setup, first DMA latency, pipeline fill


@dataclass
class BlockCost:
    cube: int
    vector: int
    mte: int
    head: int

    @property
    def cycles(self) -> int:
        return max(self.cube, self.vector, self.mte) + self.head


def block_cost(spec: OpSpec, ctx: TilingContext, block_dim: int, soc: SocSpec) -> BlockCost:
    w = spec.work(ctx)
    blocks = max(1, block_dim)
    itemsize = np.dtype(w.dtype).itemsize
    cube = 0
    if w.fractals and spec.core_type in (AIC, MIX):
        rate = CUBE_FRACTALS_PER_CYCLE * (FP32_CUBE_RATE if itemsize >= 4 else 1.0)
        cube = int(-(-w.fractals // blocks) / rate)
    vec_per_cycle = max(1.0, soc.vec_calc_size * VEC_BYTES_PER_ELEM_REF / itemsize)
    vector = int(-(-w.vector_ops // blocks) / vec_per_cycle)
    rate = soc.l2_rate if w.bytes <= soc.l2_size else soc.ddr_rate
    mte = int(-(-w.bytes // blocks) / max(1, rate))
    return BlockCost(cube, vector, mte, BLOCK_HEAD_CYCLES)
