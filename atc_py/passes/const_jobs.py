"""Constants computed on host threads while a pass goes on (weight preparation: fills, casts, BN scaling).

numpy releases the GIL in bulk loops, so big constant computations overlap each other and the pass's own
Python. A job's Const is *pending* until its value arrives (Value.data waits for it, wherever it is read).
Called on their own, the passes `wait` before they return. The pipeline instead hands the folds, the BN
scaling and the fp16 weight casts one ConstJobs that it waits for at the end of the build (the weights
partition takes pending constants as deferred parts, om/chunks.py), so they overlap the passes and the
compile that do not need their values; a failing job is then reported by the build, naming its node. Names
and order are decided on the calling thread: the graph does not depend on timing.

A job computed from a weight left in its file (a lazy value: ir/file_tensor.py) is not run now: its Const is
lazy too, computed when the .om's weights are written, one tensor at a time (read, cast, write, drop), so
a model bigger than memory converts; a failing one is reported by the writer, naming its node.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Callable, Iterable

import numpy as np

from ..common.errors import AtcError
from ..ir.dtypes import STRING
from ..ir.graph import Graph, TensorDesc, Value

ASYNC_MIN_BYTES = 1 << 18   # smaller constants are computed inline: a thread hand-off costs more than they do
THREADS = os.cpu_count() or 1
_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(THREADS, thread_name_prefix="const-job")
    return _pool


def worth_a_thread(desc: TensorDesc) -> bool:
    return THREADS > 1 and _big(desc)


def _big(desc: TensorDesc) -> bool:
    return desc.known and desc.dtype != STRING and desc.nbytes >= ASYNC_MIN_BYTES


def streamed(inputs: Iterable[Value | None]) -> bool:
    """Whether any input is a lazy value (a weight left in its file, or computed from one)."""
    return any(v is not None and v.lazy for v in inputs)


def deferred(desc: TensorDesc, inputs: Iterable[Value | None]) -> bool:
    """Whether a constant of `desc` computed from `inputs` is a job (ConstJobs.add) rather than computed now:
    big enough for a thread, or big and computed from a lazy input (then it is lazy too: computed when the
    .om's weights are written, one at a time, instead of held in memory from now on)."""
    return worth_a_thread(desc) or (_big(desc) and streamed(inputs))


def reader(v: Value | None) -> Callable[[], np.ndarray | None]:
    """v's value for a job: a lazy one is read when the job runs (nothing is held meanwhile), any other is
    taken now (a pending one waited for here, on the calling thread)."""
    if v is None:
        return lambda: None
    if v.lazy:
        return lambda: v.data
    data = v.data
    return lambda: data


class ConstJobs:
    """The pending Consts one pass created, in creation order."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.pending: list[Value] = []
        self.saturated = 0                    # constant values cast to fp16 that saturated (fp16_fold.py)
        self._count_lock = threading.Lock()

    def count_saturated(self, n: int) -> None:
        """Folds run on host threads: the count is kept under a lock."""
        with self._count_lock:
            self.saturated += n

    def add(self, name: str, desc: TensorDesc, compute: Callable[[], np.ndarray], what: str,
            inputs: Iterable[Value | None] = ()) -> Value:
        """A Const named `name` (already unique) of exactly `desc`, its value computed by `compute()` (which must
        not touch the graph: it runs on another thread while the graph changes; it reads its `inputs` through
        `reader`). `what` names the node in errors. Computed from a lazy input, the Const is lazy: `compute`
        runs whenever its value is read (by the weights writer, once), and nothing is kept."""
        def run() -> np.ndarray:
            data = np.ascontiguousarray(compute()).astype(desc.dtype, copy=False)
            if data.shape != tuple(desc.shape):
                raise AtcError("E19999", message=f"{what} produced shape {list(data.shape)}, "
                                                 f"its inferred shape is {list(desc.shape)}")
            return data
        if streamed(inputs):
            return self.graph.add_lazy_const(name, replace(desc), run, computed=True)
        v = self.graph.add_pending_const(name, replace(desc), _executor().submit(run))
        self.pending.append(v)
        return v

    def wait(self) -> None:
        """Every value has arrived; in creation order, so the first failing job is the one reported."""
        for v in self.pending:
            _ = v.data
        self.pending.clear()
