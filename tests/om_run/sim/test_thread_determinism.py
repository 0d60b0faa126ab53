"""om-run's outputs do not depend on its thread count: the same bits with --threads 1, 2 and 3.

BLAS runs on one thread and the kernels cut their GEMMs, copies and elementwise passes into pieces decided by the
shapes alone (atc_py/ops/core/host_pool.py, gemm.py), so every output element is computed by the same calls in the same
order whatever the thread count. (With OpenBLAS's own threads, sgemm rounds (32,144)@(144,256) differently with 1
and 2 threads, and fp32 builds differed in the last bits between --threads 1 and --threads 2.) The simulated
times and records do not depend on the host's threads either."""
import numpy as np
import pytest

from atc_py.ops.core import gemm, host_pool
from om_run.load.loader import load_model
from om_run.run.io import random_inputs
from om_run.sim.host import Simulation
from om_run.sim.threads import thread_budget
from tests.helpers import MODELS, PLUGIN, SAMPLES, compile_om
from tests.helpers.big_model import big_model

RNG = np.random.default_rng(7)



def runs(om: bytes, tmp_path, threads=(1, 2, 3), feeds=None):
    p = tmp_path / "m.om"
    p.write_bytes(om)
    model = load_model(str(p))
    x = [feeds[io.name] for io in model.inputs] if feeds else random_inputs(model, 0)
    got = {}
    for n in threads:
        with thread_budget(n), np.errstate(all="ignore"):
            outs, stats = Simulation(model).run(x)
        got[n] = (outs, [(r.task, r.stream, r.start, r.end, r.block_dim) for r in stats.records], stats.e2e_ns)
    return got


def assert_same(got):
    (o1, r1, e1), *rest = got.values()
    for outs, recs, e2e in rest:
        assert all(a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
                   for a, b in zip(o1, outs))
        assert recs == r1 and e2e == e1


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_give_the_same_bits_with_any_thread_count(name, tmp_path):
    options = {"op_plugin": str(PLUGIN)} if name == "custom_op" else {}
    feeds = None
    if (MODELS / f"{name}.inputs.npz").exists():   # inputs the model needs (token ids, group lists...)
        with np.load(MODELS / f"{name}.inputs.npz") as z:
            feeds = {k: z[k] for k in z.files}
    assert_same(runs(compile_om(MODELS / f"{name}.onnx", **options), tmp_path, feeds=feeds))


def test_a_big_conv_and_matmul_model_is_cut_into_pieces_and_gives_the_same_bits(tmp_path, monkeypatch):
    pieces = []
    real = host_pool.run_pieces

    def spy(count, fn):
        pieces.append(count)
        return real(count, fn)
    monkeypatch.setattr(host_pool, "run_pieces", spy)
    for mod in ("core.gemm", "conv_pool", "core.elementwise_tiling", "shape_layout"):
        monkeypatch.setattr(f"atc_py.ops.{mod}.run_pieces", spy)
    got = runs(compile_om(big_model()), tmp_path)
    assert max(pieces) > 1                       # the work was cut: the threads had pieces to share
    assert gemm.gemm_pieces(1, 1, 64, 576, 3136)[0][3] == "n"    # column panels of the 3x3 conv's GEMM
    assert gemm.gemm_pieces(1, 1, 2048, 512, 49)[0][3] == "m"    # row panels when the columns are few
    assert_same(got)


def test_pieces_follow_from_the_shapes_not_the_threads():
    """The same pieces whatever HOST_THREADS is; with one thread they run one after the other."""
    old = host_pool.HOST_THREADS
    try:
        seen = {}
        for n in (1, 2, 4):
            host_pool.set_host_threads(n)
            order = []
            host_pool.run_pieces(7, order.append)
            seen[n] = sorted(order)
        assert seen[1] == seen[2] == seen[4] == list(range(7))
    finally:
        host_pool.set_host_threads(old)


def test_a_failing_piece_raises_the_lowest_pieces_error_on_the_caller():
    old = host_pool.HOST_THREADS
    try:
        host_pool.set_host_threads(2)

        def fn(i):
            if i in (3, 5):
                raise ValueError(f"piece {i}")
        with pytest.raises(ValueError, match="piece 3"):
            host_pool.run_pieces(8, fn)
    finally:
        host_pool.set_host_threads(old)


def test_om_run_threads_1_and_2_write_the_same_outputs(om_run, tmp_path):
    om = tmp_path / "big.om"
    om.write_bytes(compile_om(big_model()))
    files = {}
    for n in ("1", "2"):
        code, out, err = om_run("--model", str(om), "--threads", n, "--output", str(tmp_path / n), "--outfmt", "NPY")
        assert code == 0, err
        files[n] = sorted((tmp_path / n).rglob("*.npy"))
    assert len(files["1"]) == 2
    for a, b in zip(files["1"], files["2"]):
        assert np.array_equal(np.load(a), np.load(b))


def test_a_forked_child_starts_a_pool_of_its_own():
    """om-sweep forks its job processes from a server that already ran a model (pool threads started): a child
    must not queue pieces or the warm-up for the parent's threads, which it does not have."""
    import os
    import signal
    old = host_pool.HOST_THREADS
    try:
        host_pool.set_host_threads(2)
        host_pool.warm({}, {})                     # the parent's pool and its threads
        pid = os.fork()
        if pid == 0:                               # the child: a hang would end it by SIGALRM (a non-zero status)
            signal.alarm(20)
            try:
                host_pool.warm({"x": 64}, {"x": 64}, wait_s=30)
                seen = []
                host_pool.run_pieces(4, seen.append)
                os._exit(0 if sorted(seen) == [0, 1, 2, 3] else 2)
            except BaseException:                 # noqa: BLE001
                os._exit(3)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    finally:
        host_pool.set_host_threads(old)
