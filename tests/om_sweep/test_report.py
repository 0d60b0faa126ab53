"""om-sweep report: the HTML page holds the pass/fail matrix, per-SoC latency and memory charts (sink x
precision variants) and the changes against a baseline, and is self-contained."""
from __future__ import annotations

import re

import pytest

from om_sweep.report import variant
from om_sweep.table import read_results, write_results
from tests.helpers.sweep import MODELS, Elements, om_sweep, write_sweep

GRID = {"soc_version": ["Ascend910B1", "Ascend310P3"], "tiling_schedule_optimize": [0, 1],
        "precision_mode": ["force_fp16", "must_keep_origin_dtype"]}

CNN_ONLY = {"models": [str(MODELS / "small_cnn.onnx")], "grid": {"soc_version": ["Ascend910B1"]}}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    sweep = write_sweep(folder, {"models": [str(MODELS / "small_cnn.onnx"), str(MODELS / "tf_lenet.pb"),
                                            "missing.onnx"], "grid": GRID, "run": {"compute": False}})
    code, _, stderr = om_sweep("run", sweep, "-o", folder / "r")
    assert code == 0, stderr
    return folder / "r"


def test_report_of_a_run(results):
    html = (results / "report.html").read_text()
    rows, grid_keys = read_results(results / "results.parquet")
    page = Elements(html)
    ok = [r for r in rows if r["status"] == "ok"]
    bad = [r for r in rows if r["status"] != "ok"]
    assert len(rows) == 24 and len(ok) == 16 and {r["status"] for r in bad} == {"E40003"}
    # the matrix: a header row per grid key, a row per model, a cell per point
    matrix = html[html.index('<table class="matrix">'):html.index("</table>", html.index('<table class="matrix">'))]
    mp = Elements(matrix)
    assert [t for a, t in mp.find("th", "key")] == [*grid_keys, "model"]
    assert [t for a, t in mp.find("th") if t.endswith(" (timing only)")] == \
        sorted({r["model"] + " (timing only)" for r in rows})
    ok_cells, fail_cells = mp.find("td", "ok"), mp.find("td", "fail")
    assert len(ok_cells) == len(ok) and len(fail_cells) == len(bad)
    assert sorted(t for _, t in ok_cells) == sorted(f"ok {r['e2e_us']:.4g} us" for r in ok)
    assert all(t == "E40003" and "missing.onnx" in a["title"] for a, t in fail_cells)
    # charts: latency + memory per SoC, one bar per ok point, a legend entry per sink x precision variant
    svgs = page.find("svg", "chart")
    titles = [a["aria-label"] for a, _ in svgs]
    assert titles == [f"{soc}: {what}" for soc in ("Ascend310P3", "Ascend910B1")
                      for what in ("simulated end-to-end latency", "planned feature-map memory")]
    charts = re.findall(r"<svg.*?</svg>", html, flags=re.S)
    for soc, lat, mem in (("Ascend310P3", charts[0], charts[1]), ("Ascend910B1", charts[2], charts[3])):
        mine = [r for r in ok if r["soc_version"] == soc]
        bars = Elements(lat).find("rect", "bar")
        assert len(bars) == len(mine)
        assert sorted(float(re.search(r": (\S+) us", t).group(1)) for _, t in bars) == \
            sorted(r["e2e_us"] for r in mine)
        assert len(Elements(mem).find("rect", "bar")) == len(mine)
        assert len(Elements(mem).find("line", "marker")) == len(mine) + 1          # + the legend's
        legend = [t for _, t in Elements(lat).find("text", "legend")]
        assert sorted(legend) == sorted({variant(r) for r in mine})
        assert "sink on · must_keep_origin_dtype (fp32)" in legend and "sink off · force_fp16 (fp16)" in legend
        assert [t for _, t in Elements(lat).find("text", "fail")] == ["E40003"] * 4   # missing.onnx's variants
    failures = Elements(html[html.index('<table class="failures">'):]).find("td", "fail")
    assert len(failures) == len(bad)
    # self-contained: no script, nothing loaded from elsewhere
    assert "<script" not in html and " src=" not in html and "<link" not in html
    assert set(re.findall(r"https?://[^\s\"']+", html)) == {"http://www.w3.org/2000/svg"}


def test_report_against_a_baseline_shows_regressions(results, tmp_path):
    rows, grid_keys = read_results(results / "results.parquet")
    base = [dict(r) for r in rows]
    ok = [r for r in base if r["status"] == "ok"]
    slower, fixed, new = ok[0], ok[1], ok[2]
    slower["e2e_us"] = slower["e2e_us"] * 0.8            # it was faster before: now a regression
    fixed["status"], fixed["error_message"] = "E10006", "was broken"   # it failed before: now fixed
    base.remove(new)                                     # it did not exist before
    write_results(tmp_path, base, grid_keys)
    code, stdout, stderr = om_sweep("report", results / "results.parquet", "--baseline", tmp_path / "results.parquet",
                                    "-o", tmp_path / "report.html")
    assert code == 0, stderr
    html = (tmp_path / "report.html").read_text()
    page = Elements(html)
    (banner,) = page.find("div", "banner")
    assert banner[0]["class"] == "banner bad"
    assert "1 regression(s), 1 improvement(s), 1 new point(s), 0 point(s) gone" in banner[1]
    (reg,) = Elements(html).find("tr", "regression")
    assert slower["options"] in reg[1] and "latency" in reg[1] and "+25.0 %" in reg[1]
    (imp,) = Elements(html).find("tr", "improvement")
    assert fixed["options"] in imp[1] and "status E10006 → ok" in imp[1]
    assert len(page.find("td", "regressed")) == 1 and len(page.find("td", "improved")) == 1
    assert html.index("baseline-summary") < html.index('<table class="matrix">')    # first thing on the page
    # the same table as its own baseline: nothing changed
    code, _, _ = om_sweep("report", results / "results.parquet", "--baseline", results / "results.parquet",
                          "-o", tmp_path / "same.html")
    assert code == 0 and "0 regression(s), 0 improvement(s), 0 new point(s), 0 point(s) gone" in \
        (tmp_path / "same.html").read_text()


def test_run_writes_the_report_with_a_baseline(results, tmp_path):
    sweep = write_sweep(tmp_path, {"models": [str(MODELS / "small_cnn.onnx")],
                                   "grid": {"soc_version": ["Ascend910B1"]}, "run": {"compute": False}})
    code, stdout, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--baseline", results / "results.parquet")
    assert code == 0, stderr
    html = (tmp_path / "r" / "report.html").read_text()
    assert "1 new point(s), 24 point(s) gone" in html         # other options than the baseline's


def test_report_escapes_what_the_table_holds(results, tmp_path):
    rows, grid_keys = read_results(results / "results.parquet")
    rows[0]["model"] = "<script>alert(1)</script>.onnx"
    rows[0]["error_message"] = '"><img src=x>'
    write_results(tmp_path, rows, grid_keys)
    assert om_sweep("report", tmp_path / "results.parquet", "-o", tmp_path / "x.html")[0] == 0
    html = (tmp_path / "x.html").read_text()
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;.onnx" in html


def test_bad_results_files(tmp_path, results):
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    code, _, stderr = om_sweep("report", tmp_path / "junk.parquet", "-o", tmp_path / "r.html")
    assert code == 1 and stderr.startswith("[ERROR] E40009: Cannot read results file") and "Traceback" not in stderr
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"a": [1]}), tmp_path / "other.parquet")
    code, _, stderr = om_sweep("report", tmp_path / "other.parquet", "-o", tmp_path / "r.html")
    assert code == 1 and "not an om-sweep results table (no column 'model')" in stderr
    code, _, stderr = om_sweep("report", results / "results.parquet", "-o", tmp_path / "nodir" / "r.html")
    assert code == 1 and stderr.startswith("[ERROR] E40010")
    sweep = write_sweep(tmp_path, CNN_ONLY)
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--baseline", tmp_path / "junk.parquet")
    assert code == 1 and "E40009" in stderr and not (tmp_path / "r").exists()     # refused before the sweep
    assert not (tmp_path / "r.html").exists()
