"""om-run's host heap (om_run/sim/host_heap.py): freed kernel temporaries reused instead of faulting fresh pages, and
the first execution's pages touched at load. Page faults are counted (getrusage), not timed: they do not depend
on the machine's load. Each case runs in a process of its own (the setting is process-wide)."""
from __future__ import annotations

import pathlib

import pytest

from bench.host_heap import child
from bench.threads_scaling import build
from om_run.sim import host_heap


@pytest.fixture(scope="module")
def shufflenet_om(tmp_path_factory) -> pathlib.Path:
    return build(tmp_path_factory.mktemp("heap"), "shufflenet")


def _faults(om: pathlib.Path, keep: bool, threads: int = 1) -> dict:
    """bench/host_heap.py's child process: the setting is process-wide, and the model is built in another
    process (compiling in the child would move glibc's sliding thresholds)."""
    return child(om, keep, threads, later=3)


needs_glibc = pytest.mark.skipif(host_heap._libc() is None, reason="mallopt is glibc's (Linux)")


@needs_glibc
def test_kept_heap_reuses_freed_pages_and_warm_touches_the_first_executions(shufflenet_om):
    default, kept = _faults(shufflenet_om, False), _faults(shufflenet_om, True)
    assert kept["kept"] and not default["kept"]
    assert kept["digest"] == default["digest"]          # the same bits: only where they are allocated changes
    # measured: ~1,700-1,900 faults per execution by default, ~20-75 kept
    assert kept["faults"] < 0.25 * default["faults"], (default, kept)
    # the first execution: ~3,300 faults by default, ~300 with the heap warm() touched
    assert kept["first_faults"] < 0.4 * default["first_faults"], (default, kept)


@needs_glibc
def test_the_compute_lanes_heap_is_touched_too(shufflenet_om):
    default, kept = _faults(shufflenet_om, False, threads=2), _faults(shufflenet_om, True, threads=2)
    assert kept["digest"] == default["digest"]
    assert kept["first_faults"] < 0.4 * default["first_faults"], (default, kept)


def test_prefault_does_nothing_unless_the_heap_is_kept(monkeypatch):
    monkeypatch.setattr(host_heap, "_kept", False)
    made = []
    monkeypatch.setattr(host_heap.np, "empty", lambda *a, **k: made.append(a))
    host_heap.prefault(1 << 20)
    assert not made     # freeing would hand the pages straight back: touching them would only cost


def test_om_run_keeps_freed_memory(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from om_run.cli.main import main
    calls = []
    monkeypatch.setattr("om_run.cli.main.keep_freed_memory", lambda: calls.append(1) or True)
    CliRunner().invoke(main, ["--help"])
    assert calls == [1]
