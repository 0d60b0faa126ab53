"""The host threads kernels split their work over, and the rule that keeps their results independent of them.

A kernel's result must not depend on how many host threads compute it (real hardware is deterministic, and om-run
picks its thread count from the machine's load). So:
  * BLAS runs single-threaded (`hold_blas_single`): OpenBLAS's sgemm rounds differently with 1 and 2 threads for
    many shapes (its threads split the output differently and edge tiles accumulate in another order);
  * a kernel splits its work into *pieces* decided from the shapes alone (never from the thread count), each
    piece writing its own part of the output; `run_pieces` runs them on `HOST_THREADS` threads — with one thread
    the very same pieces run one after the other — so each output element is computed by the same calls in the
    same order whatever the thread count.
numpy releases the GIL inside large array operations and BLAS calls, so pieces of big kernels run in parallel.
om-run's `--threads` sets HOST_THREADS (runner/threads.py).
"""
from __future__ import annotations

import contextvars
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

HOST_THREADS = os.cpu_count() or 1   # read once: os.cpu_count() costs ~20 us, more than a small kernel
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_blas_single = False


def set_host_threads(n: int) -> None:
    """Run pieces on at most n threads (om-run's --threads); the pool's extra workers, if it has more, stay idle."""
    global HOST_THREADS
    HOST_THREADS = max(1, int(n))


def _executor() -> ThreadPoolExecutor:
    """One pool, created on first use; it starts a worker only when every worker it has is busy."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(8, os.cpu_count() or 1), thread_name_prefix="kernel-block")
        return _pool


def hold_blas_single() -> None:
    """Hold numpy's BLAS pools to one thread, process-wide, from now on (once): the kernels parallelise GEMMs
    themselves, in pieces fixed by the shapes. threadpoolctl reaches the pool at run time (an environment
    variable is read only when numpy loads)."""
    global _blas_single
    if _blas_single:
        return
    _blas_single = True
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:   # no way to reach the pool: it stays as numpy loaded it
        return
    threadpool_limits(limits=1, user_api="blas")


class _Pieces:
    """Work sharing over `count` pieces: every thread (the caller's too) takes the next piece until none is left,
    so a helper that starts late finds nothing to do and no thread ever waits for a queued one (no deadlock when
    the caller is itself a pool worker)."""

    def __init__(self, count: int, fn: Callable[[int], None]):
        self.count, self.fn = count, fn
        self.take = itertools.count().__next__      # atomic under the GIL
        self.left = count
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.errors: dict[int, BaseException] = {}

    def work(self) -> None:
        while True:
            i = self.take()
            if i >= self.count:
                return
            try:
                self.fn(i)    # every piece runs, failing or not: which error is raised must not depend on timing
            except BaseException as exc:   # noqa: BLE001 - re-raised on the calling thread
                self.errors[i] = exc
            finally:
                with self.lock:
                    self.left -= 1
                    if self.left == 0:
                        self.done.set()


def run_pieces(count: int, fn: Callable[[int], None]) -> None:
    """fn(0) .. fn(count - 1), on up to HOST_THREADS threads. Pieces must be independent (each writes its own
    part of the output) and must not depend on which thread runs them. The helpers run in copies of the caller's
    context (numpy's errstate is a context variable). A failing piece's exception is raised here — of several,
    the lowest piece's, whatever the timing."""
    threads = min(HOST_THREADS, count)
    if threads <= 1:
        for i in range(count):
            fn(i)
        return
    job = _Pieces(count, fn)
    pool = _executor()
    for _ in range(threads - 1):
        pool.submit(contextvars.copy_context().run, job.work)
    job.work()
    job.done.wait()
    if job.errors:
        raise job.errors[min(job.errors)]


def split(total: int, pieces: int, align: int = 1) -> list[tuple[int, int]]:
    """[lo, hi) ranges cutting `total` into at most `pieces` near-equal parts, each a multiple of `align` except
    the last."""
    if total <= 0:
        return []
    pieces = max(1, min(pieces, -(-total // align)))
    step = -(-(-(-total // pieces)) // align) * align
    return [(lo, min(total, lo + step)) for lo in range(0, total, step)]
