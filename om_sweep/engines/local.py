"""The local engine: `workers` threads of a concurrent.futures pool, each supervising one job process at
a time (sandbox.py forks it from a preloaded fork server): a process pool where every job gets a fresh
process, so a job can be timed out, memory-capped or crash without taking a worker with it."""
from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from atc_py.common.errors import AtcError

from .. import sandbox
from ..plan import Job
from . import OnResult


class LocalEngine:
    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = workers or os.cpu_count() or 1
        if self.workers < 1:
            raise AtcError("E40011", option="--workers", reason="must be at least 1")
        self.pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> "LocalEngine":
        problem = sandbox.can_start_jobs()
        if problem:
            raise AtcError("E40011", option="--engine local", reason=problem)
        sandbox.start_fork_server()
        self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="om-sweep-job")
        return self

    def __exit__(self, exc_type, *rest) -> None:
        if exc_type is not None:          # interrupted: no new jobs, stop the running ones
            self.pool.shutdown(wait=False, cancel_futures=True)
            sandbox.kill_running()
        self.pool.shutdown(wait=True)

    def run(self, jobs: list[Job], on_result: OnResult) -> None:
        pending = {self.pool.submit(sandbox.run_job, job): job for job in jobs}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: pending[f].key):
                on_result(pending.pop(fut), fut.result())
