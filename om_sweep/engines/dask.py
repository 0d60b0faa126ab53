"""The Dask engine: jobs are Dask distributed tasks running sandbox.run_job on the workers; Dask does the
scheduling, the transfer of model files and the retry of tasks whose worker died.

Without an address it starts a LocalCluster (worker processes on this machine, closed at the end). With
`--scheduler tcp://host:8786` it checks before the first job that the scheduler answers, that workers are
connected, that they run the same tools (same version digest, else their results would be filed under the
wrong key) and that they may start job processes. Files are shipped to workers (scattered once per file,
fetched by each worker that needs it) unless the cluster shares the driver's filesystem.
"""
from __future__ import annotations

import logging
import os

from atc_py.errors import AtcError

from .. import sandbox
from ..job import empty_record, failed
from ..plan import Job
from ..toolversion import tool_version
from . import OnResult


def _distributed():
    try:
        import dask
        import distributed
    except ImportError:
        raise AtcError("E40008", package="dask[distributed]") from None
    return dask, distributed


def worker_info() -> dict:
    """Runs on each worker before the sweep."""
    return {"tool_version": tool_version(), "problem": sandbox.can_start_jobs()}


class DaskEngine:
    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int | None = None, connect_timeout: float = 10.0,
                 ship_files: bool | None = None):
        self.scheduler = scheduler
        self.requested_workers = workers
        self.connect_timeout = connect_timeout
        self.ship_files = (scheduler is not None) if ship_files is None else ship_files
        self.cluster = None
        self.client = None
        self.workers = 0

    def __enter__(self) -> "DaskEngine":
        dask, distributed = _distributed()
        address = self.scheduler or "LocalCluster"
        try:
            if self.scheduler:
                self.client = distributed.Client(self.scheduler, timeout=self.connect_timeout,
                                                 set_as_default=False)
            else:
                n = self.requested_workers or os.cpu_count() or 1
                with dask.config.set({"distributed.worker.daemon": False}):   # workers start job processes
                    self.cluster = distributed.LocalCluster(
                        n_workers=n, threads_per_worker=1, processes=True, silence_logs=logging.ERROR,
                        dashboard_address=None, scheduler_kwargs={"dashboard_address": ":0"})   # no fixed port
                self.client = distributed.Client(self.cluster, set_as_default=False)
            self._check_workers(address)
        except AtcError:
            self.__exit__(None, None, None)
            raise
        except (OSError, TimeoutError, ValueError) as exc:
            self.__exit__(None, None, None)
            raise AtcError("E40007", address=address, reason=_reason(exc)) from None
        return self

    def _check_workers(self, address: str) -> None:
        try:
            self.client.wait_for_workers(1, timeout=self.connect_timeout)
        except (TimeoutError, OSError) as exc:
            raise AtcError("E40007", address=address,
                           reason=f"no worker connected within {self.connect_timeout:g} s ({_reason(exc)})") from None
        try:
            infos = self.client.run(worker_info)
        except Exception as exc:  # the workers cannot even run om-sweep's probe (not installed there?)
            raise AtcError("E40007", address=address,
                           reason=f"the workers cannot run om-sweep ({_reason(exc)}); install atc-py[sweep] on them") \
                from None
        mine = tool_version()
        for worker, info in sorted(infos.items()):
            if info["tool_version"] != mine:
                raise AtcError("E40007", address=address,
                               reason=f"worker {worker} runs atc-py/om-run {info['tool_version']}, this machine "
                                      f"{mine}: its results would be filed under the wrong version")
            if info["problem"]:
                raise AtcError("E40007", address=address, reason=f"worker {worker}: {info['problem']}")
        self.workers = len(infos)

    def __exit__(self, exc_type, *rest) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def _shipped(self, jobs: list[Job]) -> dict:
        """sha256 -> Future of the file's bytes; each distinct file scattered once."""
        if not self.ship_files:
            return {}
        blobs = {}
        for job in jobs:
            for ref in job.files:
                if ref.sha256 not in blobs:
                    with open(ref.path, "rb") as f:
                        blobs[ref.sha256] = f.read()
        futures = self.client.scatter(list(blobs.values()), hash=False)
        return dict(zip(blobs, futures))

    def run(self, jobs: list[Job], on_result: OnResult) -> None:
        _, distributed = _distributed()
        from distributed.scheduler import KilledWorker
        blobs = self._shipped(jobs)
        futures = {}
        for job in jobs:
            shipped = {ref.sha256: blobs[ref.sha256] for ref in job.files if ref.sha256 in blobs}
            fut = self.client.submit(sandbox.run_job, job, shipped, key=f"om-sweep-job-{job.key}", pure=False)
            futures[fut] = job
        try:
            for fut, result in distributed.as_completed(futures, loop=self.client.loop, with_results=True,
                                                             raise_errors=False):
                job = futures[fut]
                if not isinstance(result, dict):        # run_job records errors: this is the task itself
                    exc = fut.exception() if fut.status == "error" else result
                    if isinstance(exc, KilledWorker):       # Dask rescheduled it allowed-failures times
                        tries, why = exc.allowed_failures + 1, "its Dask worker died each time"
                    else:
                        tries, why = 1, f"the Dask task failed ({_reason(exc)})"
                    rec = failed(empty_record(job), AtcError("E40006", attempts=tries, reason=why), {}, job)
                    rec["attempts"] = tries
                    result = rec
                on_result(job, result)
        finally:
            self.client.cancel(list(futures))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
