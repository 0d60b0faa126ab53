"""The Dask engine: jobs are Dask distributed tasks running sandbox.run_job on the workers; Dask does the
scheduling, the transfer of model files and the retry of tasks whose worker died.

Without an address it starts a LocalCluster (worker processes on this machine, closed at the end). With
`--scheduler tcp://host:8786` it checks before the first job that the scheduler answers, that workers are
connected, that they run the same tools (same version digest, else their results would be filed under the
wrong key) and that they may start job processes. Files are shipped to workers (scattered once per file,
fetched by each worker that needs it) unless the cluster shares the driver's filesystem.

Dask waits for ever for a worker to run the remaining tasks: once the cluster has had no worker for
`worker_timeout` seconds (all killed, the scheduler gone) the sweep fails with E40012 rather than hang. It does
not fall back to running the jobs on this machine: the driver may be a small machine, and a lost cluster is
for its operator to see. The records of finished jobs are stored as they arrive, so the same command resumes.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time

from atc_py.common.errors import AtcError

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


POLL_S = 0.05          # the driver's wait between looks at finished tasks, when none is ready
LOOK_EVERY_S = 1.0     # ... and between asking the scheduler how many workers it has


def worker_count(client) -> int:
    """Workers the scheduler has now; ConnectionError when the client lost its scheduler (its cached answer would
    still name the workers it had)."""
    if client.status != "running":
        raise ConnectionError("the scheduler does not answer")
    try:
        info = client.scheduler_info(n_workers=0)       # the count only, not every worker's entry
    except TypeError:                                   # distributed before n_workers
        info = client.scheduler_info()
    return int(info.get("n_workers", len(info.get("workers", {}))))


class WorkerWatch:
    """Fails the sweep once the cluster has had no worker for `timeout` seconds: Dask itself would wait for ever."""

    def __init__(self, count, timeout: float, address: str, clock=time.monotonic, every: float = LOOK_EVERY_S):
        self.count, self.timeout, self.address, self.clock, self.every = count, timeout, address, clock, every
        self.since: float | None = None       # when the cluster was first seen without a worker
        self.workers = 1                       # workers at the last look
        self.unreachable = False               # ... and whether the scheduler answered it
        self.next_look = clock()

    def look(self) -> int:
        """Workers now (0 when the scheduler cannot be asked)."""
        self.unreachable = False
        try:
            return self.count()
        except Exception:  # noqa: BLE001 -- a scheduler that cannot be asked runs no task either
            self.unreachable = True
            return 0

    def check(self, done: int, total: int) -> None:
        now = self.clock()
        if now < self.next_look:
            return
        self.next_look = now + self.every
        self.workers = self.look()
        if self.workers > 0:
            self.since = None
        elif self.since is None:
            self.since = now
        elif now - self.since >= self.timeout:
            raise self.lost(done, total)

    def lost(self, done: int, total: int) -> AtcError:
        unreachable = "its scheduler does not answer; " if self.unreachable else ""
        return AtcError("E40012", address=self.address, seconds=f"{self.timeout:g}",
                        reason=f"{unreachable}{total - done} of {total} jobs did not finish; the records of the {done} "
                               "finished are kept: start workers (or use --engine local) and run the same command "
                               "again to resume, or raise --worker-timeout")


class DaskEngine:
    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int | None = None, connect_timeout: float = 10.0,
                 ship_files: bool | None = None, worker_timeout: float = 60.0):
        self.scheduler = scheduler
        self.requested_workers = workers
        self.connect_timeout = connect_timeout
        self.worker_timeout = worker_timeout
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
        except Exception as exc:  # noqa: BLE001 -- the workers cannot even run om-sweep's probe (not installed there?)
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
        with _quiet_logs():     # a client closed while it reconnects to a lost scheduler logs a traceback
            if self.client is not None:
                self.client.close()
                self.client = None
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None

    def run(self, jobs: list[Job], on_result: OnResult) -> None:
        """Submit every job, hand each record on as it arrives; a task cancelled because the files shipped for it
        were lost with their worker is submitted again (its files scattered again), up to RESUBMITS times."""
        _, distributed = _distributed()
        files = _Files(self.client, jobs, self.ship_files)
        finished = distributed.as_completed([], loop=self.client.loop, with_results=True, raise_errors=False)
        futures: dict = {}
        tries: dict[str, int] = {}

        def submit(job: Job) -> None:
            n = tries[job.key] = tries.get(job.key, 0) + 1
            fut = self.client.submit(sandbox.run_job, job, files.for_job(job), key=f"om-sweep-job-{job.key}-{n}",
                                     pure=False)   # a key of its own per try: the client keeps a cancelled one
            futures[fut] = job
            finished.add(fut)

        for job in jobs:
            submit(job)
        watch = WorkerWatch(lambda: worker_count(self.client), self.worker_timeout, self.scheduler or "LocalCluster")
        again: list[Job] = []
        done = 0
        try:
            while again or not finished.is_empty():
                if finished.has_ready():
                    fut, result = next(finished)
                    job = futures.pop(fut)
                    if _cancelled(fut, result) and tries[job.key] <= RESUBMITS:
                        again.append(job)
                        continue
                    on_result(job, result if isinstance(result, dict) else _task_failed(fut, result, job))
                    done += 1
                    continue
                watch.check(done, len(jobs))
                if again and watch.workers and watch.look():     # a fresh look: scattering to a dead
                    again = _submit_again(again, submit, files)  # worker stalls for its connect timeout
                time.sleep(POLL_S)
        finally:
            with _quiet_logs():
                self.client.cancel(list(futures))


RESUBMITS = 3       # a job whose task is cancelled more often than this is an E40006 row
SCATTER_WAIT_S = 5  # how long a scatter waits for a worker to take the data


class _Files:
    """The bytes of the files the jobs read, scattered to the cluster once each (none on a shared filesystem),
    and kept here: scattered data lost with its worker cannot be recomputed, so it is scattered again."""

    def __init__(self, client, jobs: list[Job], ship: bool):
        self.client = client
        self.data: dict[str, bytes] = {}
        self.futures: dict = {}
        if ship:
            for ref in (ref for job in jobs for ref in job.files):
                if ref.sha256 not in self.data:
                    with open(ref.path, "rb") as f:
                        self.data[ref.sha256] = f.read()
            self._scatter(list(self.data))

    def _scatter(self, digests: list[str]) -> None:
        futures = self.client.scatter([self.data[d] for d in digests], hash=False, timeout=SCATTER_WAIT_S)
        self.futures.update(zip(digests, futures))

    def scatter_lost(self) -> None:
        """Scatter again the files whose scattered copy was lost (raises TimeoutError / OSError without workers)."""
        lost = [d for d, fut in self.futures.items() if fut.status != "finished"]
        if lost:
            self._scatter(lost)

    def for_job(self, job: Job) -> dict:
        """sha256 -> Future of the bytes of each shipped file of the job."""
        return {ref.sha256: self.futures[ref.sha256] for ref in job.files if ref.sha256 in self.data}


def _cancelled(fut, result) -> bool:
    """The task did not run to an end: Dask cancelled it (its inputs were forgotten with a lost worker)."""
    import asyncio
    import concurrent.futures
    return fut.cancelled() or isinstance(result, (asyncio.CancelledError, concurrent.futures.CancelledError))


def _submit_again(jobs: list[Job], submit, files: _Files) -> list[Job]:
    """Submit the jobs again, their lost files scattered first; the jobs left if that cannot be done yet."""
    try:
        files.scatter_lost()
    except (TimeoutError, OSError):
        return jobs
    for job in jobs:
        submit(job)
    return []


def _task_failed(fut, result, job: Job) -> dict:
    """run_job records a job's own errors: a non-record is the Dask task's failure (its workers died, ...)."""
    from distributed.scheduler import KilledWorker
    exc = fut.exception() if fut.status == "error" else result
    if isinstance(exc, KilledWorker):       # Dask rescheduled it allowed-failures times
        tries, why = exc.allowed_failures + 1, "its Dask worker died each time"
    elif _cancelled(fut, result):
        tries, why = RESUBMITS + 1, "its Dask task was cancelled each time (the files shipped for it were lost " \
                                    "with their workers)"
    else:
        tries, why = 1, f"the Dask task failed ({_reason(exc)})"
    rec = failed(empty_record(job), AtcError("E40006", attempts=tries, reason=why), {}, job)
    rec["attempts"] = tries
    return rec


@contextlib.contextmanager
def _quiet_logs():
    """Dask's own log lines off while the engine shuts down: om-sweep has said what happened in one line."""
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)      # Dask's loggers each have their own level and handler
    try:
        yield
    finally:
        logging.disable(before)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
