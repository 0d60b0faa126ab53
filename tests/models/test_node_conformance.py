"""ONNX's node conformance cases (onnx.backend.test.case.node, written in memory by collect_testcases) through
atc-py + om-run: every case not listed in tests/conformance/node_exclusions.txt must pass, and a listed case
that passes is a stale entry (remove it). Each case is a test of its own, so pytest-xdist spreads them over the
cores; `make conformance` prints the totals next to onnxruntime's."""
from __future__ import annotations

import pytest

from atc_conformance.node_cases import EXCLUSIONS, node_cases, read_exclusions, run_one
from tests.helpers import NODE_EXCLUSIONS

NAMES = sorted(node_cases())
EXCLUDED = read_exclusions(str(NODE_EXCLUSIONS))


def test_the_exclusion_list_names_real_cases_with_reasons():
    """...and at least 90% of the cases pass (onnxruntime: ~81% here)."""
    assert EXCLUSIONS.endswith("node_exclusions.txt")
    assert len(EXCLUDED) <= 0.10 * len(NAMES), f"{len(EXCLUDED)} of {len(NAMES)} cases excluded"
    assert set(EXCLUDED) <= set(NAMES), sorted(set(EXCLUDED) - set(NAMES))[:5]
    assert all(EXCLUDED.values()), [n for n, why in EXCLUDED.items() if not why][:5]


@pytest.mark.parametrize("name", NAMES)
def test_node_case(name):
    r = run_one(name, "atc")
    if name in EXCLUDED:
        assert not r.ok, f"{name} passes now: remove it from the exclusion list"
        pytest.skip(EXCLUDED[name])
    assert r.ok, r.reason
