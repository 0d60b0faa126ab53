"""Core pools of one SoC: cube (AIC) cores, vector (AIV) cores, AICPU cores. Blocks of a kernel are spread
in waves over the earliest-free cores; kernels of different streams share the pools."""
from __future__ import annotations

import heapq

from atc_py.platform.soc import SocSpec


class Pool:
    def __init__(self, name: str, count: int):
        self.name = name
        self.free = [0] * max(count, 1)  # per core: the time it is free again (ns)
        self.busy_ns = 0

    @property
    def count(self) -> int:
        return len(self.free)

    def run_blocks(self, t: int, blocks: int, dur: int) -> tuple[int, int]:
        """Blocks of `dur` ns from time t on the earliest-free cores; returns (first start, end)."""
        n = len(self.free)
        self.busy_ns += blocks * dur
        if self.free[-1] <= t:  # fast path (the list is kept sorted): every core is free at t
            waves = -(-blocks // n)
            last = blocks - (waves - 1) * n
            self.free = [t + (waves - 1) * dur] * (n - last) + [t + waves * dur] * last
            return t, t + waves * dur
        heap = list(self.free)
        heapq.heapify(heap)
        first, end = None, t
        for _ in range(blocks):
            start = max(heapq.heappop(heap), t)
            first = start if first is None else first
            heapq.heappush(heap, start + dur)
            end = max(end, start + dur)
        self.free = sorted(heap)
        return first, end


class Cores:
    """The SoC's units. Split architectures (910B) have separate cube and vector cores; MIX blocks take one
    cube core and its vector cores together. Coupled ones (310P) run everything on AI Cores."""

    def __init__(self, soc: SocSpec):
        self.soc = soc
        self.split = soc.cube_vector_split
        self.aic = Pool("AI Core (cube)" if self.split else "AI Core", soc.cube_cores)
        self.aiv = Pool("Vector Core", soc.vector_core_cnt) if self.split else self.aic
        self.aicpu = Pool("AICPU", soc.ai_cpu_cnt)
        self.ratio = max(1, soc.vector_core_cnt // max(soc.cube_cores, 1)) if self.split else 0

    def pools(self) -> list[Pool]:
        return [self.aic, self.aiv, self.aicpu] if self.split else [self.aic, self.aicpu]

    def freq_mhz(self) -> int:
        return self.soc.cube_freq_mhz or 1000

    def run_kernel(self, t: int, core_type: str, blocks: int, dur: int) -> tuple[int, int]:
        if core_type == "AIV":
            return self.aiv.run_blocks(t, blocks, dur)
        if core_type == "MIX" and self.split:
            s1, e1 = self.aic.run_blocks(t, blocks, dur)
            s2, e2 = self.aiv.run_blocks(t, blocks * self.ratio, dur)
            return min(s1, s2), max(e1, e2)
        return self.aic.run_blocks(t, blocks, dur)

    def run_aicpu(self, t: int, dur: int) -> tuple[int, int]:
        return self.aicpu.run_blocks(t, 1, dur)
