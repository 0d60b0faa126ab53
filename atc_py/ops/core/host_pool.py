"""The host threads kernels split their work over, and the rule that keeps their results independent of them.

A kernel's result must not depend on how many host threads compute it (real hardware is deterministic, and om-run
picks its thread count from the machine's load). So:
  * BLAS runs single-threaded (`hold_blas_single`): OpenBLAS's sgemm rounds differently with 1 and 2 threads for
    many shapes (its threads split the output differently and edge tiles accumulate in another order);
  * a kernel whose rounding depends on how it is cut (a GEMM cut into panels: gemm.py) splits its work into
    *pieces* decided from the shapes alone (never from the thread count), each piece writing its own part of the
    output; `run_pieces` runs them on `HOST_THREADS` threads — with one thread the very same pieces run one after
    the other — so each output element is computed by the same calls in the same order whatever the thread count;
  * work whose every element is computed alone (copies, elementwise passes, window reductions of whole planes, a
    stack of whole GEMMs numpy runs one BLAS call each) gives the same bits however it is cut: it is cut by the
    thread count (`cuts`; not at all on one thread), and only when big enough to pay for the hand-off.
numpy releases the GIL inside large array operations and BLAS calls, so pieces of big kernels run in parallel.
om-run's `--threads` sets HOST_THREADS (om_run/sim/threads.py).
"""
from __future__ import annotations

import contextvars
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

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
            _pool = ThreadPoolExecutor(max(64, os.cpu_count() or 1), thread_name_prefix="kernel-block")
        return _pool


def _after_fork_in_child() -> None:
    """A forked child (om-sweep's job processes come from a fork server that ran a model) has none of the pool's
    threads: its executor would queue work for workers that do not exist. It starts a pool of its own."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def hold_blas_single() -> None:
    """Hold numpy's BLAS pools to one thread, process-wide, from now on (once; every kernel launch calls it): the
    kernels parallelise GEMMs themselves, in pieces fixed by the shapes. threadpoolctl reaches the pool at run
    time (an environment variable is read only when numpy loads)."""
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


HEAVY_MIN_BYTES = 2 << 20    # ...for work of a few ns an element (exp, float16 arithmetic and casts): cut from here
#                              (2 threads: exp 1.7x, a float16 cast 1.3-1.8x from 1-4 MB; an add only from 16 MB)
EXACT_MIN_BYTES = 32 << 20   # exact work (copies, elementwise passes, pooling) smaller than this is not cut: on the
#                              2-core VM, cutting ResNet-50's 3-7 MB im2col copies and max pool made --threads 2 slower
#                              (102 -> 116 ms), ShuffleNet's 1-4 MB ones up to 2x slower per kernel; huge passes still gain


def cuts(total: int, nbytes: int, align: int = 1, heavy: bool = False) -> list[tuple[int, int]]:
    """[lo, hi) ranges of `total` rows for work whose every element is computed alone — copies, elementwise
    passes, window reductions of whole planes — so any cut gives the same bits: one range on one thread or for
    small work (EXACT_MIN_BYTES; HEAVY_MIN_BYTES for `heavy` work, a few ns an element), else one per thread —
    two for big work (a thread the machine delays leaves its second range to the others)."""
    if HOST_THREADS <= 1 or nbytes < (HEAVY_MIN_BYTES if heavy else EXACT_MIN_BYTES):
        return [(0, total)] if total > 0 else []
    return split(total, HOST_THREADS * (2 if nbytes >= 4 * EXACT_MIN_BYTES else 1), align)


def split(total: int, pieces: int, align: int = 1) -> list[tuple[int, int]]:
    """[lo, hi) ranges cutting `total` into at most `pieces` near-equal parts, each a multiple of `align` except
    the last."""
    if total <= 0:
        return []
    pieces = max(1, min(pieces, -(-total // align)))
    step = -(-(-(-total // pieces)) // align) * align
    return [(lo, min(total, lo + step)) for lo in range(0, total, step)]


scratch_grown = 0   # scratch buffers made or grown so far, on any thread (tests: warm() leaves none to the execution)
_scratch = threading.local()   # per thread (pieces and constant folding run kernels on several threads at once)


def scratch(name: str, shape: tuple, dtype) -> np.ndarray:
    """A buffer of `shape` reused by every launch on this thread: one flat array per name that grows to the
    largest launch. Fresh multi-megabyte arrays cost page faults on first touch (~10-20 % of an im2col copy);
    the caller must not keep the buffer past its kernel."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    bufs = getattr(_scratch, "bufs", None)
    if bufs is None:
        bufs = _scratch.bufs = {}
    buf = bufs.get(name)
    if buf is None or buf.size < size:
        global scratch_grown
        scratch_grown += 1
        buf = bufs[name] = np.empty(size, np.uint8)
    return buf[:size].view(dtype).reshape(shape)


def reserve(needs: dict[str, int]) -> None:
    """This thread's scratch buffers grown to `needs` (name -> bytes) and their pages touched now."""
    for name, nbytes in needs.items():
        scratch(name, (nbytes,), np.uint8).fill(0)


def warm(caller: dict[str, int], pieces: dict[str, int], wait_s: float = 5.0) -> None:
    """Before a model's first execution: the calling thread's scratch reserved for `caller` (and `pieces`), the
    pool's workers for HOST_THREADS started, each with its scratch reserved for `pieces` and BLAS called once —
    one-time costs (thread starts, page faults) paid at load, not by the first execution."""
    hold_blas_single()
    small = np.ones((64, 64), np.float32)

    def ready():
        reserve(pieces)
        small @ small
    reserve({k: max(caller.get(k, 0), pieces.get(k, 0)) for k in {**caller, **pieces}})
    small @ small
    helpers = HOST_THREADS - 1
    if helpers <= 0:
        return
    gate = threading.Barrier(helpers + 1)   # every helper on a thread of its own: the pool starts them all

    def helper():
        try:
            gate.wait(wait_s)
        except threading.BrokenBarrierError:
            pass
        ready()
    futures = [_executor().submit(helper) for _ in range(helpers)]
    try:
        gate.wait(wait_s)
    except threading.BrokenBarrierError:
        pass
    for f in futures:      # a warm-up is never worth waiting long for: the execution works without it
        try:
            f.result(wait_s)
        except Exception:   # noqa: BLE001
            pass
