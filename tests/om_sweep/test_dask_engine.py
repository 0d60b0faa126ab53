"""om-sweep's Dask engine gives the same table as the local engine: on a LocalCluster it starts itself, on
a scheduler given by address (files shipped or on a shared filesystem), and on separate scheduler and
worker processes; an unreachable or unusable cluster is one clear error before any job runs."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from om_sweep.engines import dask as dask_engine
from tests.helpers.sweep import (
    MODELS,
    PLUGIN,
    ROOT,
    om_sweep,
    sample_models,
    table,
    write_sweep,
)

distributed = pytest.importorskip("distributed")

SAMPLES_X_SOCS_X_SINK = {"models": sample_models(),
                         "grid": {"soc_version": ["Ascend910B1", "Ascend310P3"], "tiling_schedule_optimize": [0, 1]}}

CNN_ONLY = {"models": [str(MODELS / "small_cnn.onnx")], "grid": {"soc_version": ["Ascend910B1"]}}


@pytest.fixture(scope="module")
def cluster():
    """One in-process LocalCluster (2 single-thread workers) listening on TCP, shared by the module."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                                  host="127.0.0.1", dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": ":0"},
                                  silence_logs=logging.ERROR) as c:
        yield c


@pytest.fixture(scope="module")
def local_table(tmp_path_factory):
    folder = tmp_path_factory.mktemp("local")
    sweep = write_sweep(folder, SAMPLES_X_SOCS_X_SINK)
    code, _, stderr = om_sweep("run", sweep, "-o", folder / "r", "--engine", "local", "--workers", "2", "--no-report")
    assert code == 0, stderr
    return sweep, table(folder / "r")


@pytest.mark.heavy
def test_samples_local_and_dask_give_identical_tables(tmp_path, cluster, local_table):
    sweep, local = local_table
    assert len(local) == len(sample_models()) * 4
    assert sum(r["status"] == "ok" for r in local) == len(local)     # every sample runs with its inputs
    assert {r["e2e_us"] > 0 for r in local} == {True}
    for mode in ("--ship-files", "--shared-fs"):
        out = tmp_path / mode.strip("-")
        code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--engine", "dask", "--scheduler",
                                        cluster.scheduler_address, mode, "--no-report")
        assert code == 0, stderr
        assert "(dask)" in stderr and f"{len(local)} jobs run" in stdout
        assert table(out) == local


def test_engine_dask_alone_starts_and_closes_a_local_cluster(tmp_path):
    doc = {"models": [str(MODELS / "small_cnn.onnx"), str(MODELS / "tf_lenet.pb")],
           "grid": {"soc_version": ["Ascend910B1", "Ascend310P3"]}}
    sweep = write_sweep(tmp_path, doc)
    assert om_sweep("run", sweep, "-o", tmp_path / "local", "--no-report")[0] == 0
    code, stdout, stderr = om_sweep("run", sweep, "-o", tmp_path / "dask", "--engine", "dask", "--workers", "1")
    assert code == 0, stderr
    assert table(tmp_path / "dask") == table(tmp_path / "local")
    assert (tmp_path / "dask" / "report.html").is_file()
    import multiprocessing
    assert not [p for p in multiprocessing.active_children() if "Dask" in p.name or "Nanny" in p.name]


def test_unreachable_scheduler_is_an_error_before_starting(tmp_path):
    sweep = write_sweep(tmp_path, CNN_ONLY)
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--engine", "dask", "--scheduler",
                               "tcp://127.0.0.1:9", "--connect-timeout", "1")
    assert code == 1, stderr
    assert stderr.strip().startswith("[ERROR] E40007: Cannot use the Dask scheduler tcp://127.0.0.1:9:")
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    assert not (tmp_path / "r" / "results.parquet").exists()


def test_workers_running_other_tools_are_refused(tmp_path, cluster, monkeypatch):
    monkeypatch.setattr(dask_engine, "worker_info", lambda: {"tool_version": "0.0.1+src.other", "problem": ""})
    sweep = write_sweep(tmp_path, CNN_ONLY)
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--engine", "dask", "--scheduler",
                               cluster.scheduler_address)
    assert code == 1 and "E40007" in stderr and "runs atc-py/om-run 0.0.1+src.other" in stderr
    assert not list((tmp_path / "r" / "jobs").glob("*.json"))


def _start(args, env=None):
    return subprocess.Popen([sys.executable, "-m", "dask", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})}, start_new_session=True)


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


@pytest.mark.heavy
def test_separate_scheduler_and_worker_processes(tmp_path):
    """`dask scheduler` + `dask worker` as separate processes: a default (daemonic) nanny worker is refused
    with the fix named; one started with DASK_DISTRIBUTED__WORKER__DAEMON=False runs the sweep."""
    sched_file = tmp_path / "scheduler.json"
    sweep = write_sweep(tmp_path, {"models": [str(MODELS / "small_cnn.onnx"),
                                              {"path": str(MODELS / "custom_op.onnx"),
                                               "inputs": str(MODELS / "custom_op.inputs.npz"),
                                               "flags": {"op_plugin": str(PLUGIN)}}],
                                   "grid": {"soc_version": ["Ascend910B1"], "tiling_schedule_optimize": [0, 1]}})
    assert om_sweep("run", sweep, "-o", tmp_path / "local", "--no-report")[0] == 0
    procs = [_start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(sched_file)])]
    try:
        address = _address(sched_file)
        worker_args = ["worker", "--scheduler-file", str(sched_file), "--nthreads", "1", "--nworkers", "1",
                       "--no-dashboard"]
        procs.append(_start(worker_args))
        code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--engine", "dask", "--scheduler", address,
                                   "--connect-timeout", "60")
        assert code == 1 and "E40007" in stderr and "DASK_DISTRIBUTED__WORKER__DAEMON=False" in stderr, stderr
        _stop(procs.pop())
        procs.append(_start(worker_args, {"DASK_DISTRIBUTED__WORKER__DAEMON": "False"}))
        with distributed.Client(address, timeout=30) as client:     # the old worker has left
            deadline = time.monotonic() + 60
            while len(client.scheduler_info()["workers"]) != 1 and time.monotonic() < deadline:
                time.sleep(0.1)
        code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--engine", "dask", "--scheduler", address,
                                   "--connect-timeout", "60", "--no-report")
        assert code == 0, stderr
        assert table(tmp_path / "r") == table(tmp_path / "local")
    finally:
        for p in reversed(procs):
            _stop(p)


def test_a_job_whose_workers_died_is_a_row(tmp_path, cluster, monkeypatch):
    """Dask reschedules a task whose worker died, up to allowed-failures, then raises KilledWorker: that
    job becomes an E40006 row and the others still run."""
    from om_sweep import sandbox
    real = sandbox.run_job

    def dies_on_tf(job, shipped=None):
        if job.model.endswith(".pb"):
            raise distributed.scheduler.KilledWorker("om-sweep-job", SimpleNamespace(address="tcp://127.0.0.1:1"), 3)
        return real(job, shipped)

    monkeypatch.setattr(sandbox, "run_job", dies_on_tf)    # the in-process workers run this one
    sweep = write_sweep(tmp_path, {"models": [str(MODELS / "small_cnn.onnx"), str(MODELS / "tf_lenet.pb")],
                                   "grid": {"soc_version": ["Ascend910B1"]}, "run": {"compute": False}})
    code, stdout, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--engine", "dask", "--scheduler",
                                    cluster.scheduler_address, "--no-report")
    assert code == 0, stderr
    rows = {r["model"]: r for r in table(tmp_path / "r")}
    assert rows[str(MODELS / "small_cnn.onnx")]["status"] == "ok"
    dead = rows[str(MODELS / "tf_lenet.pb")]
    assert dead["status"] == "E40006" and dead["attempts"] == 4
    assert dead["error_message"] == "The job's process died in each of 4 attempt(s): its Dask worker died each time"


def _address(sched_file) -> str:
    """The scheduler's address from its --scheduler-file, once written (the file appears before its JSON)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            return json.loads(sched_file.read_text())["address"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.1)
    return json.loads(sched_file.read_text())["address"]


def _scheduler(tmp_path):
    """A `dask scheduler` process and its address."""
    sched_file = tmp_path / "scheduler.json"
    proc = _start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                   str(sched_file)])
    return proc, _address(sched_file), sched_file


def _kill_when(predicate, proc, timeout: float = 120):
    """A thread that SIGKILLs proc's whole process group (worker, its fork server, its job) once predicate();
    proc may be a callable choosing the process then."""
    import threading

    def watch():
        deadline = time.monotonic() + timeout
        while not predicate() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.killpg((proc() if callable(proc) else proc).pid, 9)
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


@pytest.mark.heavy
@pytest.mark.parametrize("mode", ["--ship-files", "--shared-fs", "scheduler"])
def test_losing_every_worker_fails_the_sweep_and_keeps_the_finished_records(tmp_path, mode, capfd):
    """Killing the last worker (or the scheduler) left the driver waiting for ever: now, after --worker-timeout
    seconds without a worker, one E40012 line; the records that arrived are stored and the same command resumes
    from them."""
    doc = {"models": [str(MODELS / "small_cnn.onnx")],
           "grid": {"soc_version": ["Ascend910B1", "Ascend310P3"], "tiling_schedule_optimize": [0, 1]},
           "run": {"compute": False, "loop": 2000}}      # ~1 s a job: three are left when the first is stored
    sweep = write_sweep(tmp_path, doc)
    out, jobs = tmp_path / "r", tmp_path / "r" / "jobs"
    sched, address, sched_file = _scheduler(tmp_path)
    worker = _start(["worker", "--scheduler-file", str(sched_file), "--nthreads", "1", "--no-nanny",
                     "--no-dashboard"])
    try:
        victim = sched if mode == "scheduler" else worker
        killer = _kill_when(lambda: jobs.is_dir() and any(jobs.glob("*.json")), victim)
        t0 = time.monotonic()
        code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--engine", "dask", "--scheduler", address,
                                        "--connect-timeout", "60", "--worker-timeout", "2",
                                        "--ship-files" if mode == "scheduler" else mode)
        killer.join(5)
        errors = [line for line in stderr.splitlines() if line.startswith("[ERROR]")]
        assert code == 1 and "Traceback" not in stderr and len(errors) == 1, stderr
        assert "Traceback" not in capfd.readouterr().err        # nor from Dask's loggers, on the real stderr
        kept = len(list(jobs.glob("*.json")))
        assert 1 <= kept < 4
        lost = "its scheduler does not answer; " if mode == "scheduler" else ""
        assert errors[0] == (f"[ERROR] E40012: The Dask cluster {address} has had no worker for 2 s: {lost}{4 - kept} "
                             f"of 4 jobs did not finish; the records of the {kept} finished are kept: start workers (or "
                             "use --engine local) and run the same command again to resume, or raise --worker-timeout")
        assert time.monotonic() - t0 < 60
        assert not (out / "results.parquet").exists()
    finally:
        _stop(worker)
        _stop(sched)
    code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0 and f"4 points, {4 - kept} jobs run, {kept} reused" in stdout, stderr


@pytest.mark.heavy
@pytest.mark.parametrize("mode", ["--ship-files", "--shared-fs"])
def test_a_worker_started_after_the_last_one_died_finishes_the_sweep(tmp_path, mode):
    """The only worker dies mid-sweep and another joins within --worker-timeout: nothing is lost. With shipped
    files Dask cancels the tasks whose scattered files died with the worker (scattered data cannot be
    recomputed): the files are scattered again and the jobs submitted again, not recorded as failed."""
    doc = {"models": [str(MODELS / "small_cnn.onnx")],
           "grid": {"soc_version": ["Ascend910B1", "Ascend310P3"], "tiling_schedule_optimize": [0, 1]},
           "run": {"compute": False, "loop": 1000}}
    sweep = write_sweep(tmp_path, doc)
    out, jobs = tmp_path / "r", tmp_path / "r" / "jobs"
    sched, address, sched_file = _scheduler(tmp_path)
    args = ["worker", "--scheduler-file", str(sched_file), "--nthreads", "1", "--no-nanny", "--no-dashboard"]
    workers = [_start(args)]

    def kill_and_replace():
        workers.append(_start(args))
        return workers[0]

    try:
        killer = _kill_when(lambda: jobs.is_dir() and any(jobs.glob("*.json")), kill_and_replace)
        code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--engine", "dask", "--scheduler", address,
                                        "--connect-timeout", "60", "--worker-timeout", "60", mode, "--no-report")
        killer.join(5)
        assert code == 0 and "4 points, 4 jobs run" in stdout, stderr
        assert workers[0].poll() is not None and len(workers) == 2
        assert [r["status"] for r in table(out)] == ["ok"] * 4, [r["error_message"] for r in table(out)]
    finally:
        for w in workers:
            _stop(w)
        _stop(sched)


def test_the_watch_fails_only_after_the_timeout_without_workers():
    now = [0.0]
    counts = iter([1, 0, 0, 2, 0, 0, 0])
    watch = dask_engine.WorkerWatch(lambda: next(counts), 3.0, "tcp://x:1", clock=lambda: now[0], every=1.0)
    for t in (0, 1, 2, 3, 4, 5):              # 1 worker, none from t=1, one back at t=3, none again from t=4
        now[0] = t
        watch.check(1, 5)
        now[0] = t + 0.5                      # looks are at most once a second
        watch.check(1, 5)
    now[0] = 7
    with pytest.raises(dask_engine.AtcError, match=r"E40012: The Dask cluster tcp://x:1 has had no worker for 3 s: "
                                                   r"4 of 5 jobs did not finish"):
        watch.check(1, 5)


def test_a_scheduler_that_cannot_be_asked_counts_as_no_worker():
    def broken():
        raise OSError("connection refused")
    watch = dask_engine.WorkerWatch(broken, 0.5, "tcp://x:1", clock=iter([0, 1, 2]).__next__, every=0)
    watch.check(0, 1)
    with pytest.raises(dask_engine.AtcError, match="E40012"):
        watch.check(0, 1)
        watch.check(0, 1)
    assert watch.unreachable
    with pytest.raises(ConnectionError):
        dask_engine.worker_count(SimpleNamespace(status="connecting"))
