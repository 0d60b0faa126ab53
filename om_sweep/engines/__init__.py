"""Engines run jobs and hand each record back as it arrives: `local` (a pool of job processes on this
machine, concurrent.futures + multiprocessing) and `dask` (Dask distributed: a LocalCluster or a
scheduler's address). Both run the same sandbox.run_job, so they give the same records."""
from __future__ import annotations

from typing import Callable, Protocol

from ..plan import Job

OnResult = Callable[[Job, dict], None]


class Engine(Protocol):
    name: str
    workers: int

    def __enter__(self) -> "Engine": ...

    def __exit__(self, *exc) -> None: ...

    def run(self, jobs: list[Job], on_result: OnResult) -> None: ...
