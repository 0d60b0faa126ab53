"""om-sweep scaling on this machine (not a test): the samples x 2 SoCs x sink x precision x single-stream
(224 jobs), timing-only and numeric, on the local engine and a Dask LocalCluster with 1 and 2 workers;
plus the Dask scheduler's own cost per task and the cost of shipping a model. The 10,000-job
figures of docs/om-sweep.md are extrapolated from these numbers (see --help of the printout).

    .venv/bin/python bench/sweep_scaling.py            # ~3 min on 2 cores
"""
from __future__ import annotations

import io
import logging
import pathlib
import statistics
import sys
import tempfile
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from om_sweep.engines.dask import DaskEngine  # noqa: E402
from om_sweep.engines.local import LocalEngine  # noqa: E402
from om_sweep.spec import load_spec  # noqa: E402
from om_sweep.sweep import run_sweep  # noqa: E402


def sweep_file(folder: pathlib.Path) -> pathlib.Path:
    doc = yaml.safe_load((ROOT / "sweep.yaml").read_text())
    for m in doc["models"]:
        m["path"] = str(ROOT / m["path"])
        if "inputs" in m:
            m["inputs"] = str(ROOT / m["inputs"])
        if "flags" in m and "op_plugin" in m["flags"]:
            m["flags"]["op_plugin"] = str(ROOT / m["flags"]["op_plugin"])
    doc["grid"]["enable_single_stream"] = ["false", "true"]
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def measure(spec, engine_factory, compute: bool, folder: pathlib.Path) -> dict:
    out = pathlib.Path(tempfile.mkdtemp(dir=folder))
    t0 = time.perf_counter()
    engine = engine_factory()
    with engine:
        t1 = time.perf_counter()
        outcome = run_sweep(spec, out, engine, compute=None if compute else False, progress_stream=io.StringIO())
        t2 = time.perf_counter()
    rows = outcome.rows
    work = [(r["compile_s"] or 0) + (r["simulate_s"] or 0) for r in rows]
    jobs = len(rows)
    sweep_s = t2 - t1
    workers = engine.workers
    return {"jobs": jobs, "ok": sum(r["status"] == "ok" for r in rows), "startup_s": t1 - t0, "sweep_s": sweep_s,
            "jobs_per_s": jobs / sweep_s, "work_ms": 1000 * statistics.mean(work),
            "overhead_ms": 1000 * (sweep_s * workers / jobs - statistics.mean(work)), "workers": workers}


def scheduler_cost(n: int = 2000) -> float:
    """Seconds of Dask's own per-task cost: trivial tasks on a 1-worker LocalCluster."""
    import distributed
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": ":0"},
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
        client.gather(client.map(abs, range(100)))
        t0 = time.perf_counter()
        client.gather(client.map(abs, range(-n, 0), pure=False))
        return (time.perf_counter() - t0) / n


def transfer_cost(size: int = 8 << 20) -> float:
    """Seconds to ship `size` bytes to a worker process of a LocalCluster (scatter + first use)."""
    import distributed
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": ":0"},
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
        data = bytes(size)
        t0 = time.perf_counter()
        fut = client.scatter(data, hash=False)
        client.submit(len, fut).result()
        return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="om-sweep-bench-") as tmp:
        folder = pathlib.Path(tmp)
        spec = load_spec(sweep_file(folder))
        print("| engine | workers | mode | jobs | ok | startup s | sweep s | jobs/s | work ms/job | overhead ms/job |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name, factory in (("local", lambda w: (lambda: LocalEngine(w))),
                              ("dask LocalCluster", lambda w: (lambda: DaskEngine(None, w)))):
            for workers in (1, 2):
                for compute in (False, True):
                    m = measure(spec, factory(workers), compute, folder)
                    print(f"| {name} | {m['workers']} | {'numeric' if compute else '--no-compute'} | {m['jobs']} | "
                          f"{m['ok']} | {m['startup_s']:.2f} | {m['sweep_s']:.2f} | {m['jobs_per_s']:.1f} | "
                          f"{m['work_ms']:.1f} | {m['overhead_ms']:.1f} |", flush=True)
        print(f"\nDask scheduler cost per trivial task (1 worker process): {1000 * scheduler_cost():.2f} ms")
        print(f"Shipping 8 MiB to a worker process (scatter + first use): {1000 * transfer_cost():.0f} ms")


if __name__ == "__main__":
    main()
