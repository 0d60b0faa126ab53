"""om-sweep over LLM generation: `generate: N` points run om-run --generate's decode loop (tools/kv_decoder.py's tiny
decoders), ATB's environment variables as grid keys (run-time settings: grid columns and job key, never atc-py
flags), TTFT / TPOT / tokens/s and ATB's cache hits as columns; bad values refused up front."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from om_sweep.job import GENERATION_FIELDS as GENERATION
from om_sweep.job import WALL_CLOCK_FIELDS, atb_settings, execute
from om_sweep.plan import make_plan
from om_sweep.spec import load_spec
from om_sweep.table import pyarrow, read_results
from tests.helpers.sweep import MODELS, om_sweep, table, write_sweep
from tools.kv_decoder import KvShape, build

SHAPE = KvShape(layers=1, hidden=16, heads=2, intermediate=24, vocab=32, max_cache=8)
PROMPT = np.array([[5, 17, 3]], np.int64)
NEW = 3
FP32 = {"soc_version": "Ascend910B1", "precision_mode": "force_fp32"}
KERNEL, SETUP = "ATB_OPSRUNNER_KERNEL_CACHE_TYPE", "ATB_OPSRUNNER_SETUP_CACHE_ENABLE"


def _cache_dims(past: str) -> list[str]:
    n, d = SHAPE.heads, SHAPE.head_dim
    return [f"past_key_values.{k}.{io}:[1,{n},{past},{d}]" for k in range(SHAPE.layers) for io in ("key", "value")]


def growing_flags() -> dict:
    """A growing cache compiles with a 0~N past length (the prefill's past is empty)."""
    m = SHAPE.max_cache
    ranges = [f"input_ids:[1,1~{m}]", f"attention_mask:[1,1~{m}]", f"position_ids:[1,1~{m}]", *_cache_dims(f"0~{m}")]
    return {**FP32, "input_shape_range": ";".join(ranges)}


def static_flags() -> dict:
    shapes = ["input_ids:1,1", "position_ids:1,1", "cache_position:1"]
    shapes += [d.replace("[", "").replace("]", "") for d in _cache_dims(str(SHAPE.max_cache))]
    return {**FP32, "input_shape": ";".join(shapes)}


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """The two decoders and the prompt, in one folder the sweep files refer to."""
    folder = tmp_path_factory.mktemp("llm")
    for layout in ("growing", "static"):
        onnx.save_model(build(SHAPE, layout, seed=3), folder / f"{layout}.onnx")
    np.savez(folder / "prompt.npz", input_ids=PROMPT)
    return folder


def entry(layout: str, **extra) -> dict:
    flags = growing_flags() if layout == "growing" else static_flags()
    return {"path": f"{layout}.onnx", "inputs": "prompt.npz", "generate": NEW, "flags": flags, **extra}


def run(folder, doc: dict, out: str, *argv: str, workers: int = 2):
    sweep = write_sweep(folder, doc, f"{out}.yaml")
    code, stdout, stderr = om_sweep("run", sweep, "-o", folder / out, "--workers", str(workers), *argv)
    return code, stdout, stderr, folder / out


def test_atb_grid_over_a_growing_decoder(zoo):
    doc = {"models": [entry("growing")], "grid": {KERNEL: [0, 3], SETUP: [0, 1]}}
    code, stdout, stderr, out = run(zoo, doc, "atb")
    assert code == 0, stderr
    assert "4 points, 4 jobs run, 0 reused; ok 4" in stdout
    rows = table(out)
    assert [(r[KERNEL], r[SETUP]) for r in rows] == [("0", "0"), ("0", "1"), ("3", "0"), ("3", "1")]
    assert len({r["options"] for r in rows}) == 1 and "ATB" not in rows[0]["options"]   # not atc-py flags
    assert len({r["key"] for r in rows}) == 4                                           # ...but in the job key
    for r in rows:
        assert r["status"] == "ok", r["error_message"]
        assert r["generated_tokens"] == NEW and r["tokens_per_s"] > 0 and r["ttft_us"] > r["tpot_us"] > 0
        assert r["e2e_us"] == pytest.approx(NEW / r["tokens_per_s"] * 1e6)   # the whole generation
        assert r["host_us"] > 0 and r["device_us"] > 0 and r["hazards"] == 0
    by = {(r[KERNEL], r[SETUP]): r for r in rows}
    off, on = by[("0", "0")], by[("3", "1")]           # both off; ATB's defaults
    assert off["setup_cache_hits"] == 0 and off["kernel_cache_hits"] == 0
    assert on["setup_cache_hits"] > 0 and on["kernel_cache_hits"] > 0
    assert by[("3", "0")]["setup_cache_hits"] == 0 and by[("0", "1")]["kernel_cache_hits"] == 0
    assert on["host_us"] < off["host_us"]              # the caches save host time
    assert "tokens/s" in (out / "report.html").read_text()
    # the same sweep again, elsewhere and with one worker: the same table but for wall-clock columns
    code, _, stderr, again = run(zoo, doc, "atb_again", workers=1)
    assert code == 0, stderr
    assert table(again) == rows


def test_static_decoder_with_tiling_sink_and_a_failing_generation(zoo):
    np.savez(zoo / "long.npz", input_ids=np.arange(SHAPE.max_cache, dtype=np.int64)[None])
    doc = {"models": [entry("static"), entry("growing", inputs="long.npz")],
           "grid": {"tiling_schedule_optimize": [0, 1]}, "run": {"generate": 99}}
    code, _, stderr, out = run(zoo, doc, "static")
    assert code == 0, stderr
    rows = table(out)
    assert [(r["model"], r["tiling_schedule_optimize"]) for r in rows] == [
        (f"{layout}.onnx", sink) for layout in ("growing", "static") for sink in ("0", "1")]
    for r in rows[2:]:
        assert r["status"] == "ok", r["error_message"]
        assert r["ttft_us"] > r["tpot_us"] > 0 and r["generated_tokens"] == NEW   # the entry's generate wins
    for r in rows[:2]:       # 8 prompt tokens and 3 new ones outgrow the ranges 1~8: om-run's error, as a row
        assert r["status"] == "E30002" and "a prompt of 8 tokens and 3 new ones" in r["error_message"]
        assert r["tasks"] is not None and r["ttft_us"] is None          # compiled, then refused


def test_points_without_generate_leave_the_generation_columns_empty(zoo):
    """ATB grid keys apply to one execution too; a model without generate runs once, as before."""
    doc = {"models": [str(MODELS / "small_cnn.onnx")], "grid": {"soc_version": ["Ascend910B1"], KERNEL: [0, 3]}}
    code, _, stderr, out = run(zoo, doc, "plain")
    assert code == 0, stderr
    rows = table(out)
    assert [r[KERNEL] for r in rows] == ["0", "3"] and all(r["status"] == "ok" for r in rows)
    assert all(r[c] is None for r in rows for c in GENERATION) and all(r["e2e_us"] > 0 for r in rows)
    # a table written before the generation columns existed is still a baseline: they read as empty
    pq = pyarrow().parquet
    old = pq.read_table(out / "results.parquet")
    pq.write_table(old.drop_columns(list(GENERATION)), zoo / "old.parquet")
    code, _, stderr = om_sweep("report", out / "results.parquet", "-o", zoo / "vs_old.html",
                               "--baseline", zoo / "old.parquet")
    assert code == 0, stderr
    assert [{k: v for k, v in r.items() if k not in WALL_CLOCK_FIELDS} for r in
            read_results(zoo / "old.parquet")[0]] == rows


def test_atb_values_go_to_the_simulation_not_to_atc_py(zoo, tmp_path, monkeypatch):
    doc = {"models": [entry("growing")],
           "grid": {KERNEL: ["03", 0], "ATB_OPSRUNNER_KERNEL_CACHE_GLOABL_COUNT": [7]}}
    plan = make_plan(load_spec(write_sweep(zoo, doc, "plan.yaml")), "v")
    assert [p.grid for p in plan.points] == [((KERNEL, "0"), ("ATB_OPSRUNNER_KERNEL_CACHE_GLOABL_COUNT", "7")),
                                             ((KERNEL, "3"), ("ATB_OPSRUNNER_KERNEL_CACHE_GLOABL_COUNT", "7"))]
    for job in (p.job for p in plan.points):
        assert not any(name.startswith("ATB_") for name in job.flags) and job.generate == NEW
    job = plan.points[1].job
    # the environment is not in the job key, so a job does not read it: ATB's default where the grid says nothing
    monkeypatch.setenv(SETUP, "0")
    monkeypatch.setenv(KERNEL, "0")
    settings = atb_settings(job)
    assert (settings.kernel_cache_type, settings.global_slots, settings.setup_cache) == (3, 7, 1)
    rec = execute(job, {}, str(tmp_path))
    assert rec["status"] == "ok" and rec["setup_cache_hits"] > 0 and rec["kernel_cache_hits"] > 0


def test_no_compute_on_the_command_line_fails_generating_points_as_om_run_does(zoo):
    code, stdout, stderr, out = run(zoo, {"models": [entry("growing")]}, "nocompute", "--no-compute")
    assert code == 0, stderr
    (row,) = table(out)
    assert row["status"] == "E30002" and "--no-compute does not apply" in row["error_message"]


BAD = [
    ({"grid": {KERNEL: [0, 4]}}, f"grid.{KERNEL}[1]", "0~3"),
    ({"grid": {SETUP: [True]}}, f"grid.{SETUP}[0]", "0~1"),
    ({"grid": {"ATB_HOST_TILING_BUFFER_BLOCK_NUM": ["64"]}}, "grid.ATB_HOST_TILING_BUFFER_BLOCK_NUM[0]", "128~1024"),
    ({"grid": {KERNEL: [3, "3"]}}, f"grid.{KERNEL}", "listed twice"),
    ({"grid": {"ATB_OPSRUNNER_KERNEL_CACHE_GLOABL_COUNT": [2], "ATB_OPSRUNNER_KERNEL_CACHE_GLOBAL_COUNT": [3]}},
     "grid.ATB_OPSRUNNER_KERNEL_CACHE_GLOABL_COUNT", "other spelling"),
    ({"entry": {"flags": {**growing_flags(), KERNEL: 0}}}, f"models[0].flags.{KERNEL}", "give it as a grid key"),
    ({"entry": {"compute": False}}, "models[0].generate", "numeric run"),
    ({"entry": {"generate": 0}}, "models[0].generate", ">= 1"),
    ({"entry": {"generate": "3"}}, "models[0].generate", "an integer"),
    ({"entry": {"expected": "prompt.npz"}}, "models[0].expected", "does not apply with generate"),
    ({"entry": {"inputs": "a.npy,b.npy"}}, "models[0].inputs", "one .npz"),
    ({"run": {"generate": 2, "compute": False}, "entry": {"generate": None}}, "run.generate", "numeric run"),
    ({"run": {"generate": 2}, "entry": {"generate": None, "inputs": None}}, "models[0].inputs", "is required"),
]


@pytest.mark.parametrize("case,field,reason", BAD, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)])
def test_bad_generation_or_atb_fields_are_e40001(zoo, case, field, reason):
    model = {**entry("growing"), **case.get("entry", {})}
    model = {k: v for k, v in model.items() if v is not None}
    doc = {"models": [model], "grid": case.get("grid", {}), "run": case.get("run", {})}
    code, _, stderr, out = run(zoo, doc, "bad")
    assert code == 1 and not out.exists()
    line = stderr.strip()
    assert line.startswith("[ERROR] E40001: Invalid sweep file") and "Traceback" not in stderr, stderr
    assert f": {field}: " in line and reason in line, line
