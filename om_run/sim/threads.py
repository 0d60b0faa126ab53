"""om-run's thread budget (`--threads N`): how many threads its numerics may use, and the BLAS pools held to it.

numpy's BLAS (OpenBLAS here) starts one thread per core and its threads spin-wait for each other inside every
GEMM: when another process holds one of the cores, each GEMM waits for the thread that is not running, and a
run with 2 BLAS threads on a busy 2-core machine took 2-13x as long as with one. So the default is not "every
core" but the cores om-run may use *and finds idle*: the cores of its CPU affinity (and cgroup quota), less the
CPU time other processes took over an interval measured at no cost — from the start of om-run to the start of
the simulation (loading the model), minus om-run's own CPU time in it. BLAS pools are limited through
threadpoolctl (the maintained way to reach OpenBLAS/MKL/BLIS/OpenMP pools of any library at run time; an
environment variable is read only when the library loads, which numpy did before om-run could set it).

The budget goes to the kernels' own host pool (atc_py/ops/core/host_pool.py), not to BLAS: BLAS runs on one thread
(OpenBLAS rounds some GEMMs differently with 1 and 2 threads), big GEMMs are cut into panels fixed by the
shapes, and work whose elements are computed alone (stacks of whole GEMMs, copies, elementwise passes) is cut
by N — so the outputs are the same bits whatever N is.
"""
from __future__ import annotations

import contextlib
import math
import os
import time

from atc_py.ops.core import host_pool

MIN_SAMPLE_S = 0.05      # the shortest interval the load is judged over (jiffies are 10 ms)
BUSY_MARGIN = 0.3        # a core counts as taken when others used more than this share of one over the interval


def usable_cores() -> int:
    """The cores this process may run on: its affinity mask, capped by a cgroup v2 CPU quota."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            n = min(n, max(1, math.floor(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, n)


def _cpu_jiffies(cpus: set[int] | None) -> tuple[int, int] | None:
    """(busy, total) jiffies summed over `cpus` (all when None) from /proc/stat; None off Linux."""
    try:
        with open("/proc/stat") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    busy = total = 0
    for line in lines:
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *vals = line.split()
        if cpus is not None and int(name[3:]) not in cpus:
            continue
        v = [int(x) for x in vals[:8]]
        idle = v[3] + v[4]        # idle + iowait
        total += sum(v)
        busy += sum(v) - idle
    return busy, total


class LoadProbe:
    """Started early (before the model loads); `idle_cores()` later says how many of the usable cores other
    processes left free meanwhile."""

    def __init__(self):
        try:
            self.cpus = set(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            self.cpus = None
        self.t0 = _clock()
        self.own0 = self._own()
        self.j0 = _cpu_jiffies(self.cpus)

    @staticmethod
    def _own() -> float:
        t = os.times()
        return t.user + t.system

    def idle_cores(self) -> int:
        cores = usable_cores()
        if self.j0 is None:
            return cores
        wait = MIN_SAMPLE_S - (_clock() - self.t0)
        if wait > 0:
            time.sleep(wait)
        j1 = _cpu_jiffies(self.cpus)
        elapsed = _clock() - self.t0
        if j1 is None or j1[1] <= self.j0[1] or elapsed <= 0:
            return cores
        ncpu = len(self.cpus) if self.cpus else (os.cpu_count() or 1)
        busy_share = (j1[0] - self.j0[0]) / (j1[1] - self.j0[1])          # of all our CPUs' time
        others = max(0.0, busy_share * ncpu - (self._own() - self.own0) / elapsed)   # cores others kept busy
        return choose_threads(cores, others)


def choose_threads(cores: int, others_busy: float) -> int:
    """Threads for `cores` usable cores when other processes kept `others_busy` cores' worth busy."""
    return max(1, min(cores, cores - math.floor(others_busy + 1 - BUSY_MARGIN)))


_controller = None
_clock = time.monotonic


def _blas_controller():
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController  # ~20 ms to scan the loaded libraries: once
        _controller = ThreadpoolController()
    return _controller


@contextlib.contextmanager
def thread_budget(n: int):
    """Within the block, the kernels' host pool uses at most `n` threads; BLAS/OpenMP pools one (the kernels
    split their GEMMs themselves, the same way for any n)."""
    n = max(1, int(n))
    old = host_pool.HOST_THREADS
    host_pool.set_host_threads(n)
    try:
        with _blas_controller().limit(limits=1):
            yield n
    finally:
        host_pool.set_host_threads(old)


def blas_threads() -> int:
    """The largest thread count of a loaded BLAS pool right now (1 when there is none)."""
    info = _blas_controller().info()
    return max([p["num_threads"] for p in info if p.get("user_api") == "blas"] or [1])
