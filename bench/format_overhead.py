"""What the device formats cost om-run's numerics on the host, and what the shadow of a written tensor saves.

A kernel computes in the framework's layout. With DeviceMemory.shadow (the default) a 5HD output stays in that
layout and its next kernel takes it as it is; its NC1HWC0 bytes are made only when something reads the bytes (a
model output, a dump, a kernel the shadow cannot serve). Without it, every 5HD tensor is converted to NC1HWC0
when it lands and back when it is read. Three builds / settings of the random-weight light ResNet-50 and
ShuffleNet (fp32, Ascend910B1, one host thread: --threads 1), run in interleaved rounds (the machine is shared):
the default 5HD build, the same with the shadow switched off, and `--optimization_switch formats:off` (NCHW
throughout); each the best of 4 executions per round, the best round kept, and the output bits compared.
`python -m bench.format_overhead [--rounds N]`."""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import atc_py  # noqa: E402
from bench.light_models import write_all  # noqa: E402
from om_run.load.loader import load_model  # noqa: E402
from om_run.run.io import random_inputs  # noqa: E402
from om_run.sim import device as device_run  # noqa: E402
from om_run.sim.host import Simulation  # noqa: E402
from om_run.sim.host_heap import keep_freed_memory  # noqa: E402
from om_run.sim.threads import thread_budget  # noqa: E402

FP32 = {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}
MODELS = ("resnet50", "shufflenet")
SETTINGS = ("5HD", "5HD, no shadow", "formats:off")


def _build(path: pathlib.Path, out: pathlib.Path, **extra) -> Simulation:
    out.write_bytes(atc_py.build(str(path), {**FP32, **extra}).om)
    return Simulation(load_model(str(out)))


def measure(name: str, path: pathlib.Path, d: pathlib.Path, rounds: int) -> dict:
    sims = {"5HD": _build(path, d / f"{name}.om"),
            "formats:off": _build(path, d / f"{name}_nchw.om", optimization_switch="formats:off")}
    sims["5HD, no shadow"] = sims["5HD"]
    inputs = random_inputs(sims["5HD"].model, 0)
    best, outs = {s: float("inf") for s in SETTINGS}, {}
    try:
        for _ in range(rounds):
            for s in SETTINGS:
                device_run.DeviceRun.shadow_outputs = s != "5HD, no shadow"
                sim = sims[s]
                sim.run(inputs)
                for _ in range(4):
                    t = time.perf_counter()
                    outs[s] = sim.run(inputs)[0]
                    best[s] = min(best[s], time.perf_counter() - t)
    finally:
        device_run.DeviceRun.shadow_outputs = True
    same = all(np.array_equal(a, b) for s in SETTINGS[1:] for a, b in zip(outs["5HD"], outs[s]))
    return {"ms": {s: best[s] * 1e3 for s in SETTINGS}, "identical": same}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args(argv)
    keep_freed_memory()     # the host heap as om-run keeps it (om_run/sim/host_heap.py)
    with tempfile.TemporaryDirectory() as d, thread_budget(1), np.errstate(all="ignore"):   # one host thread
        paths = write_all(pathlib.Path(d), MODELS)
        print("| model (fp32, one thread) | " + " | ".join(SETTINGS) + " | outputs |")
        print("|---" * (len(SETTINGS) + 2) + "|")
        for name in MODELS:
            r = measure(name, paths[name], pathlib.Path(d), args.rounds)
            cells = " | ".join(f"{r['ms'][s]:.1f} ms" for s in SETTINGS)
            print(f"| {name} | {cells} | {'identical' if r['identical'] else 'DIFFER'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
