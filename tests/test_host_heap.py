"""om-run's host heap (runner/host_heap.py): freed kernel temporaries reused instead of faulting fresh pages, and
the first execution's pages touched at load. Page faults are counted (getrusage), not timed: they do not depend
on the machine's load. Each case runs in a process of its own (the setting is process-wide)."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from runner import host_heap

ROOT = pathlib.Path(__file__).resolve().parent.parent

SCRIPT = r"""
import hashlib, json, resource, sys
sys.path.insert(0, {root!r})
from runner import host_heap
if {keep}:
    assert host_heap.keep_freed_memory()
import numpy as np
from runner.io import random_inputs
from runner.loader import load_model
from runner.sim.host import Simulation
from runner.sim.warm import warm
from runner.threads import thread_budget
model = load_model({om!r})    # built by another process: compiling here would move glibc's sliding thresholds
x = random_inputs(model, 0)
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
with thread_budget({threads}), np.errstate(all="ignore"):
    sim = Simulation(model)
    warm(sim)
    f0 = faults(); first = sim.run(x)[0]; f1 = faults()
    for _ in range(3):
        sim.run(x)
    f2 = faults()
print(json.dumps({{"first": f1 - f0, "later": (f2 - f1) / 3, "kept": host_heap.heap_kept(),
                  "digest": hashlib.sha256(b"".join(np.ascontiguousarray(o).tobytes() for o in first)).hexdigest()}}))
"""


@pytest.fixture(scope="module")
def shufflenet_om(tmp_path_factory) -> str:
    import atc_py
    from bench.light_models import write_all
    d = tmp_path_factory.mktemp("heap")
    om = d / "shufflenet.om"
    om.write_bytes(atc_py.build(str(write_all(d, ("shufflenet",), signed=True)["shufflenet"]),
                                {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}).om)
    return str(om)


def _faults(om: str, keep: bool, threads: int = 1) -> dict:
    code = SCRIPT.format(root=str(ROOT), keep=keep, om=om, threads=threads)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


needs_glibc = pytest.mark.skipif(host_heap._libc() is None, reason="mallopt is glibc's (Linux)")


@needs_glibc
def test_kept_heap_reuses_freed_pages_and_warm_touches_the_first_executions(shufflenet_om):
    default, kept = _faults(shufflenet_om, False), _faults(shufflenet_om, True)
    assert kept["kept"] and not default["kept"]
    assert kept["digest"] == default["digest"]          # the same bits: only where they are allocated changes
    # measured: ~1,700-1,900 faults per execution by default, ~20-75 kept
    assert kept["later"] < 0.25 * default["later"], (default, kept)
    # the first execution: ~3,300 faults by default, ~300 with the heap warm() touched
    assert kept["first"] < 0.4 * default["first"], (default, kept)


@needs_glibc
def test_the_compute_lanes_heap_is_touched_too(shufflenet_om):
    default, kept = _faults(shufflenet_om, False, threads=2), _faults(shufflenet_om, True, threads=2)
    assert kept["digest"] == default["digest"]
    assert kept["first"] < 0.4 * default["first"], (default, kept)


def test_prefault_does_nothing_unless_the_heap_is_kept(monkeypatch):
    monkeypatch.setattr(host_heap, "_kept", False)
    made = []
    monkeypatch.setattr(host_heap.np, "empty", lambda *a, **k: made.append(a))
    host_heap.prefault(1 << 20)
    assert not made     # freeing would hand the pages straight back: touching them would only cost


def test_om_run_keeps_freed_memory(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from runner.cli import main
    calls = []
    monkeypatch.setattr("runner.cli.keep_freed_memory", lambda: calls.append(1) or True)
    CliRunner().invoke(main, ["--help"])
    assert calls == [1]
