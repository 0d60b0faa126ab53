"""om-run's thread budget (issue 18 item 1): --threads N holds numpy's BLAS pool and the kernels' block pool to
N threads while the model runs; the default leaves out the cores other processes keep busy."""
import pytest

from atc_py.ops import host_pool
from runner import threads as th

from .conftest import MODELS, compile_om


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
    from runner.sim import device
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
    code, out, _ = om_run(str(om), "--threads", "0")
    assert code == 1


def test_default_threads_reported(om_run, tmp_path):
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    code, out, err = om_run(str(om))
    assert code == 0, err
    n = int(out.split("[INFO] threads: ")[1].split()[0])
    assert 1 <= n <= th.usable_cores()
