"""om-run against an .om of nested If branches: a tree of more graphs than the compiler writes is refused by
its count before any graph is looked at; a tree the compiler does write loads and runs in time proportional to
its file."""
from __future__ import annotations

import time

import numpy as np
import onnx
import pytest

from om_run.load.limits import MAX_GRAPHS
from tests.helpers import compile_om
from tests.helpers.om_files import edit, run_om_bytes
from tools.fuzz.work_models import om_if_tree, onnx_if_tree


@pytest.fixture(scope="module")
def if_om() -> bytes:
    return compile_om(onnx.ModelProto.FromString(onnx_if_tree(1)))


def test_an_if_tree_12_deep_is_refused_by_its_graph_count(om_run, tmp_path, if_om):
    tree = edit(if_om, lambda md: om_if_tree(md, 12))
    t0 = time.perf_counter()
    code, out, err = run_om_bytes(om_run, tmp_path, tree, "--output", str(tmp_path / "out"))
    took = time.perf_counter() - t0
    assert code != 0 and "E30001" in out + err and f"8191 graphs (limit {MAX_GRAPHS})" in out + err, out + err
    assert "Traceback" not in out + err and took < 5, took
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.heavy
def test_an_if_tree_of_a_thousand_branches_runs_in_seconds(om_run, tmp_path):
    """9 deep: 1022 subgraphs, ~4,500 tasks in one region (the hazard check of a region compared each of its
    reads with each of its writes: minutes at 12 deep)."""
    om = compile_om(onnx.ModelProto.FromString(onnx_if_tree(9)))
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "c.npy", np.array(False))
    t0 = time.perf_counter()
    code, out, err = run_om_bytes(om_run, tmp_path, om, "--input", f"{tmp_path / 'x.npy'},{tmp_path / 'c.npy'}",
                                  "--output", str(tmp_path / "out"))
    assert code == 0, out + err
    assert time.perf_counter() - t0 < 6
    (y,) = sorted((tmp_path / "out").glob("*.npy"))
    np.testing.assert_array_equal(np.load(y), np.maximum(x, 0))
