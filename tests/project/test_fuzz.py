"""The fuzz campaign in miniature: a few hundred seeded .om mutants (om-run and atc-py --mode=1/6),
malformed ONNX/TF models and every bad flag value of both tools, each case in a forked child with a memory
limit and a timeout (tools/fuzz). Nothing may end in a traceback, a hang, a blow-up, a crash, an uncoded
error or E19999, write outside the folder it was given, or replace a special file. `make fuzz` runs the
full-size campaign."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT


@pytest.mark.heavy
def test_fuzz_campaign_finds_nothing(tmp_path):
    summary = tmp_path / "summary.json"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("ATC_PY_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "tools.fuzz", "--om", "150", "--models", "120", "--flags",
                           "--seed", "11", "--timeout", "60", "--work", str(tmp_path / "work"), "--json", str(summary),
                           "--keep", "5"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert summary.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    s = json.loads(summary.read_text())
    assert s["bad"] == 0, json.dumps(s["failures"][:5], indent=1)
    assert s["cases"] >= 500
    om, onnx_ = s["by_category"]["om"], s["by_category"]["onnx"]
    # the mutants exercise both sides: files that still run and files that are refused
    assert om.get("ok", 0) > 15 and om.get("error", 0) > 35, om
    assert onnx_.get("ok", 0) > 15 and onnx_.get("error", 0) > 35, onnx_
    assert "E30001" in s["codes"]["om"] and "E14001" in s["codes"]["onnx"]


@pytest.mark.heavy
def test_fuzz_sweep_cases_find_nothing(tmp_path):
    """The campaign's om-sweep category: sweep files that are FIFOs, /dev/zero, 3 GiB or grids of billions of
    points, and output folders with planted symlinks, forged records and FIFOs (tools/fuzz/sweep_cases.py)."""
    summary = tmp_path / "summary.json"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "tools.fuzz", "--om", "0", "--models", "0", "--sweep", "--timeout",
                           "60", "--work", str(tmp_path / "work"), "--json", str(summary)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert summary.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    s = json.loads(summary.read_text())
    assert s["bad"] == 0, json.dumps(s["failures"][:5], indent=1)
    assert s["by_category"]["sweep"] == {"error": 10, "ok": 5}, s["by_category"]
    assert {"E40001", "E40002", "E40010", "E13004"} <= set(s["codes"]["sweep"])


@pytest.mark.heavy
def test_fuzz_work_cases_find_nothing(tmp_path):
    """The campaign's work category (tools/fuzz/work_models.py, entry_cases.py): If trees, TensorFlow functions
    naming each other twice and loops unrolled into 80,000 nodes are refused in moments (or, within the limits,
    built); an .om If tree beyond om-run's graph count is refused; the python -m entries import nothing planted
    in the working folder."""
    summary = tmp_path / "summary.json"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("ATC_PY_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "tools.fuzz", "--om", "0", "--models", "0", "--work-cases",
                           "--timeout", "60", "--work", str(tmp_path / "work"), "--json", str(summary)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert summary.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    s = json.loads(summary.read_text())
    assert s["bad"] == 0, json.dumps(s["failures"][:5], indent=1)
    assert s["by_category"]["work"] == {"error": 13, "ok": 9}, s["by_category"]
    assert {"E10041", "E14001", "E30001"} <= set(s["codes"]["work"]) and s["slowest_s"] < 30


def test_a_python_exception_passed_on_in_a_coded_line_is_a_leak():
    """A mutant whose kernel failed with a numpy ValueError (E30004 "the kernel failed: ValueError") or
    whose program the simulator could not build (E30001 "...: OpError:") got past the validator: the campaign
    counts it as bad, not as a clean error."""
    from tools.fuzz.sandbox import BAD, classify
    for line in ("E30004: Execution failed while executing task 8 (ALL_KERNEL fc: MatMulV2): the kernel failed: "
                 "ValueError: cannot reshape array of size 10 into shape (1,2)",
                 "E30001: Failed to load model cnn: OpError: inner dimensions differ: [1, 0] x [10, 32]"):
        assert classify(1, f"[ERROR] {line}\n", False)[0] == "leak" and "leak" in BAD
    for line in ("E30001: Failed to load model m.om: model 'cnn': op 'fc' (MatMulV2): output 0 descriptor "
                 "float32[1, 0] is not what its inputs give: float32[1, 10]",
                 "E30004: Execution failed while executing task 3 (KERNEL g: GatherV2): index 9 is out of range"):
        assert classify(1, f"[ERROR] {line}\n", False) == ("error", line[:6])
