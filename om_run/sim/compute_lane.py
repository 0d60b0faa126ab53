"""The kernels' numerics on a thread of their own, in the order the simulation issues them.

A static model's execution does two things per kernel: the scheduler's bookkeeping (which task starts when, the
machine, the L2, the records: Python) and the kernel's numbers (numpy: mostly outside the GIL). One after the
other they leave a second core idle while the kernels are small (ShuffleNet: ~80 kernels of 0.1-0.5 ms). The lane
runs the numbers on one worker thread, first in first out: every launch and every landing of outputs is queued
in exactly the order the synchronous path would run it, so each kernel reads and writes device memory in the same
sequence and the results are the same bits. The scheduler only waits for the lane where it reads device memory
itself (a label or stream switch's value, a device tiling's depend values, a memcpy, the model's outputs):
`drain()`. A kernel that fails stops the lane: later items are skipped, and the failure (with the task it belongs
to) is raised by the next `drain()`.

Used when om-run has two host threads or more (om_run/sim/threads.py); with one, the synchronous path runs as before.
"""
from __future__ import annotations

import contextvars
import os
import queue
import threading
from typing import Callable


class LaneFailure(Exception):
    """A queued item failed: `task` is what it belonged to (the caller's label), `error` what it raised."""

    def __init__(self, task, error: BaseException):
        super().__init__(str(error))
        self.task, self.error = task, error


class ComputeLane:
    def __init__(self):
        self._items: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._failed: LaneFailure | None = None
        self._context: contextvars.Context | None = None

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="kernel-lane", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        get = self._items.get
        while True:
            task, fn, ctx = get()
            if fn is None:        # a drain marker: task is its Event
                task.set()
                continue
            if self._failed is not None:
                continue
            try:
                ctx.run(fn)
            except BaseException as exc:   # noqa: BLE001 - raised by drain() on the scheduler's thread
                self._failed = LaneFailure(task, exc)

    def submit(self, task, fn: Callable[[], None]) -> None:
        """Queue fn (it belongs to `task`, named if it fails); it runs in the caller's context (numpy's errstate)."""
        if self._thread is None:
            self._start()
        ctx = self._context
        if ctx is None:
            ctx = self._context = contextvars.copy_context()
        self._items.put((task, fn, ctx))

    def drain(self) -> None:
        """Wait until everything queued has run; raise the first failure (LaneFailure) and forget it."""
        self._context = None      # the next items run in the context of their own time
        if self._thread is None:
            return
        done = threading.Event()
        self._items.put((done, None, None))
        done.wait()
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed


_lane: ComputeLane | None = None
_lane_lock = threading.Lock()


def lane() -> ComputeLane:
    """The process's lane (one worker thread, started on first use)."""
    global _lane
    with _lane_lock:
        if _lane is None:
            _lane = ComputeLane()
        return _lane


def _after_fork_in_child() -> None:
    """A forked child has no worker thread: it starts a lane of its own."""
    global _lane, _lane_lock
    _lane, _lane_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
