"""Each job runs in a fresh process forked from a preloaded fork server, so that its time and memory can
be limited, a crash (a plugin's native code, the OOM killer) costs one job and not the worker, plugins
registered by one job never leak into the next, and retries start from a clean process.

The parent (a local engine thread or a Dask worker task) waits for the child's JSON record with a timeout
and kills it past the time limit. The memory limit is RLIMIT_AS: the address space the job may add to
the one it was forked with, so an allocation past it fails inside the job (MemoryError) and is recorded.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import resource
import signal
import sys
import tempfile
import threading
import time
import traceback

from atc_py.common.errors import AtcError

from .job import empty_record, execute, failed
from .plan import Job

_context = None
_running: set = set()           # live job processes of this process, for kill_running()
_running_lock = threading.Lock()


def _ctx():
    """The fork server starts once per process (driver or Dask worker) with the tools imported."""
    global _context
    if _context is None:
        ctx = multiprocessing.get_context("forkserver")
        # "__main__": the server imports the main script once, so that job processes do not each re-run it
        ctx.set_forkserver_preload(["__main__", "om_sweep.sandbox", "om_sweep.warmup"])
        _context = ctx
    return _context


def start_fork_server() -> None:
    """Start the fork server now (~0.5-1 s of imports and warm-up) rather than at the first job."""
    _ctx()
    _ensure_server()


_SERVER_ENV = ("PYTHONSAFEPATH", "PYTHONPATH")
_server_lock = threading.Lock()


def _ensure_server() -> None:
    """The fork server (started if it is not running) imports what this process would: it starts as `python -c`
    in the working folder, which would put that folder first on its sys.path (and Python 3.11 drops the
    sys.path multiprocessing hands it), so a numpy.py in the folder a sweep is run from would be imported by
    every job. It starts with PYTHONSAFEPATH (no working folder; Python 3.11+) and PYTHONPATH set to this
    process's sys.path, in order, then, when the folder om_sweep was imported from is not on it (a source tree
    run without installing, an editable install), a folder holding links to the three packages of that tree
    and nothing else (the tree itself would let any file beside them in: a google.py beats the namespace
    package google wherever it is on the path); the environment is restored once it runs."""
    from multiprocessing import forkserver
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = [p for p in sys.path if p]
    if not any(_same_folder(p, home) for p in path):
        path.append(_packages_only(home))
    with _server_lock:
        saved = {k: os.environ.get(k) for k in _SERVER_ENV}
        os.environ["PYTHONSAFEPATH"] = "1"
        os.environ["PYTHONPATH"] = os.pathsep.join(path)
        try:
            forkserver.ensure_running()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def can_start_jobs() -> str:
    """'' when this process may start job processes; else why not (daemonic Dask workers may not)."""
    if multiprocessing.current_process().daemon:
        return ("this process is daemonic and may not start job processes; start Dask workers with "
                "DASK_DISTRIBUTED__WORKER__DAEMON=False (or dask worker --no-nanny)")
    return ""


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


# read by the jobs at their run time: the fork server holds the environment of its own start, which may be older
PASSED_ENV = ("OM_RUN_SERVE_CACHE",)     # om-run serve's step tables, shared by the jobs of one machine


def _child(job: Job, local_paths: dict, workdir: str, conn, stderr_path: str, env: dict | None = None) -> None:
    for name, value in (env or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)                       # tools' chatter must not reach the progress bar
    err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)
    rec = empty_record(job)
    try:
        if job.memory_limit_mb:
            limit = _address_space() + int(job.memory_limit_mb * 2**20)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        rec = execute(job, local_paths, workdir)
    except MemoryError as exc:
        rec = failed(rec, AtcError("E40005", limit=f"{job.memory_limit_mb:g}",
                                   reason=f"{type(exc).__name__}: {exc}"[:300]), {}, job)
    except Exception as exc:  # noqa: BLE001 -- a bug in the tools: recorded like atc-py's E19999, the sweep goes on
        if job.memory_limit_mb and "can't start new thread" in str(exc):
            rec = failed(rec, AtcError("E40005", limit=f"{job.memory_limit_mb:g}",
                                       reason=f"{type(exc).__name__}: {exc}"), {}, job)
        else:
            traceback.print_exc()
            rec = failed(rec, AtcError("E19999", message=f"Internal Error! {type(exc).__name__}: {exc}"), {}, job)
    conn.send_bytes(json.dumps(rec).encode())
    conn.close()


def _tail(path: str, limit: int = 400) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - limit))
            text = f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return " ".join(text.split())


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def run_once(job: Job, local_paths: dict, workdir: str) -> tuple[dict | None, str]:
    """(record, '') or (None, why the process died)."""
    ctx = _ctx()
    _ensure_server()
    reader, writer = ctx.Pipe(duplex=False)
    stderr_path = os.path.join(workdir, "stderr.txt")
    env = {name: os.environ.get(name) for name in PASSED_ENV}
    proc = ctx.Process(target=_child, args=(job, local_paths, workdir, writer, stderr_path, env), daemon=True)
    start = time.monotonic()
    with _running_lock:
        proc.start()
        _running.add(proc)
    writer.close()
    try:
        if not reader.poll(job.time_limit_s):
            proc.kill()
            proc.join()
            rec = empty_record(job)
            return failed(rec, AtcError("E40004", limit=f"{job.time_limit_s:g}"), {}, job), ""
        try:
            data = reader.recv_bytes()
        except EOFError:
            proc.join()
            tail = _tail(stderr_path)
            return None, _exit_reason(proc.exitcode) + (f"; stderr: {tail}" if tail else "")
        proc.join(max(1.0, job.time_limit_s - (time.monotonic() - start)))
        if proc.is_alive():
            proc.kill()
            proc.join()
        return json.loads(data), ""
    finally:
        reader.close()
        with _running_lock:
            _running.discard(proc)


_links: dict[str, str] = {}


def _packages_only(home: str) -> str:
    """A folder of links to atc_py, om_run and om_sweep of `home`, made once and removed at exit (`home`
    itself when links cannot be made)."""
    if home not in _links:
        import atexit
        import shutil
        folder = tempfile.mkdtemp(prefix="om-sweep-packages-")
        atexit.register(shutil.rmtree, folder, True)
        try:
            for name in ("atc_py", "om_run", "om_sweep"):
                if os.path.isdir(os.path.join(home, name)):
                    os.symlink(os.path.join(home, name), os.path.join(folder, name))
            _links[home] = folder
        except OSError:
            _links[home] = home
    return _links[home]


def _same_folder(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def kill_running() -> None:
    """Stop every job process this process started (an interrupted sweep)."""
    with _running_lock:
        procs = list(_running)
    for proc in procs:
        try:
            proc.kill()
        except (OSError, ValueError):
            pass


def run_job(job: Job, shipped: dict[str, bytes] | None = None) -> dict:
    """The whole job with its retries: what an engine runs. shipped: file bytes by sha256 (Dask engine,
    workers without the sweep's files); a local file is used when it has the planned digest."""
    with tempfile.TemporaryDirectory(prefix="om-sweep-job-") as workdir:
        try:
            local_paths = materialise(job, shipped or {}, workdir)
        except AtcError as exc:
            return failed(empty_record(job), exc, {}, job)
        reasons = []
        for attempt in range(1, job.retries + 2):
            rec, why = run_once(job, local_paths, workdir)
            if rec is not None:
                rec["attempts"] = attempt
                return rec
            reasons.append(why)
        rec = failed(empty_record(job), AtcError("E40006", attempts=len(reasons), reason=reasons[-1]), {}, job)
        rec["attempts"] = len(reasons)
        return rec


_verified: dict[tuple, bool] = {}


def _digest_matches(path: str, sha256: str) -> bool:
    import hashlib
    try:
        st = os.stat(path)
    except OSError:
        return False
    key = (path, st.st_size, st.st_mtime_ns, sha256)
    if key not in _verified:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
        _verified[key] = h.hexdigest() == sha256
    return _verified[key]


def materialise(job: Job, shipped: dict[str, bytes], workdir: str) -> dict[str, str]:
    """Where each file of the job is readable here: its own path when the bytes are the planned ones,
    else a copy of the shipped bytes. A file that changed since planning would give a result under the
    wrong key: that is an error of the job."""
    local: dict[str, str] = {}
    for i, ref in enumerate(job.files):
        if _digest_matches(ref.path, ref.sha256):
            local[ref.path] = ref.path
            continue
        data = shipped.get(ref.sha256)
        if data is None:
            raise AtcError("E40003", field=f"{ref.role} (changed since the sweep started, or not on this worker)",
                           path=ref.path)
        folder = os.path.join(workdir, "files", str(i))
        os.makedirs(folder)
        target = os.path.join(folder, os.path.basename(ref.path))
        with open(target, "wb") as f:
            f.write(data)
        local[ref.path] = target
    return local
