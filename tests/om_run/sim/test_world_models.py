"""Compiled models with HCCL collectives run on a world of 2 and 8 simulated ranks: each collective's exact result
per dtype and reduction, its time from the link model, a rank that never reaches it reported as a deadlock, and
`om-run --world-size` writing every rank's outputs."""
from __future__ import annotations

import functools
import json
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

from atc_py.common.errors import AtcError
from atc_py.ops import collective_math as cm
from atc_py.platform.topology import load_topology
from om_run.hccl.algorithms import collective_cost
from om_run.load.loader import load_model
from om_run.run.world_run import link_cost, run_world, world_simulations
from om_run.sim.profile import RuntimeProfile
from tests.helpers import compile_om
from tests.helpers.hccl_models import hcom_input, hcom_model

A2 = load_topology("atlas-800-a2")
ELEM = {"float16": TensorProto.FLOAT16, "float32": TensorProto.FLOAT, "int32": TensorProto.INT32}
CASES = [("HcomAllReduce", {"reduction": r}) for r in ("sum", "prod", "max", "min")] + [
    ("HcomAllGather", {}), ("HcomReduceScatter", {"reduction": "sum"}), ("HcomBroadcast", {"root_rank": 1}),
    ("HcomAllToAll", {})]


@functools.lru_cache(maxsize=None)
def _model(tmp_root, op_type, attrs, dtype, n):
    kw = dict(attrs)
    if op_type in ("HcomAllGather", "HcomReduceScatter"):
        kw["rank_size"] = n
    om = compile_om(hcom_model(op_type, (8, 3), ELEM[dtype], **kw))
    path = f"{tmp_root}/{op_type}-{'-'.join(f'{k}{v}' for k, v in attrs)}-{dtype}-{n}.om"
    with open(path, "wb") as f:
        f.write(om)
    return load_model(path)


def _expected(op_type, attrs, xs):
    a = dict(attrs)
    return {"HcomAllReduce": lambda: cm.all_reduce(xs, a.get("reduction")),
            "HcomAllGather": lambda: cm.all_gather(xs),
            "HcomReduceScatter": lambda: cm.reduce_scatter(xs, a.get("reduction")),
            "HcomBroadcast": lambda: cm.broadcast(xs, a.get("root_rank")),
            "HcomAllToAll": lambda: cm.all_to_all(xs)}[op_type]()


@pytest.mark.parametrize("n", [2, 8])
@pytest.mark.parametrize("dtype", list(ELEM))
@pytest.mark.parametrize("op_type,attrs", CASES, ids=[f"{o}-{'-'.join(map(str, a.values()))}" for o, a in CASES])
def test_each_collective_on_every_rank_is_exact(tmp_path_factory, n, dtype, op_type, attrs):
    model = _model(str(tmp_path_factory.getbasetemp()), op_type, tuple(sorted(attrs.items())), dtype, n)
    xs = [hcom_input((8, 3), ELEM[dtype], seed=r) for r in range(n)]
    res = run_world(world_simulations([model] * n, RuntimeProfile(), True), link_cost(A2), [[x] for x in xs])
    want = _expected(op_type, tuple(sorted(attrs.items())), xs)
    for r in range(n):
        np.testing.assert_array_equal(res.outputs[r][0], want[r].reshape(res.outputs[r][0].shape))
    (row,) = res.collectives
    assert row["ranks"] == list(range(n))
    n_bytes = xs[0].nbytes * (n if op_type == "HcomAllGather" else 1)
    assert row["end"] - row["start"] == round(collective_cost(op_type, n_bytes, list(range(n)), A2,
                                                              dtype=dtype).ns)


def test_the_ranks_time_includes_the_collective_and_is_the_same_every_run(tmp_path):
    model = _model(str(tmp_path), "HcomAllReduce", (("reduction", "sum"),), "float16", 8)
    sims = world_simulations([model] * 8, RuntimeProfile(), False)
    a = run_world(sims, link_cost(A2))
    b = run_world(sims, link_cost(A2))
    assert [s.e2e_ns for s in a.stats] == [s.e2e_ns for s in b.stats]
    (row,) = a.collectives
    assert all(s.e2e_ns > row["end"] for s in a.stats)


def test_a_rank_that_never_reaches_the_collective_is_a_deadlock(tmp_path):
    with_it = _model(str(tmp_path), "HcomAllReduce", (("reduction", "sum"),), "float32", 2)
    relu = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 3])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "relu.om"
    path.write_bytes(compile_om(helper.make_model(relu, opset_imports=[helper.make_opsetid("", 17)])))
    without = load_model(str(path))
    x = hcom_input((8, 3), TensorProto.FLOAT)
    sims = world_simulations([with_it, without, with_it], RuntimeProfile(), True)
    with pytest.raises(AtcError, match=r"E30004.*deadlock: HcomAllReduce .*rank\(s\) \[0, 2\] wait, rank\(s\) \[1\] "
                                       r"never reach it \(rank\(s\) \[1\] finished\)"):
        run_world(sims, link_cost(A2), [[x]] * 3)


def _om_run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "om_run", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_om_run_world_size_writes_every_ranks_outputs(tmp_path):
    (tmp_path / "ar.om").write_bytes(compile_om(hcom_model("HcomAllReduce", (4, 8), reduction="sum")))
    for r in range(2):
        np.save(tmp_path / f"x_{r}.npy", np.full((4, 8), r + 1, np.float32))
    p = _om_run("ar.om", "--world-size", "2", "--input", "x_{rank}.npy", "--output", "out", "--summary-json", "s.json",
                "--profile", "prof", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["world_size"] == 2 and len(summary["ranks"]) == 2
    assert summary["collectives"][0]["op_type"] == "HcomAllReduce"
    for r in range(2):
        trace = json.loads((tmp_path / "prof" / f"rank_{r}" / "trace.json").read_text())
        assert any(e.get("cat") == "task" and e["name"].startswith("HCCL ") for e in trace["traceEvents"])
    assert "world of 2 rank(s) on Atlas 800" in p.stdout and "collective HcomAllReduce" in p.stdout
    for r in range(2):
        np.testing.assert_array_equal(np.load(tmp_path / "out" / f"rank_{r}" / "output_0.npy"),
                                      np.full((4, 8), 3, np.float32))


@pytest.mark.parametrize("args,message", [
    (["--world-size", "9"], "has 8 devices"),
    (["--world-size", "2", "--topology", "atlas-300i-duo"], "its devices are Ascend310P3"),
    (["--world-size", "2", "--topology", "nope"], "no such topology preset"),
    (["--world-size", "3", "--expected", "e.npz"], "--expected runs on one device"),
    (["--world-size", "2", "--check-overflow"], "--check-overflow runs on one device"),
])
def test_bad_world_flags_are_one_error(tmp_path, args, message):
    (tmp_path / "ar.om").write_bytes(compile_om(hcom_model("HcomAllReduce", (4, 8), reduction="sum")))
    p = _om_run("ar.om", *args, cwd=tmp_path)
    assert p.returncode != 0 and message in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_dynamic_shape_models_collective_meets_in_the_host_executor(tmp_path):
    """A dynamic-shape model runs op by op on the host executor: its HcomAllReduce meets the other rank's there."""
    import atc_py
    from tests.helpers.hccl_models import hcom_graph_model, hcom_node
    nodes = [helper.make_node("Relu", ["x"], ["r"]), hcom_node("HcomAllReduce", ["r"], ["y"], name="ar",
                                                                reduction="sum", rank_size=2)]
    model = hcom_graph_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    om = atc_py.build(model, {"ge.socVersion": "Ascend910B1", "om_name": "m", "input_shape": "x:1~4,8",
                              "ge.exec.precision_mode": "must_keep_origin_dtype",
                              "optimization_switch": "autofuse:off"}).om
    (tmp_path / "dyn.om").write_bytes(om)
    loaded = load_model(str(tmp_path / "dyn.om"))
    xs = [np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8) * (r + 1) for r in range(2)]
    res = run_world(world_simulations([loaded] * 2, RuntimeProfile(), True), link_cost(A2), [[x] for x in xs])
    want = np.maximum(xs[0], 0) + np.maximum(xs[1], 0)
    for r in range(2):
        np.testing.assert_allclose(res.outputs[r][0], want, rtol=1e-6)
    (row,) = res.collectives
    assert row["op"] == "ar" and row["bytes"] == xs[0].nbytes
    rec = next(x for x in res.stats[0].records if x.op_type == "HcomAllReduce")
    assert (rec.start, rec.end) == (row["start"], row["end"])


def test_a_broadcast_of_two_tensors_moves_both(tmp_path):
    path = tmp_path / "bc.om"
    path.write_bytes(compile_om(hcom_model("HcomBroadcast", (4, 8), n_tensors=2, root_rank=1)))
    model = load_model(str(path))
    xs = [[hcom_input((4, 8), seed=2 * r + k) for k in range(2)] for r in range(2)]
    res = run_world(world_simulations([model] * 2, RuntimeProfile(), True), link_cost(A2), xs)
    for r in range(2):
        for k in range(2):
            np.testing.assert_array_equal(res.outputs[r][k], xs[1][k])
