"""`make bench` runs `python bench/bench.py` as a script: its imports must resolve from the clone (bench/ is a
package next to atc_py/; a script named bench.py once shadowed it). Not a benchmark: nothing is timed."""
import subprocess
import sys

from tests.helpers import ROOT


def test_bench_script_imports_as_make_bench_runs_it():
    # as `python bench/bench.py` does: the script's folder first on sys.path
    code = ("import runpy, sys; sys.path.insert(0, 'bench'); sys.argv = ['bench/bench.py']; "
            "g = runpy.run_path('bench/bench.py', run_name='not_main'); "
            "assert callable(g['main']) and callable(g['compile_speed'].run)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_numpy_floor_reference_computes_the_sample_cnn():
    """The hand-written numpy small_cnn the bench times as a floor must compute what onnxruntime does."""
    import numpy as np
    import onnxruntime as ort
    sys.path.insert(0, str(ROOT))
    from bench.numpy_floor import MODEL, SmallCnnNumpy
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    sess = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(SmallCnnNumpy().forward(x), sess.run(None, {sess.get_inputs()[0].name: x})[0],
                               rtol=1e-4, atol=1e-6)


def test_sweep_scaling_bench_plans_its_sweep(tmp_path):
    """bench/sweep_scaling.py (not run here: it takes minutes) builds a valid 112-job sweep from sweep.yaml."""
    r = subprocess.run([sys.executable, "-c", (
        "import runpy, sys, pathlib; sys.path.insert(0, 'bench'); "
        "g = runpy.run_path('bench/sweep_scaling.py', run_name='not_main'); "
        "from om_sweep.spec import load_spec; from om_sweep.plan import make_plan; "
        f"spec = load_spec(g['sweep_file'](pathlib.Path({str(tmp_path)!r}))); "
        "jobs = make_plan(spec, 'v').jobs; assert len(jobs) == 112, len(jobs); "
        "assert callable(g['main']) and callable(g['scheduler_cost']) and callable(g['transfer_cost'])")],
        cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_speed_table_convnext_block_runs_like_onnxruntime(tmp_path):
    """bench/speed_table.py's ConvNeXt block (row 4; built with onnx.helper) is a valid model that om-run (fp32
    build) computes as onnxruntime does, and the table's entry point imports; nothing is timed."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    sys.path.insert(0, str(ROOT))
    from bench import speed_table
    assert callable(speed_table.main)
    path = tmp_path / "block.onnx"
    speed_table.convnext_block(path, c=8, hw=9)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    sim, dm, _ = speed_table.om_sim(tmp_path, "block", path, speed_table.FP32)
    x = np.random.default_rng(2).standard_normal((1, 8, 9, 9)).astype(np.float32)
    got, _ = sim.run([x])
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got[0], sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)
