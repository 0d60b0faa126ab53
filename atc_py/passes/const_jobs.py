"""Constants computed on host threads while a pass goes on (weight preparation: fills, casts, BN scaling).

numpy releases the GIL in bulk loops, so big constant computations overlap each other and the pass's own
Python. A job's Const is *pending* until its value arrives (Value.data waits for it, wherever it is read).
Called on their own, the passes `wait` before they return. The pipeline instead hands the folds, the BN
scaling and the fp16 weight casts one ConstJobs that it waits for at the end of the build (the weights
partition takes pending constants as deferred parts, om/chunks.py), so they overlap the passes and the
compile that do not need their values; a failing job is then reported by the build, naming its node. Names
and order are decided on the calling thread: the graph does not depend on timing.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Callable

import numpy as np

from ..errors import AtcError
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
    return THREADS > 1 and desc.known and desc.dtype != STRING and desc.nbytes >= ASYNC_MIN_BYTES


class ConstJobs:
    """The pending Consts one pass created, in creation order."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.pending: list[Value] = []

    def add(self, name: str, desc: TensorDesc, compute: Callable[[], np.ndarray], what: str) -> Value:
        """A Const named `name` (already unique) of exactly `desc`, its value computed by `compute()` (which must
        not touch the graph: it runs on another thread while the graph changes). `what` names the node in errors."""
        def run() -> np.ndarray:
            data = np.ascontiguousarray(compute()).astype(desc.dtype, copy=False)
            if data.shape != tuple(desc.shape):
                raise AtcError("E19999", message=f"{what} produced shape {list(data.shape)}, "
                                                 f"its inferred shape is {list(desc.shape)}")
            return data
        v = self.graph.add_pending_const(name, replace(desc), _executor().submit(run))
        self.pending.append(v)
        return v

    def wait(self) -> None:
        """Every value has arrived; in creation order, so the first failing job is the one reported."""
        for v in self.pending:
            _ = v.data
        self.pending.clear()
