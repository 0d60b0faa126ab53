"""The SoC's execution units and memory in simulated time: core pools, the L2 and the DRAM interface.

A kernel (a Job) puts `blocks` blocks on the cores of its type (cube, vector, or one cube core with its vector
cores for MIX on split 910B; the AI Cores on coupled 310P). Blocks start on free cores in FIFO order of the
kernels waiting; a kernel with more blocks than free cores runs in waves, each wave a Group of blocks that
started together. A block alone takes `compute_ns` (its largest-block cycles at the core's own port rates,
atc_py/ops/core/cost.py) and moves its bytes: all of them through the chip's L2 bandwidth, its misses and
write-backs also through the chip's DRAM bandwidth. Every running group shares both (processor sharing: max-min
fair shares of each bandwidth, recomputed whenever a group starts or ends), so its blocks progress at
min(1 / compute_ns, its bandwidth shares / its bytes) per ns. However many kernels overlap, the bytes moved in
any interval never exceed what the bandwidths allow in it — overlap cannot beat physics.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from atc_py.ops.core.cost import BlockCost
from atc_py.platform.soc import SocSpec

from .l2 import L2Cache, Traffic, cold
from .profile import RuntimeProfile

EPS = 1e-9


class Pool:
    """Cores run whole tasks of a known duration (the AICPU)."""

    def __init__(self, name: str, count: int):
        self.name = name
        self.free = [0] * max(count, 1)
        self.busy_ns = 0
        self.spans: list[tuple[int, int]] = []   # (start, end) of every task it ran

    @property
    def count(self) -> int:
        return len(self.free)

    def run(self, t: int, dur: int) -> tuple[int, int]:
        start = max(t, heapq.heappop(self.free))
        heapq.heappush(self.free, start + dur)
        self.busy_ns += dur
        self.spans.append((start, start + dur))
        return start, start + dur

    @property
    def active_ns(self) -> int:
        """Time at least one of its cores was running a task (the union of the tasks' spans)."""
        total, lo, hi = 0, None, None
        for s, e in sorted(self.spans):
            if hi is None or s > hi:
                total += 0 if hi is None else hi - lo
                lo, hi = s, e
            else:
                hi = max(hi, e)
        return total + (0 if hi is None else hi - lo)


@dataclass(slots=True)
class Job:
    """One kernel. `cost` prices its largest block (None: `block_ns` per block and no memory traffic, for
    hand-built task lists); `reads`/`writes` are its args' address ranges (empty: all bytes cold); `moved`
    is Work.bytes of the whole launch."""
    core_type: str
    blocks: int
    cost: BlockCost | None = None
    block_ns: int = 0
    moved: int = 0
    reads: list = field(default_factory=list)
    writes: list = field(default_factory=list)
    on_start: Callable[[int], None] | None = None
    on_done: Callable[[int], None] | None = None
    work: object = None       # the launch's Work (for the reports)
    # set when it runs
    remaining: int = 0
    active: int = 0
    start: int | None = None
    end: int | None = None
    compute_ns: float = 0.0
    dram_per_block: float = 0.0
    l2_per_block: float = 0.0
    traffic: Traffic | None = None


@dataclass(slots=True)
class Group:
    job: Job
    n: int
    aic: int
    aiv: int
    left: float = 1.0     # fraction of a block still to do
    rate: float = 0.0     # fraction per ns


def fair_shares(demands: list[float], capacity: float) -> list[float]:
    """Max-min fair split of `capacity` among `demands`: small demands are met, the rest share equally."""
    out = [0.0] * len(demands)
    order = sorted(range(len(demands)), key=lambda i: demands[i])
    left, n = capacity, len(demands)
    for k, i in enumerate(order):
        give = min(demands[i], left / (n - k))
        out[i] = give
        left -= give
    return out


class Machine:
    def __init__(self, soc: SocSpec, prof: RuntimeProfile, l2: L2Cache | None = None):
        self.soc, self.prof = soc, prof
        self.split = soc.cube_vector_split
        self.cube_cores = soc.cube_cores
        self.vector_cores = soc.vector_core_cnt if self.split else 0
        self.ratio = max(1, soc.vector_core_cnt // max(soc.cube_cores, 1)) if self.split else 0
        self.free_aic, self.free_aiv = self.cube_cores, self.vector_cores
        # (cube, vector) cores one block of each kernel type holds: MIX takes a cube core and its vector cores
        # on a split SoC; a coupled one runs everything on its AI Cores
        self.need = {"AIC": (1, 0), "AIV": (0, 1), "MIX": (1, self.ratio)} if self.split else \
            {"AIC": (1, 0), "AIV": (1, 0), "MIX": (1, 0)}
        self.aicpu = Pool("AICPU", soc.ai_cpu_cnt)
        self.l2 = l2 if l2 is not None else L2Cache(soc.l2_size)
        self.dram_bw = soc.dram_bytes_per_ns * prof.dram_efficiency
        self.l2_bw = soc.l2_bytes_per_ns
        self.ns_per_cycle = 1000.0 / max(soc.cube_freq_mhz, 1)
        self.waiting: deque[Job] = deque()
        self.groups: list[Group] = []
        self.now = 0
        self.epoch = 0
        self._at: Callable | None = None
        self.busy_ns = {"AIC": 0.0, "AIV": 0.0}   # core-ns held by blocks
        self.active_ns = {"AIC": 0, "AIV": 0}      # ns in which at least one core of the type held a block
        self.dram_bytes = 0
        self.l2_bytes = 0

    # -- the event loop this machine posts to ---------------------------------------------------------
    def bind(self, at: Callable) -> None:
        """at(time, fn, *args): the caller's event queue, which calls fn(time, *args) in time order."""
        self._at = at

    def run_alone(self, t: int, job: Job) -> Job:
        """Run one kernel on an otherwise idle machine to its end (the host executor's kernels)."""
        heap: list = []
        seq = [0]

        def at(time, fn, *args):
            seq[0] += 1
            heapq.heappush(heap, (time, seq[0], fn, args))
        prev, self._at = self._at, at
        try:
            self.submit(t, job)
            while heap:
                time, _, fn, args = heapq.heappop(heap)
                fn(time, *args)
        finally:
            self._at = prev
        return job

    # -- kernels ----------------------------------------------------------------------------------------
    def submit(self, t: int, job: Job) -> None:
        self._advance(t)
        n = job.remaining = max(1, job.blocks)
        if not self.waiting:   # nothing queued: when all its blocks fit now, it starts without queueing
            aic, aiv = self.need.get(job.core_type, (1, 0))
            if (not aic or n * aic <= self.free_aic) and (not aiv or n * aiv <= self.free_aiv):
                self._first_wave(job)
                job.remaining = 0
                job.active += 1
                self.free_aic -= n * aic
                self.free_aiv -= n * aiv
                self.groups.append(Group(job, n, n * aic, n * aiv))
                self._reschedule()
                return
        self.waiting.append(job)
        self._dispatch()
        self._reschedule()

    def idle(self) -> bool:
        """No kernel running or waiting."""
        return not self.groups and not self.waiting

    def run_inline(self, t: int, job: Job) -> int | None:
        """`submit` + the ticks that end the kernel, without the event queue: for a caller that knows nothing
        else can happen before it ends (no other event pending, the machine idle). The same arithmetic as
        submit/_reschedule/_tick with one group; calls on_start, not on_done, and returns the end — or None,
        having done nothing, when the kernel does not fit the idle cores at once (waves: use submit)."""
        n = max(1, job.blocks)
        aic, aiv = self.need.get(job.core_type, (1, 0))
        if self.groups or self.waiting or (aic and n * aic > self.free_aic) or (aiv and n * aiv > self.free_aiv):
            return None
        if t > self.now:    # _advance over an idle machine
            self.now = t
        job.remaining = 0
        self._first_wave(job)
        job.active += 1
        g = Group(job, n, n * aic, n * aiv)
        self.groups.append(g)
        self._rates()
        busy = self.busy_ns
        while True:          # _reschedule, then _tick at its time (a tick that finds the block unfinished re-arms)
            self.epoch += 1
            nxt = self.now + max(1, math.ceil(max(g.left, 0.0) / g.rate - EPS))
            dt = nxt - self.now
            g.left -= g.rate * dt
            busy["AIC"] += g.aic * dt
            busy["AIV"] += g.aiv * dt
            if g.aic:
                self.active_ns["AIC"] += dt
            if g.aiv:
                self.active_ns["AIV"] += dt
            self.now = nxt
            if g.left <= g.rate * 0.5 + EPS:
                break
        self.groups.clear()
        job.active -= 1
        job.end = nxt
        self.epoch += 1      # the _reschedule after the last tick (nothing left to run)
        return nxt

    def run_aicpu(self, t: int, dur: int) -> tuple[int, int]:
        return self.aicpu.run(t, dur)

    def _dispatch(self) -> None:
        if not self.waiting:
            return
        for job in list(self.waiting):
            aic, aiv = self.need.get(job.core_type, (1, 0))
            n = job.remaining
            if aic:
                n = min(n, self.free_aic // aic)
            if aiv:
                n = min(n, self.free_aiv // aiv)
            if n <= 0:
                continue
            if job.start is None:
                self._first_wave(job)
            job.remaining -= n
            job.active += 1
            self.free_aic -= n * aic
            self.free_aiv -= n * aiv
            self.groups.append(Group(job, n, n * aic, n * aiv))
            if job.remaining == 0:
                self.waiting.remove(job)

    def _first_wave(self, job: Job) -> None:
        """The kernel starts: it looks its inputs up in the L2 (and claims its outputs there) and fixes what one
        block computes and moves."""
        job.start = self.now
        if job.cost is None:
            job.compute_ns = float(max(1, job.block_ns))
            job.traffic = Traffic()
        else:
            window = getattr(job.work, "reuse_window", 0)
            job.traffic = self.l2.access(job.reads, job.writes, job.moved, window) if (job.reads or job.writes) \
                else cold(job.moved)
            job.compute_ns = max(1.0, job.cost.cycles * self.ns_per_cycle)
            share = job.traffic.dram / job.moved if job.moved else 0.0
            job.l2_per_block = float(job.cost.bytes)
            job.dram_per_block = job.cost.bytes * share
        self.dram_bytes += job.traffic.dram
        self.l2_bytes += job.traffic.total
        if job.on_start is not None:
            job.on_start(self.now)

    # -- fluid progress -----------------------------------------------------------------------------------
    def _advance(self, t: int) -> None:
        dt = t - self.now
        if dt > 0:
            busy = self.busy_ns
            aic = aiv = 0
            for g in self.groups:
                g.left -= g.rate * dt
                busy["AIC"] += g.aic * dt
                busy["AIV"] += g.aiv * dt
                aic += g.aic
                aiv += g.aiv
            if aic:
                self.active_ns["AIC"] += dt
            if aiv:
                self.active_ns["AIV"] += dt
            self.now = t

    def _rates(self) -> None:
        gs = self.groups
        if len(gs) == 1:   # one wave alone: its compute or its share of either bandwidth, whichever is least
            g = gs[0]
            j = g.job
            r = 1.0 / j.compute_ns
            if j.dram_per_block:
                r = min(r, self.dram_bw / (g.n * j.dram_per_block))
            if j.l2_per_block:
                r = min(r, self.l2_bw / (g.n * j.l2_per_block))
            g.rate = r
            return
        caps = [1.0 / g.job.compute_ns for g in gs]
        need = [[g.n * g.job.dram_per_block for g in gs], [g.n * g.job.l2_per_block for g in gs]]
        for _ in range(4):
            new = list(caps)
            for bytes_, bw in zip(need, (self.dram_bw, self.l2_bw)):
                if sum(c * b for c, b in zip(caps, bytes_)) <= bw:
                    continue   # this bandwidth is not a bottleneck at the current rates
                shares = fair_shares([c * b for c, b in zip(caps, bytes_)], bw)
                new = [min(r, s / b) if b > 0 else r for r, s, b in zip(new, shares, bytes_)]
            if new == caps:
                break
            caps = new
        for g, r in zip(gs, caps):
            g.rate = r

    def _reschedule(self) -> None:
        self.epoch += 1
        gs = self.groups
        if not gs:
            return
        self._rates()
        if len(gs) == 1:
            g = gs[0]
            nxt = self.now + max(1, math.ceil(max(g.left, 0.0) / g.rate - EPS))
        else:
            nxt = min(self.now + max(1, math.ceil(max(g.left, 0.0) / g.rate - EPS)) for g in gs)
        self._at(nxt, self._tick, self.epoch)

    def _tick(self, t: int, epoch: int) -> None:
        if epoch != self.epoch:
            return   # a start or end since then changed the rates; a newer tick is queued
        self._advance(t)
        done = [g for g in self.groups if g.left <= g.rate * 0.5 + EPS]
        for g in done:
            self.groups.remove(g)
            self.free_aic += g.aic
            self.free_aiv += g.aiv
            job = g.job
            job.active -= 1
            if job.remaining == 0 and job.active == 0:
                job.end = t
                if job.on_done is not None:
                    job.on_done(t)   # may submit the next kernel (a SUPER_KERNEL's next member) right away
        self._dispatch()
        self._reschedule()

    # -- what the reports read ------------------------------------------------------------------------
    @property
    def aicore_name(self) -> str:
        return "AI Core (cube)" if self.split else "AI Core"

    def pools(self) -> list[tuple[str, float, int]]:
        """(name, busy core-ns, cores) per unit."""
        out = [(self.aicore_name, self.busy_ns["AIC"], self.cube_cores)]
        if self.split:
            out.append(("Vector Core", self.busy_ns["AIV"], self.vector_cores))
        out.append(("AICPU", float(self.aicpu.busy_ns), self.aicpu.count))
        return out

    def active(self) -> dict[str, int]:
        """Per unit (named as in pools), the time at least one of its cores was busy."""
        out = {self.aicore_name: self.active_ns["AIC"]}
        if self.split:
            out["Vector Core"] = self.active_ns["AIV"]
        out["AICPU"] = self.aicpu.active_ns
        return out

