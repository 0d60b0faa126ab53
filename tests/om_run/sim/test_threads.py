"""om-run's thread budget: --threads N sizes the kernels' host pool while the model runs (numpy's
BLAS pool stays at one thread: the kernels cut their GEMMs themselves); the default leaves out the cores other
processes keep busy."""
import pytest

from atc_py.ops.core import host_pool
from om_run.sim import threads as th
from tests.helpers import MODELS, compile_om


@pytest.mark.parametrize("cores,others,want", [(2, 0.0, 2), (2, 0.25, 2), (2, 0.8, 1), (2, 1.0, 1), (2, 2.0, 1),
                                               (8, 3.0, 5), (1, 0.0, 1)])
def test_default_threads_leave_out_busy_cores(cores, others, want):
    assert th.choose_threads(cores, others) == want


def test_probe_counts_other_processes_not_its_own_work(monkeypatch):
    """CPU time this process spent meanwhile (loading the model) is not load from others."""
    samples = iter([(0, 0), (200, 400)])          # 200 of 400 jiffies busy on 2 CPUs: one core's worth
    monkeypatch.setattr(th, "_cpu_jiffies", lambda cpus: next(samples))
    monkeypatch.setattr(th, "usable_cores", lambda: 2)
    clock = iter([0.0, 1.0, 1.0])
    monkeypatch.setattr(th, "_clock", lambda: next(clock))
    own = iter([0.0, 1.0])                           # and om-run itself used that core all along
    monkeypatch.setattr(th.LoadProbe, "_own", staticmethod(lambda: next(own)))
    probe = th.LoadProbe()
    probe.cpus = {0, 1}
    assert probe.idle_cores() == 2
    samples = iter([(0, 0), (200, 400)])
    clock = iter([0.0, 1.0, 1.0])
    own = iter([0.0, 0.0])                           # the busy core was someone else's
    probe = th.LoadProbe()
    probe.cpus = {0, 1}
    assert probe.idle_cores() == 1


def test_thread_budget_limits_blas_and_block_pool_and_restores_them():
    before_blas, before_pool = th.blas_threads(), host_pool.HOST_THREADS
    with th.thread_budget(1):
        assert th.blas_threads() == 1
        assert host_pool.HOST_THREADS == 1
    assert th.blas_threads() == before_blas and host_pool.HOST_THREADS == before_pool


def test_om_run_threads_option_is_honoured_inside_the_kernels(om_run, tmp_path, monkeypatch):
    """The kernels run with the BLAS pool at --threads (recorded from inside a kernel launch)."""
    from om_run.sim import device
    seen = []
    real = device.launch

    def spy(*a, **k):
        seen.append((th.blas_threads(), host_pool.HOST_THREADS))
        return real(*a, **k)
    monkeypatch.setattr(device, "launch", spy)
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    code, out, err = om_run(str(om), "--threads", "1")
    assert code == 0, err
    assert "[INFO] threads: 1" in out
    assert seen and set(seen) == {(1, 1)}
    seen.clear()     # more threads go to the kernels' host pool; BLAS stays on one (its rounding would follow)
    code, out, err = om_run(str(om), "--threads", "2")
    assert code == 0, err
    assert seen and set(seen) == {(1, 2)}
    code, out, _ = om_run(str(om), "--threads", "0")
    assert code == 1


def test_default_threads_reported(om_run, tmp_path):
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    code, out, err = om_run(str(om))
    assert code == 0, err
    n = int(out.split("[INFO] threads: ")[1].split()[0])
    assert 1 <= n <= th.usable_cores()


def test_warm_leaves_the_first_execution_no_scratch_to_grow_and_reports_first_and_later(om_run, tmp_path):
    """om_run/sim/warm.py reserves every thread's scratch before the first execution (padded planes, im2col
    columns, fp32 accumulators, row shifts): the execution grows none. om-run's wall clock line then gives the first
    execution beside the later ones."""
    from om_run.load.loader import load_model
    from om_run.run.io import random_inputs
    from om_run.sim.host import Simulation
    from om_run.sim.warm import warm
    from tests.helpers.big_model import big_model
    om = tmp_path / "big.om"
    om.write_bytes(compile_om(big_model()))
    model = load_model(str(om))
    for n in (1, 2):
        with th.thread_budget(n):
            host_pool._scratch.bufs = {}      # this thread's buffers as a fresh process has them: none
            sim = Simulation(model)
            warm(sim)
            assert model.name in sim.programs
            grown = host_pool.scratch_grown
            sim.run(random_inputs(model, 0))
            assert host_pool.scratch_grown == grown
    code, out, err = om_run("--model", str(om), "--loop", "3", "--threads", "2")
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("[INFO] host wall clock of the simulation: "))
    assert " ms per execution (average); first " in line and line.endswith(" ms (median)")


def test_wall_clock_line_of_several_executions():
    from om_run.sim.host import LoopStats
    from om_run.sim.report import msame_lines
    lines = msame_lines([LoopStats(e2e_ns=1000)] * 3, [0.003, 0.001, 0.002])
    assert lines[-1] == ("[INFO] host wall clock of the simulation: 2.000 ms per execution (average); first 3.000 ms, "
                         "later 2.000 ms (median)")
    one = msame_lines([LoopStats(e2e_ns=1000)], [0.003])[-1]
    assert one == "[INFO] host wall clock of the simulation: 3.000 ms per execution (average)"
