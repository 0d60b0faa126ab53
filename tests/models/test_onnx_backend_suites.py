"""The onnx package's backend test-data suites (pytorch-converted, pytorch-operator, simple) through
AtcBackend: compile with atc-py, load the .om with om-run's loader, simulate with compute, compare with the
shipped outputs (rtol 1e-3, atol 1e-7). No case is excluded (docs/conformance.md)."""
import pytest

from atc_conformance.suites import SUITES, cases, run_case

CASES = [(s, c) for s in SUITES for c in cases(s)]


def test_suites_are_found():
    assert {s: len(cases(s)) for s in SUITES} == {"pytorch-converted": 82, "pytorch-operator": 35, "simple": 23}


@pytest.mark.parametrize("suite,name", CASES, ids=[f"{s}/{c}" for s, c in CASES])
def test_case(suite, name):
    r = run_case(suite, name)
    assert r.ok, r.reason
