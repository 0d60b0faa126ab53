"""om-sweep run on the local engine: the table, failing points, limits, crashes, resume, reuse."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import atc_py
from atc_py.common.errors import AtcError
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from om_run.sim.profile import RuntimeProfile
from om_run.sim.report import summary_json
from om_sweep import sandbox
from om_sweep.plan import make_plan
from om_sweep.spec import load_spec
from tests.helpers.sweep import (
    MODELS,
    ROOT,
    om_sweep,
    sample_models,
    table,
    write_sweep,
)
from tests.helpers.terminal import FakeTerminal

MINIMAL = """models:
  - path: models/small_cnn.onnx
    framework: 5
grid:
  soc_version: [Ascend910B1, Ascend310P3]
  tiling_schedule_optimize: [0, 1]
"""

CNN_ONLY = {"models": [str(MODELS / "small_cnn.onnx")], "grid": {"soc_version": ["Ascend910B1"]}}


def test_minimal_sweep_file_as_written_in_the_issue(tmp_path):
    (tmp_path / "models").mkdir()
    shutil.copy(MODELS / "small_cnn.onnx", tmp_path / "models")
    (tmp_path / "sweep.yaml").write_text(MINIMAL)
    out = tmp_path / "results"
    code, stdout, stderr = om_sweep("run", tmp_path / "sweep.yaml", "-o", out, "--workers", "2")
    assert code == 0, stderr
    assert (out / "results.parquet").is_file() and (out / "results.csv").is_file()
    assert (out / "report.html").is_file()
    assert "4 points, 4 jobs run, 0 reused; ok 4, failed 0" in stdout
    assert re.search(r"om-sweep \[#+\] 4/4 jobs \(local\)", stderr), stderr      # the progress bar
    rows = table(out)
    assert [(r["model"], r["soc_version"], r["tiling_schedule_optimize"]) for r in rows] == [
        ("models/small_cnn.onnx", soc, sink) for soc in ("Ascend310P3", "Ascend910B1") for sink in ("0", "1")]
    header = (out / "results.csv").read_text().splitlines()[0]
    for col in ("model", "soc_version", "tiling_schedule_optimize", "status", "tasks", "e2e_us"):
        assert f'"{col}"' in header
    for r in rows:       # the numbers are atc-py's and om-run's for the same flags
        assert r["status"] == "ok" and r["numeric"] is True
        built = atc_py.build(str(MODELS / "small_cnn.onnx"), {
            "ge.socVersion": r["soc_version"], "ge.frameworkType": "5", "om_name": "small_cnn",
            "ge.tiling_schedule_optimize": r["tiling_schedule_optimize"]})
        assert (r["tasks"], r["streams"], r["memory_size"], r["memory_lower_bound"]) == (
            built.summary["tasks"], built.summary["stream_num"], built.summary["memory_size"],
            built.summary["memory_lower_bound"])
        om = tmp_path / "x.om"
        built.save(om)
        model = load_model(str(om))
        _, stats = Simulation(model, RuntimeProfile(), compute=False).run(None)
        s = summary_json([stats], model.name, model.soc_version)
        assert (r["e2e_us"], r["host_us"], r["device_us"], r["syncs"]) == (
            s["e2e_us"], s["host_us"], s["device_us"], s["host_device_syncs"])


def test_rerun_skips_done_jobs_and_gives_the_same_table(tmp_path):
    sweep = write_sweep(tmp_path, {"models": [str(MODELS / "small_cnn.onnx"), str(MODELS / "tf_lenet.pb")],
                                   "grid": {"soc_version": ["Ascend910B1"], "tiling_schedule_optimize": [0, 1]},
                                   "run": {"compute": False}})
    out = tmp_path / "r"
    assert om_sweep("run", sweep, "-o", out, "--no-report")[0] == 0
    first = table(out, drop_wall_clock=False)
    mtimes = {p.name: p.stat().st_mtime_ns for p in (out / "jobs").iterdir()}
    code, stdout, _ = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0 and "4 points, 0 jobs run, 4 reused" in stdout
    assert table(out, drop_wall_clock=False) == first
    assert {p.name: p.stat().st_mtime_ns for p in (out / "jobs").iterdir()} == mtimes
    # a changed model file is a new job (its bytes are in the key); the others stay done
    changed = tmp_path / "small_cnn.onnx"
    m = onnx.load(str(MODELS / "small_cnn.onnx"))
    m.doc_string = "changed"
    onnx.save(m, str(changed))
    sweep = write_sweep(tmp_path, {"models": [str(changed), str(MODELS / "tf_lenet.pb")],
                                   "grid": {"soc_version": ["Ascend910B1"], "tiling_schedule_optimize": [0, 1]},
                                   "run": {"compute": False}})
    code, stdout, _ = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0 and "4 points, 2 jobs run, 2 reused" in stdout


def test_job_key_covers_model_bytes_flags_inputs_and_tool_version(tmp_path):
    sweep = write_sweep(tmp_path, {"models": [{"path": str(MODELS / "decoder_step.onnx"),
                                               "inputs": str(MODELS / "decoder_step.inputs.npz")}],
                                   "grid": {"soc_version": ["Ascend910B1"], "tiling_schedule_optimize": [0, 1]}})
    spec = load_spec(sweep)
    keys = [j.key for j in make_plan(spec, "v1").jobs]
    assert len(set(keys)) == 2
    assert keys == [j.key for j in make_plan(spec, "v1").jobs]            # stable
    assert not set(keys) & {j.key for j in make_plan(spec, "v2").jobs}   # tool version
    assert not set(keys) & {j.key for j in make_plan(spec, "v1", compute=False).jobs}   # no inputs read
    other_inputs = tmp_path / "in.npz"
    with np.load(MODELS / "decoder_step.inputs.npz") as z:
        np.savez(other_inputs, **{k: z[k] + (1 if z[k].dtype.kind == "f" else 0) for k in z.files})
    sweep2 = write_sweep(tmp_path, {"models": [{"path": str(MODELS / "decoder_step.onnx"),
                                                "inputs": str(other_inputs)}],
                                    "grid": {"soc_version": ["Ascend910B1"], "tiling_schedule_optimize": [0, 1]}},
                         name="s2.yaml")
    assert not set(keys) & {j.key for j in make_plan(load_spec(sweep2), "v1").jobs}


CRASH_ONCE = """import os, pathlib
marker = pathlib.Path(__file__).with_suffix(".crashed")
if not marker.exists():
    marker.write_text("1")
    os._exit(3)
"""
CRASH_ALWAYS = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"


def test_failing_points_are_rows_and_never_stop_the_sweep(tmp_path):
    (tmp_path / "crash_always.py").write_text(CRASH_ALWAYS)
    sweep = write_sweep(tmp_path, {
        "models": [
            {"path": str(MODELS / "small_cnn.onnx")},
            {"path": "missing/nope.onnx"},                                     # missing model
            {"path": str(MODELS / "tf_lenet.pb"), "framework": 3, "inputs": "missing.npz"},   # missing inputs
            {"path": str(MODELS / "small_transformer.onnx"), "flags": {"op_plugin": "crash_always.py"}},
            {"path": str(MODELS / "decoder_step.onnx")},   # random inputs: a group_list out of range at run time
        ],
        "grid": {"soc_version": ["Ascend910B1"], "tiling_schedule_optimize": [1, 2]},    # 2: atc-py rejects it
        "run": {"retries": 1}})
    out = tmp_path / "r"
    code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0, stderr
    rows = {(r["model"], r["tiling_schedule_optimize"]): r for r in table(out)}
    assert len(rows) == 10
    cnn = rows[(str(MODELS / "small_cnn.onnx"), "1")]
    assert cnn["status"] == "ok" and cnn["tasks"] > 0
    bad_flag = rows[(str(MODELS / "small_cnn.onnx"), "2")]
    # exactly what atc-py says for the same flag
    assert bad_flag["status"] == "E10006" and "Value 2 for parameter --tiling_schedule_optimize" in \
        bad_flag["error_message"] and bad_flag["tasks"] is None
    missing = rows[("missing/nope.onnx", "1")]
    assert missing["status"] == "E40003" and "models[1].path" in missing["error_message"] and missing["key"] is None
    no_inputs = rows[(str(MODELS / "tf_lenet.pb"), "1")]
    assert no_inputs["status"] == "E40003" and "models[2].inputs" in no_inputs["error_message"]
    crashed = rows[(str(MODELS / "small_transformer.onnx"), "1")]
    assert crashed["status"] == "E40006" and crashed["attempts"] == 2 and "SIGKILL" in crashed["error_message"]
    runtime = rows[(str(MODELS / "decoder_step.onnx"), "1")]
    assert runtime["status"] == "E30004" and "group_list" in runtime["error_message"]
    assert runtime["tasks"] > 0 and runtime["e2e_us"] is None       # compiled, then failed in the simulator
    assert "ok 1, failed 9" in stdout


def test_crashed_job_process_is_retried(tmp_path):
    (tmp_path / "crash_once.py").write_text(CRASH_ONCE)
    sweep = write_sweep(tmp_path, {"models": [{"path": str(MODELS / "small_cnn.onnx"),
                                               "flags": {"op_plugin": "crash_once.py"}}],
                                   "grid": {"soc_version": ["Ascend910B1"]}, "run": {"compute": False}})
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--no-report")
    assert code == 0, stderr
    (row,) = table(tmp_path / "r")
    assert row["status"] == "ok" and row["attempts"] == 2 and (tmp_path / "crash_once.crashed").exists()


def _big_model(path, elements: int) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, elements])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, elements])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Exp", ["r"], ["y"])],
                          "big", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def test_time_and_memory_limits_are_recorded(tmp_path):
    _big_model(tmp_path / "big.onnx", 16 * 2**20)            # 64 MiB a tensor
    sweep = write_sweep(tmp_path, {
        "models": [{"path": "big.onnx", "memory_limit_mb": 48},
                   {"path": str(MODELS / "inception_block.onnx"), "time_limit_s": 0.001},
                   {"path": str(MODELS / "small_cnn.onnx"), "memory_limit_mb": 512}],
        "grid": {"soc_version": ["Ascend910B1"], "precision_mode": ["must_keep_origin_dtype"]}})
    out = tmp_path / "r"
    code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0, stderr
    rows = {r["model"]: r for r in table(out)}
    big = rows["big.onnx"]
    assert big["status"] == "E40005" and "memory limit of 48 MiB" in big["error_message"]
    assert big["memory_limit_mb"] == 48
    slow = rows[str(MODELS / "inception_block.onnx")]
    assert slow["status"] == "E40004" and slow["error_message"] == \
        "The job exceeded its time limit of 0.001 s and was stopped" and slow["time_limit_s"] == 0.001
    assert rows[str(MODELS / "small_cnn.onnx")]["status"] == "ok"
    # a limit result is final for that limit, and runs again once the limit is raised
    code, stdout, _ = om_sweep("run", sweep, "-o", out, "--no-report")
    assert "0 jobs run, 3 reused" in stdout
    sweep = write_sweep(tmp_path, {
        "models": [{"path": "big.onnx", "memory_limit_mb": 48},
                   {"path": str(MODELS / "inception_block.onnx"), "time_limit_s": 120},
                   {"path": str(MODELS / "small_cnn.onnx"), "memory_limit_mb": 512}],
        "grid": {"soc_version": ["Ascend910B1"], "precision_mode": ["must_keep_origin_dtype"]}})
    code, stdout, _ = om_sweep("run", sweep, "-o", out, "--no-report")
    assert "1 jobs run, 2 reused" in stdout
    assert {r["model"]: r["status"] for r in table(out)}[str(MODELS / "inception_block.onnx")] == "ok"


def test_numeric_error_is_om_runs(tmp_path, om_run):
    import onnxruntime as ort
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    sess = ort.InferenceSession(str(MODELS / "small_cnn.onnx"), providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0].name
    np.savez(tmp_path / "in.npz", **{inp: x})
    np.savez(tmp_path / "exp.npz", *sess.run(None, {inp: x}))
    sweep = write_sweep(tmp_path, {"models": [{"path": str(MODELS / "small_cnn.onnx"), "inputs": "in.npz",
                                               "expected": "exp.npz", "rtol": 1e-3, "atol": 1e-3}],
                                   "grid": {"soc_version": ["Ascend910B1"],
                                            "precision_mode": ["must_keep_origin_dtype", "force_fp16"]}})
    assert om_sweep("run", sweep, "-o", tmp_path / "r", "--no-report")[0] == 0
    for row in table(tmp_path / "r"):
        atc_out = tmp_path / row["precision_mode"]
        assert atc_py  # compile the same point with atc-py's command line, run om-run --expected
        from atc_py.cli.main import run as atc_run
        assert atc_run(["--model", str(MODELS / "small_cnn.onnx"), "--framework=5", f"--output={atc_out}",
                        "--soc_version=Ascend910B1", f"--precision_mode={row['precision_mode']}"]) == 0
        code, out, _ = om_run("--model", f"{atc_out}.om", "--input", str(tmp_path / "in.npz"),
                              "--expected", str(tmp_path / "exp.npz"), "--rtol", "1e-3", "--atol", "1e-3")
        printed = re.search(r"max abs err (\S+), max rel err (\S+)", out)
        assert f"{row['max_abs_err']:.3e}" == printed.group(1) and f"{row['max_rel_err']:.3e}" == printed.group(2)
        assert (row["status"] == "ok") == (code == 0)
        if row["status"] != "ok":
            assert row["status"] == "E30003" and row["mismatched"] > 0
    statuses = {r["precision_mode"]: r["status"] for r in table(tmp_path / "r")}
    assert statuses["must_keep_origin_dtype"] == "ok"


@pytest.mark.heavy
def test_resume_after_a_killed_run(tmp_path):
    doc = {"models": sample_models(),
           "grid": {"soc_version": ["Ascend910B1", "Ascend310P3"], "tiling_schedule_optimize": [0, 1],
                    "precision_mode": ["force_fp16", "must_keep_origin_dtype"]}}
    sweep = write_sweep(tmp_path, doc)
    out = tmp_path / "r"
    jobs = out / "jobs"
    proc = subprocess.Popen([sys.executable, "-m", "om_sweep", "run", str(sweep), "-o", str(out), "--workers", "1",
                             "--no-report"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not jobs.is_dir() or len(list(jobs.glob("*.json"))) < 3):
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)         # the driver, its fork server and the running job
        proc.wait()
    done_before = {p.name: (p.stat().st_mtime_ns, p.read_text()) for p in jobs.glob("*.json")}
    total = len(make_plan(load_spec(sweep), "x").jobs)
    assert 3 <= len(done_before) < total, "the run was not interrupted"
    assert not (out / "results.parquet").exists()
    code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--workers", "2", "--no-report")
    assert code == 0, stderr
    assert f"{total} points, {total - len(done_before)} jobs run, {len(done_before)} reused" in stdout
    for name, (mtime, text) in done_before.items():          # done jobs were skipped, not rerun
        assert (jobs / name).stat().st_mtime_ns == mtime and (jobs / name).read_text() == text
    rows = table(out)
    assert len(rows) == total and all(r["status"] == "ok" for r in rows)
    assert sorted(r["key"] for r in rows) == sorted(p.stem for p in jobs.glob("*.json"))


def test_store_ignores_damaged_records(tmp_path):
    sweep = write_sweep(tmp_path, {"models": [str(MODELS / "small_cnn.onnx")],
                                   "grid": {"soc_version": ["Ascend910B1", "Ascend310P3"]}, "run": {"compute": False}})
    out = tmp_path / "r"
    assert om_sweep("run", sweep, "-o", out, "--no-report")[0] == 0
    recs = sorted((out / "jobs").glob("*.json"))
    recs[0].write_text(recs[0].read_text()[:40])                          # truncated
    rec = json.loads(recs[1].read_text())
    rec["tasks"] = "13"                                                    # wrong type
    recs[1].write_text(json.dumps(rec))
    (out / "jobs" / f".{recs[0].name}.tmp123").write_text("half")          # a write a kill interrupted
    code, stdout, _ = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0 and "2 jobs run, 0 reused" in stdout
    assert all(r["status"] == "ok" and isinstance(r["tasks"], int) for r in table(out))
    assert not list((out / "jobs").glob(".*"))


def test_missing_dependency_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)                      # import pyarrow -> ImportError
    sweep = write_sweep(tmp_path, CNN_ONLY)
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r")
    assert code == 1 and stderr.strip() == ("[ERROR] E40008: om-sweep needs pyarrow, which is not installed: "
                                            "pip install 'atc-py[sweep]'")
    assert not (tmp_path / "r").exists()


def test_command_line_errors(tmp_path):
    sweep = write_sweep(tmp_path, CNN_ONLY)
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--workers", "0")
    assert code == 1 and stderr.startswith("[ERROR] E40011: Invalid option --workers")
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--scheduler", "tcp://127.0.0.1:1")
    assert code == 1 and "--scheduler" in stderr and "needs --engine dask" in stderr
    (tmp_path / "file").write_text("x")
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "file")
    assert code == 1 and stderr.startswith("[ERROR] E40010: Cannot write") and "Traceback" not in stderr


def test_job_processes_cannot_start_in_a_daemonic_process():
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=lambda: q.put(sandbox.can_start_jobs()), daemon=True)
    p.start()
    problem = q.get(timeout=30)
    p.join()
    assert "DASK_DISTRIBUTED__WORKER__DAEMON=False" in problem and sandbox.can_start_jobs() == ""


def test_changed_file_after_planning_is_not_filed_under_the_old_key(tmp_path):
    model = tmp_path / "m.onnx"
    shutil.copy(MODELS / "small_cnn.onnx", model)
    spec = load_spec(write_sweep(tmp_path, {"models": ["m.onnx"], "grid": {"soc_version": ["Ascend910B1"]}}))
    (job,) = make_plan(spec, "v").jobs
    _big_model(model, 8)
    rec = sandbox.run_job(job)
    assert rec["status"] == "E40003" and "changed since the sweep started" in rec["error_message"]
    with pytest.raises(AtcError):
        raise AtcError("E40003", field="x", path="y")


def test_usage_errors_are_e_coded(tmp_path):
    code, _, stderr = om_sweep("run", "--frobnicate")
    assert code == 1 and stderr.startswith("[ERROR] E40011: Invalid option (command line of `om-sweep run`)") \
        and "frobnicate" in stderr
    code, _, stderr = om_sweep("run", "x.yaml", "--engine", "slurm")
    assert code == 1 and "E40011" in stderr and "slurm" in stderr
    code, stdout, _ = om_sweep("--help")
    assert code == 0 and "run" in stdout and "report" in stdout


def test_rerun_failed_runs_only_the_failed_jobs(tmp_path):
    sweep = write_sweep(tmp_path, {"models": [str(MODELS / "small_cnn.onnx")],
                                   "grid": {"soc_version": ["Ascend910B1"], "tiling_schedule_optimize": [0, 1, 2]},
                                   "run": {"compute": False}})
    out = tmp_path / "r"
    assert "ok 2, failed 1 (E10006 x1)" in om_sweep("run", sweep, "-o", out, "--no-report")[1]
    assert "0 jobs run, 3 reused" in om_sweep("run", sweep, "-o", out, "--no-report")[1]
    assert "1 jobs run, 2 reused" in om_sweep("run", sweep, "-o", out, "--no-report", "--rerun-failed")[1]


def test_progress_bar_redraws_in_place_on_a_terminal():
    from om_sweep.progress import Progress
    clock = iter(range(100)).__next__          # one second per reading
    tty = FakeTerminal()
    bar = Progress(4, 2, "local", stream=tty, clock=lambda: float(clock()))
    for status in ("ok", "E10006", "ok", "ok"):
        bar.update(status)
    bar.close()
    frames = tty.text.split("\r")[1:]
    assert len(frames) == 5 and tty.text.endswith("\n") and "\n" not in "".join(frames)[:-1]
    assert frames[0].startswith("om-sweep [----------------------------] 0/4 jobs (local)")
    assert "[##############--------------] 2/4" in frames[2] and "ok 1  failed 1  reused 2" in frames[2]
    assert "4/4 jobs" in frames[-1] and "ok 3  failed 1" in frames[-1]


@pytest.mark.heavy
@pytest.mark.parametrize("how", ["module", "script"])
def test_job_processes_import_nothing_from_the_working_folder(tmp_path, how):
    """The fork server starts as `python -c` in the working folder, which put that folder first on its sys.path:
    a numpy.py in the folder a sweep runs from was imported by every job (through `python -m om_sweep` and the
    console script alike). It starts with the sweep's own sys.path and without the working folder."""
    (tmp_path / "numpy.py").write_text("import pathlib\npathlib.Path(__file__).with_name('PLANTED').write_text('')\n"
                                       "raise SystemExit('planted numpy imported')\n")
    shutil.copy(MODELS / "small_cnn.onnx", tmp_path / "m.onnx")
    (tmp_path / "s.yaml").write_text("models: [m.onnx]\ngrid: {soc_version: [Ascend910B1]}\nrun: {compute: false}\n")
    script = tmp_path / "bin" / "om_sweep_script.py"       # what a console script is: a file elsewhere
    script.parent.mkdir()
    script.write_text("import sys\nfrom om_sweep.cli import main\nif __name__ == '__main__':\n    sys.exit(main())\n")
    command = ["-m", "om_sweep"] if how == "module" else [str(script)]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "ATC_PY_DEBUG")}
    env.update(PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, *command, "run", "s.yaml", "-o", "r", "--workers", "1", "--no-report"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert [r["status"] for r in table(tmp_path / "r")] == ["ok"] and not (tmp_path / "PLANTED").exists()
