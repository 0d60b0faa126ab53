"""om-run's HCCL task (om_run/tasks/hccl.py): a collective run as a group of one rank gives the one-rank result in
HCCL's local-copy time; a model whose group needs more ranks is refused with what to run instead (E30004); a damaged
kernel_hccl is refused at load (E30001); with a world (several devices) the task is the world's, in the static
program and in the host executor alike."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.om import task_types as tt
from om_run.load.loader import load_model
from om_run.sim.device import DeviceRun
from om_run.sim.host import Simulation
from om_run.sim.profile import RuntimeProfile
from om_run.sim.report import where_time_goes
from om_run.tasks.base import ran
from tests.helpers import compile_om
from tests.helpers.hccl_models import hcom_graph_model, hcom_input, hcom_model, hcom_node
from tests.helpers.om_files import edit, om_ops, op_named, run_om_bytes, simulate_om


def _hccl(mtd):
    return next(t for t in mtd.task if t.type == tt.HCCL)


@pytest.mark.parametrize("op_type,attrs,elem", [
    ("HcomAllReduce", {"reduction": "sum"}, TensorProto.FLOAT),
    ("HcomAllReduce", {"reduction": "prod", "rank_size": 1}, TensorProto.INT32),
    ("HcomAllGather", {"rank_size": 1}, TensorProto.FLOAT16),
    ("HcomReduceScatter", {"rank_size": 1, "reduction": "min", "rank_ids": [6]}, TensorProto.INT8),
    ("HcomAllToAll", {}, TensorProto.FLOAT),
])
def test_a_group_of_one_rank_gives_the_input_back(tmp_path, op_type, attrs, elem):
    x = hcom_input((4, 8), elem)
    outs, stats = simulate_om(compile_om(hcom_model(op_type, (4, 8), elem, **attrs)), [x], tmp_path)
    assert outs[0].dtype == x.dtype
    np.testing.assert_array_equal(outs[0], x)
    assert [r.type for r in stats.records] == ["HCCL"] and stats.hazards == []


def test_a_broadcast_of_two_tensors(tmp_path):
    xs = [hcom_input((4, 8), seed=1), hcom_input((4, 8), seed=2)]
    outs, _ = simulate_om(compile_om(hcom_model("HcomBroadcast", (4, 8), n_tensors=2, root_rank=0)), xs, tmp_path)
    for got, want in zip(outs, xs):
        np.testing.assert_array_equal(got, want)


def test_the_local_collective_costs_hccls_local_copy(tmp_path):
    path = tmp_path / "m.om"
    path.write_bytes(compile_om(hcom_model("HcomAllGather", (64, 64), rank_size=1)))   # 16 KiB
    for local in (2000, 7000):
        prof = RuntimeProfile(hccl_local_ns=local, memcpy_gbps=8.0)
        _, stats = Simulation(load_model(str(path)), prof, compute=False).run(None)   # timing only, too
        rec = stats.records[0]
        assert rec.end - rec.start == local + int(64 * 64 * 4 / 8.0)
        assert where_time_goes(stats)[1] == {"HcomAllGather": rec.end - rec.start}   # the report's device time


def test_a_bigger_group_without_a_world_is_refused(tmp_path, om_run):
    om = compile_om(hcom_model("HcomAllReduce", (4, 8), name="ar", reduction="sum", rank_size=2))
    with pytest.raises(AtcError, match="E30004.*HcomAllReduce 'ar' needs a group of 2 ranks: run the model with "
                                       "--world-size 2 or --rank-table"):
        simulate_om(om, [hcom_input((4, 8))], tmp_path)
    code, _, err = run_om_bytes(om_run, tmp_path, om)
    assert code != 0 and "E30004" in err and "needs a group of 2 ranks" in err and "Traceback" not in err


def test_a_send_needs_its_peer(tmp_path):
    om = compile_om(hcom_model("HcomSend", (4, 8), name="sd", sr_tag=0, dest_rank=1))
    with pytest.raises(AtcError, match="E30004.*HcomSend 'sd' needs a group of 2 ranks"):
        simulate_om(om, [hcom_input((4, 8))], tmp_path)


@pytest.fixture(scope="module")
def send_om() -> bytes:
    """x -> HcomSend and x -> Relu -> y: an HCCL task beside a kernel."""
    return compile_om(hcom_model("HcomSend", (4, 8), sr_tag=0, dest_rank=1))


def _send_address(md, value: int) -> None:
    op_named(md, "HcomSend").input_i[0] = value


@pytest.mark.parametrize("mutate_tasks,mutate_model,expect", [
    (lambda m: setattr(_hccl(m).kernel_hccl, "op_index", 999), None, "HCCL refers to op index 999"),
    (lambda m: setattr(_hccl(m).kernel_hccl, "hccl_type", "HcomAllReduce"), None,
     "hccl_type 'HcomAllReduce' is not the type of its op"),
    (lambda m: _hccl(m).ClearField("kernel_hccl"), None, "HCCL task has no kernel_hccl definition"),
    (None, lambda md: _send_address(md, 2**50), "input 0 of op 'hcomsend' has no address inside device memory"),
    (None, lambda md: setattr(op_named(md, "HcomSend").attr["dest_rank"], "i", -1), "dest_rank must be >= 0"),
])
def test_a_damaged_kernel_hccl_is_refused_at_load(tmp_path, om_run, send_om, mutate_tasks, mutate_model, expect):
    code, _, err = run_om_bytes(om_run, tmp_path, edit(send_om, mutate_model, mutate_tasks))
    assert code != 0 and "E30001" in err and expect in err and "Traceback" not in err


def test_an_hccl_task_naming_a_kernel_op_is_refused(tmp_path, send_om):
    relu = next(op for op in om_ops(send_om) if op.type == "Relu")
    path = tmp_path / "m.om"
    path.write_bytes(edit(send_om, tasks=lambda mtd: setattr(_hccl(mtd).kernel_hccl, "op_index", relu.id)))
    with pytest.raises(AtcError, match="E30001.*HCCL task refers to op .* of type Relu, which is not an HCCL"):
        load_model(str(path))


class StubWorld:
    """Stands in for the machine of several devices (om_run/sim): notes what it is asked, runs the task in 123 ns."""

    def __init__(self):
        self.calls = []

    def blocked(self, run, task, t):
        self.calls.append(("blocked", task.op_type))
        return None

    def execute(self, run, task, t, start, inline=False):
        self.calls.append(("execute", task.op_type))
        ran(run, task, t, start, start + 123)

    def turn(self, t):
        return None

    def idle_if_held(self, run):
        return False

    def host_collective(self, sim, op, args, in_descs, out_descs, start):
        self.calls.append(("host", op.type))
        return start, start + 456, [np.full(d.shape, 7, d.dtype) for d in out_descs]


def test_with_a_world_the_task_is_the_worlds(tmp_path, monkeypatch):
    world = StubWorld()
    monkeypatch.setattr(DeviceRun, "world", world, raising=False)
    om = compile_om(hcom_model("HcomAllReduce", (4, 8), reduction="sum", rank_size=2))
    _, stats = simulate_om(om, [hcom_input((4, 8))], tmp_path)
    assert world.calls == [("blocked", "HcomAllReduce"), ("execute", "HcomAllReduce")]
    assert [r.end - r.start for r in stats.records] == [123]


def _dynamic_model(**attrs):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), hcom_node("HcomAllReduce", ["r"], ["y"], name="ar", **attrs)]
    return hcom_graph_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])


def _dynamic_om(**attrs) -> bytes:
    r = atc_py.build(_dynamic_model(**attrs), {"ge.socVersion": "Ascend910B1", "om_name": "m",
                                               "ge.exec.precision_mode": "must_keep_origin_dtype",
                                               "optimization_switch": "autofuse:off", "input_shape": "x:1~4,8"})
    assert r.summary["unknown_subgraphs"] == 1
    return r.om


def test_the_host_executor_runs_a_collective_as_one_rank_or_refuses(tmp_path):
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8)
    outs, stats = simulate_om(_dynamic_om(reduction="max"), [x], tmp_path)
    np.testing.assert_array_equal(outs[0], np.maximum(x, 0))
    rec = next(r for r in stats.records if r.op_type == "HcomAllReduce")
    assert rec.type == "HCCL (host launched)"
    assert rec.end - rec.start == RuntimeProfile().hccl_local_ns + int(x.nbytes / RuntimeProfile().memcpy_gbps)
    with pytest.raises(AtcError, match="E30004.*HcomAllReduce 'ar' needs a group of 3 ranks"):
        simulate_om(_dynamic_om(reduction="max", rank_ids=[0, 1, 2]), [x], tmp_path, "m2")


def test_the_host_executor_hands_a_collective_to_the_world(tmp_path, monkeypatch):
    world = StubWorld()
    monkeypatch.setattr(Simulation, "world", world, raising=False)
    x = np.ones((2, 8), np.float32)
    outs, stats = simulate_om(_dynamic_om(reduction="sum", rank_size=4), [x], tmp_path)
    assert world.calls == [("host", "HcomAllReduce")]
    np.testing.assert_array_equal(outs[0], np.full((2, 8), 7, np.float32))
    rec = next(r for r in stats.records if r.op_type == "HcomAllReduce")
    assert rec.end - rec.start == 456
