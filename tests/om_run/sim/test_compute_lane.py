"""The kernels' numerics on the compute lane (om_run/sim/compute_lane.py): used with two host threads, never with
one; the same bits, records and times as the synchronous path (the sample models, control flow and tiling sink
included, are compared in test_thread_determinism.py); a kernel failing on the lane is the same E30004 naming the
same task, and nothing queued after it runs."""
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from atc_py.common.errors import AtcError
from atc_py.ops import get_op
from om_run.load.loader import load_model
from om_run.sim import compute_lane, device
from om_run.sim.host import Simulation
from om_run.sim.threads import thread_budget
from tests.helpers import MODELS, compile_om


def chain_model():
    """x @ w0 @ w1 @ w2 @ w3: four MatMul kernels, one after the other (m0 .. m3)."""
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), f"w{i}") for i in range(4)]
    names = ["x", "a", "b", "c", "y"]
    nodes = [helper.make_node("MatMul", [names[i], f"w{i}"], [names[i + 1]], name=f"m{i}") for i in range(4)]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def load(om: bytes, tmp_path):
    p = tmp_path / "m.om"
    p.write_bytes(om)
    return load_model(str(p))


def test_the_lane_runs_the_kernels_with_two_threads_and_not_with_one(tmp_path, monkeypatch):
    model = load(compile_om(MODELS / "small_cnn.onnx"), tmp_path)
    x = [np.random.default_rng(0).standard_normal(io.desc.shape).astype(io.desc.dtype) for io in model.inputs]
    where = []
    real = device.DeviceRun._launch

    def spy(self, *args):
        where.append(threading.current_thread().name)
        return real(self, *args)
    monkeypatch.setattr(device.DeviceRun, "_launch", spy)
    got = {}
    for n in (1, 2):
        where.clear()
        with thread_budget(n), np.errstate(all="ignore"):
            got[n] = Simulation(model).run(x)[0]
        assert where and set(where) == ({"kernel-lane"} if n == 2 else {threading.current_thread().name})
    assert all(np.array_equal(a, b) for a, b in zip(got[1], got[2]))


def failing_matmul(monkeypatch, fail_at):
    """MatMul kernels counted as they run; the fail_at-th one (1-based; 0: none) raises."""
    spec = get_op("MatMulV2")
    real = type(spec).compute
    ran = []

    def compute(self, args, inputs):
        ran.append(len(ran) + 1)
        if len(ran) == fail_at[0]:
            raise ValueError("the values broke it")
        return real(self, args, inputs)
    monkeypatch.setattr(type(spec), "compute", compute)
    return ran


@pytest.mark.parametrize("threads", [1, 2])
def test_a_kernel_failing_on_the_lane_is_the_same_error_and_stops_the_lane(threads, tmp_path, monkeypatch):
    model = load(compile_om(chain_model()), tmp_path)
    ran = failing_matmul(monkeypatch, [2])
    with thread_budget(threads), np.errstate(all="ignore"), pytest.raises(AtcError) as e:
        Simulation(model).run([np.ones((4, 8), np.float32)])
    assert e.value.code == "E30004"
    assert "m1" in str(e.value) and "ValueError: the values broke it" in str(e.value)
    assert ran == [1, 2]          # the kernels after the failing one never ran


def test_the_next_execution_after_a_failure_starts_clean(tmp_path, monkeypatch):
    """A failure is raised once: the lane forgets it, and the same Simulation runs again."""
    model = load(compile_om(chain_model()), tmp_path)
    fail_at = [1]
    failing_matmul(monkeypatch, fail_at)
    x = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    with thread_budget(2), np.errstate(all="ignore"):
        sim = Simulation(model)
        with pytest.raises(AtcError):
            sim.run([x])
        fail_at[0] = 0
        outs, _ = sim.run([x])
    with thread_budget(1), np.errstate(all="ignore"):
        want, _ = Simulation(model).run([x])
    np.testing.assert_array_equal(outs[0], want[0])


def test_drain_runs_in_order_and_a_fork_gets_a_lane_of_its_own():
    lane = compute_lane.ComputeLane()
    seen = []
    for i in range(50):
        lane.submit(i, lambda i=i: seen.append(i))
    lane.drain()
    assert seen == list(range(50))
    lane.submit("bad", lambda: 1 / 0)
    lane.submit("after", lambda: seen.append("after"))
    with pytest.raises(compute_lane.LaneFailure) as e:
        lane.drain()
    assert e.value.task == "bad" and isinstance(e.value.error, ZeroDivisionError) and seen[-1] == 49
    lane.drain()                       # the failure was raised once
    before = compute_lane.lane()
    compute_lane._after_fork_in_child()
    assert compute_lane.lane() is not before
