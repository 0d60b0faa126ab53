"""Serving points run: a small grid over a tiny decoder on the local engine and on a Dask LocalCluster, one step
table built once for both (OM_RUN_SERVE_CACHE), equal records, om-run serve's own metrics, vLLM's refusals as
failed rows, shipped files on a worker without the model folder, and the report's throughput/TPOT chart with the
SLO-feasible points marked."""
from __future__ import annotations

import re
from binascii import a2b_base64

import pytest

from om_run.serve.command import parse_flags
from om_run.serve.results import compute
from om_run.serve.results.metrics import Selection
from om_run.serve.session import prepare, run_info, simulate
from om_sweep import sandbox
from om_sweep.plan import make_plan
from om_sweep.report import render
from om_sweep.spec import load_spec
from om_sweep.table import column_names
from tests.helpers.sweep import TINY_LIMITS, Elements, om_sweep, table, tiny_decoder, write_sweep

WORKLOAD = {"random_input_len": 40, "random_output_len": 10, "num_prompts": 10}
SLOS = {"ttft": 20, "tpot": 5}           # the tiny decoder meets them at 5 req/s, not with every request at once
GRID = {"soc_version": ["Ascend910B1"], "max_num_seqs": [8, 512], "request_rate": [5, "inf"]}   # 512 > 256 tokens


def _tables(cache):
    return {p.name: p.stat().st_mtime_ns for p in cache.glob("table-*.json")}


@pytest.mark.heavy
def test_serving_grid_on_local_and_dask_shares_one_step_table(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    cache = tmp_path / "cache"
    monkeypatch.setenv("OM_RUN_SERVE_CACHE", str(cache))
    model = tiny_decoder(tmp_path / "tiny")
    sweep = write_sweep(tmp_path, {"serve": [{"model": "tiny", "workload": WORKLOAD, "goodput": SLOS,
                                              "settings": TINY_LIMITS}], "grid": GRID})
    code, stdout, stderr = om_sweep("run", sweep, "-o", tmp_path / "local", "--workers", "2")
    assert code == 0, stderr
    built = _tables(cache)
    assert len(built) == 1, built                 # vLLM V0 runs eager: one table, built by one of the two jobs
    code, stdout, stderr = om_sweep("run", sweep, "-o", tmp_path / "dask", "--engine", "dask", "--workers", "1",
                                    "--no-report")
    assert code == 0, stderr
    assert "(dask)" in stderr and "4 jobs run" in stdout
    assert _tables(cache) == built                # the Dask jobs read the table the local ones built
    local = table(tmp_path / "local")
    assert table(tmp_path / "dask") == local

    ok = [r for r in local if r["status"] == "ok"]
    bad = [r for r in local if r["status"] != "ok"]
    assert [(r["max_num_seqs"], r["request_rate"]) for r in ok] == [("8", "5"), ("8", "inf")]
    assert {r["status"] for r in bad} == {"E10001"} and len(bad) == 2
    assert all("--max-num-batched-tokens" in r["error_message"] and "max_num_seqs (512)" in r["error_message"]
               for r in bad)
    assert all(r["kind"] == "serve" and r["completed"] == 10 and r["failed"] == 0 and r["npus"] == 1 for r in ok)
    assert all(r["output_throughput_per_npu"] == r["output_throughput"] > 0 for r in ok)
    assert [r["feasible"] for r in ok] == [True, False]
    assert ok[1]["pct_ttft_ms"] > SLOS["ttft"] >= ok[0]["pct_ttft_ms"]
    assert all(r["slos"] == "tpot:5 ttft:20" and r["slo_percentile"] == 90 for r in local)

    # the record holds what om-run serve computes for the same flags
    argv = [str(model), "--load-format", "dummy", "--max-model-len", "256", "--max-num-batched-tokens", "256",
            "--max-num-seqs", "8", "--num-prompts", "10", "--random-input-len", "40", "--random-output-len", "10",
            "--request-rate", "5", "--gpu-memory-utilization", "0.02", "--no-progress", "--workers", "1"]
    flags = parse_flags(argv)
    prep = prepare(flags, out=lambda line: None)
    res = simulate(prep, prep.requests, None, progress=False)
    m = compute(res.records, run_info(flags, prep, 5.0), Selection.parse()).metrics
    assert (ok[0]["output_throughput"], ok[0]["mean_tpot_ms"], ok[0]["p99_ttft_ms"]) == \
        (m.output_throughput, m.stats["tpot"].mean_ms, dict(m.stats["ttft"].percentiles_ms)[99.0])
    assert _tables(cache) == built

    html = (tmp_path / "local" / "report.html").read_text()
    page = Elements(html)
    (img,) = page.find("img", "serve-chart")
    assert a2b_base64(img[0]["src"].removeprefix("data:image/png;base64,"))[:8] == b"\x89PNG\r\n\x1a\n"
    assert [t for _, t in page.find("td", "feasible")] == ["✔ yes"]
    assert [t for _, t in page.find("td", "infeasible")] == ["✘ no"]
    assert "Pass/fail matrix" not in html and html.count('class="fail"') >= 2


def _row(grid: dict, **values) -> dict:
    row = dict.fromkeys(column_names(list(grid)))
    row.update(model="tiny", kind="serve", numeric=False, status="ok", error_message="", tool_version="v",
               slos="tpot:50", slo_percentile=90.0, npus=1, **grid, **values)
    rate = grid["request_rate"]
    row["options"] = f"--max-num-seqs={grid['max_num_seqs']} --request-rate={rate}"
    return row


def test_report_marks_feasible_points_per_series():
    """One series per max_num_seqs, its points in rising rate; filled / hollow markers and table marks follow
    `feasible`; a failed point is in the table only; without matplotlib the table stays."""
    rows = [_row({"max_num_seqs": s, "request_rate": r}, output_throughput_per_npu=t, mean_tpot_ms=p,
                 pct_tpot_ms=p * 1.2, feasible=f)
            for s, r, t, p, f in (("8", "16", 90.0, 40.0, True), ("8", "4", 30.0, 20.0, True),
                                  ("64", "4", 35.0, 25.0, True), ("64", "16", 150.0, 60.0, False))]
    rows.append({**_row({"max_num_seqs": "512", "request_rate": "4"}), "status": "E10001",
                 "error_message": "must be >= max_num_seqs (512)"})
    html = render(rows, ["max_num_seqs", "request_rate"], "r.parquet")
    page = Elements(html)
    assert len(page.find("img", "serve-chart")) == 1
    table = Elements(html[html.index('class="serve-points"'):])
    series = [t for a, t in table.find("td") if t.startswith("max_num_seqs=")]
    assert series == ["max_num_seqs=8"] * 2 + ["max_num_seqs=64"] * 2 + ["max_num_seqs=512"]
    rates = re.findall(r'max_num_seqs=\d+</td><td class="\w+"[^>]*>[^<]*</td><td class="num">([^<]*)<', html)
    assert rates == ["4", "16", "4", "16", "4"]
    assert len(table.find("td", "feasible")) == 3 and len(table.find("td", "infeasible")) == 1


def test_report_without_matplotlib_keeps_the_table(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    html = render([_row({"max_num_seqs": "8", "request_rate": "4"}, output_throughput_per_npu=1.0, mean_tpot_ms=1.0,
                        pct_tpot_ms=1.0, feasible=True)], ["max_num_seqs", "request_rate"], "r.parquet")
    assert "<img" not in html and "atc-py[report]" in html and 'class="feasible"' in html


def _planned(tmp_path, monkeypatch, config: str | None = None, **grid):
    """The one job of a sweep over the tiny decoder (its config.json replaced by `config`)."""
    monkeypatch.setenv("OM_RUN_SERVE_CACHE", str(tmp_path / "cache"))
    model = tiny_decoder(tmp_path / "tiny")
    if config is not None:
        (model / "config.json").write_text(config)
    sweep = write_sweep(tmp_path, {"serve": [{"model": "tiny", "workload": WORKLOAD, "settings": TINY_LIMITS}],
                                   "grid": {"soc_version": ["Ascend910B1"], **grid}})
    (point,) = make_plan(load_spec(sweep), "v").points
    return model, point.job


def test_a_worker_without_the_model_folder_serves_the_shipped_config(tmp_path, monkeypatch):
    """Dask ships config.json's bytes to a worker that lacks the folder: the job makes a model folder of them (here
    vLLM then refuses max_num_seqs 512 > 256 tokens: config.json was read, fast, without a table)."""
    model, job = _planned(tmp_path, monkeypatch, max_num_seqs=[512])
    data = (model / "config.json").read_bytes()
    model.rename(tmp_path / "elsewhere")
    rec = sandbox.run_job(job)
    assert rec["status"] == "E40003" and "not on this worker" in rec["error_message"]
    rec = sandbox.run_job(job, {job.files[0].sha256: data})
    assert rec["status"] == "E10001" and "max_num_seqs (512)" in rec["error_message"], rec["error_message"]
    assert rec["slos"] == "" and rec["npus"] == 1 and rec["completed"] is None


def test_an_error_names_the_model_folder_as_the_sweep_does(tmp_path, monkeypatch):
    _, job = _planned(tmp_path, monkeypatch, config='{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64}')
    rec = sandbox.run_job(job)
    assert rec["status"] == "E10041", rec
    assert "tiny/config.json" in rec["error_message"] and "om-sweep-job-" not in rec["error_message"]
