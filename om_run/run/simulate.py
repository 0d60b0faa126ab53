"""A loaded model run `loop` times on the simulated device: what om-run, om-run compare and om-sweep's jobs call."""
from __future__ import annotations

import time

import numpy as np

from atc_py.common.errors import AtcError

from ..sim.host import Simulation
from ..sim.profile import RuntimeProfile
from ..sim.threads import thread_budget
from ..sim.warm import warm


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Two executions' output alike, a NaN where the other has one (inputs of random bytes hold NaNs)."""
    return np.array_equal(a, b, equal_nan=a.dtype.kind in "fcV" and a.dtype.names is None)


def simulate(model, prof: RuntimeProfile, inputs, loop: int, compute: bool, allow_hazards: bool = False,
             tiling_cache: bool = True, host_threads: int = 1, shapes=None, timed: bool = False,
             max_loop_iterations: int | None = None, transfer_bytes=None, threads: int | None = None, atb=None,
             max_tasks: int | None = None, check_overflow: bool | None = None, dumper=None):
    """`loop` executions of a loaded model; (outputs of the last, LoopStats per loop[, wall seconds per loop]).
    Loops must agree. om-sweep simulates through this too. `shapes`: a dynamic model's input shapes when it
    runs timing only. `threads`: om-run's thread budget for the numerics (None: leave the pools as they are).
    `atb`: ATB's settings (AtbSettings; None: from ATB's environment variables, as om-run reads them)."""
    if threads is not None:
        with thread_budget(threads):
            return simulate(model, prof, inputs, loop, compute, allow_hazards, tiling_cache, host_threads, shapes,
                            timed, max_loop_iterations, transfer_bytes, atb=atb, max_tasks=max_tasks,
                            check_overflow=check_overflow, dumper=dumper)
    sim = Simulation(model, prof, compute=compute, allow_hazards=allow_hazards, tiling_cache=tiling_cache,
                     host_threads=host_threads, max_loop_iterations=max_loop_iterations, atb=atb,
                     max_tasks=max_tasks, check_overflow=check_overflow, dumper=dumper)
    sim.transfer_bytes = transfer_bytes
    warm(sim)   # one-time host work (programs, tilings, threads, scratch) before the first execution, not in it
    loops, outputs, walls = [], None, []
    for k in range(loop):
        t0 = time.perf_counter()
        result, stats = sim.run(inputs, shapes)
        walls.append(time.perf_counter() - t0)
        loops.append(stats)
        if outputs is not None and not all(_same(a, b) for a, b in zip(outputs, result)):
            raise AtcError("E30004", task="-", reason=f"loop {k + 1} gave different outputs than loop 1")
        outputs = result
    return (outputs, loops, walls) if timed else (outputs, loops)
