"""What om-run's host heap setting (om_run/sim/host_heap.py) does: page faults and time per execution, kept against
glibc's default, for the light ResNet-50 and ShuffleNet (fp32, random weights) on 1 and 2 threads.

The setting is process-wide, so each sample is a child process; children alternate (default, kept, default...) so
drifting load hits both alike, and the table gives the best of each. Faults are counted (getrusage), time is wall.
The first execution is held against each child's last one, as many samples of each (the best of many noisy
samples is lower than the best of few).
`python -m bench.host_heap [--rounds N]`.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.threads_scaling import build  # noqa: E402

CHILD = r"""
import hashlib, json, resource, sys, time
sys.path.insert(0, {root!r})
from om_run.sim import host_heap
if {keep}:
    host_heap.keep_freed_memory()
import numpy as np
from om_run.run.io import random_inputs
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from om_run.sim.warm import warm
from om_run.sim.threads import thread_budget
model = load_model({om!r})    # built by another process: compiling here would move glibc's sliding thresholds
x = random_inputs(model, 0)
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
with thread_budget({threads}), np.errstate(all="ignore"):
    sim = Simulation(model)
    warm(sim)
    f0, t0 = faults(), time.perf_counter()
    outs = sim.run(x)[0]
    first, f1 = time.perf_counter() - t0, faults()
    walls = []
    for _ in range({later}):
        t0 = time.perf_counter()
        sim.run(x)
        walls.append(time.perf_counter() - t0)
    f2 = faults()
print(json.dumps({{"first_faults": f1 - f0, "faults": (f2 - f1) / {later}, "first": first, "wall": min(walls),
                  "last": walls[-1], "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "kept": host_heap.heap_kept(),
                  "digest": hashlib.sha256(b"".join(np.ascontiguousarray(o).tobytes() for o in outs)).hexdigest()}}))
"""


def child(om: pathlib.Path, keep: bool, threads: int, later: int = 8) -> dict:
    """One process: the model loaded and warmed with glibc's heap or om-run's (`keep`), one first execution and
    `later` more; their page faults, wall times, peak RSS, and a digest of the first execution's outputs."""
    code = CHILD.format(root=str(ROOT), keep=keep, om=str(om), threads=threads, later=later)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"host_heap child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    print("| model | threads | heap | faults / execution | first execution's faults | ms / execution (best) | "
          "first / last execution (best of each) | peak RSS |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("shufflenet", "resnet50"):
            om = build(pathlib.Path(tmp), name)
            for threads in (1, 2):
                runs = {False: [], True: []}
                for _ in range(args.rounds):
                    for keep in (False, True):
                        runs[keep].append(child(om, keep, threads))
                for keep in (False, True):
                    r = runs[keep]
                    best = min(r, key=lambda s: s["wall"])
                    print(f"| {name} | {threads} | {'kept' if keep else 'glibc default'} | "
                          f"{min(s['faults'] for s in r):.0f} | {min(s['first_faults'] for s in r)} | "
                          f"{best['wall'] * 1e3:.1f} | "
                          f"{min(s['first'] for s in r) / min(s['last'] for s in r):.2f} | "
                          f"{max(s['rss_mb'] for s in r):.0f} MB |", flush=True)


if __name__ == "__main__":
    main()
