"""The HTML report of a results table: one self-contained page (inline CSS and SVG, no script) with

* what changed against a baseline table first, when one is given (status changes, latency / memory up or
  down per point), so a regression is the first thing on the page;
* the pass/fail matrix: model x option point, each cell `ok` with its latency, or the error code;
* per SoC, latency and planned-memory charts: one group per model, one bar per tiling-sink x precision
  variant (fp16 modes vs fp32 modes), failed variants named by their code;
* for serving points (serve_report.py), per served model a chart of output throughput per NPU against TPOT with
  the SLO-feasible points marked, and a table of the points;
* the failures with their messages, and the whole table.
"""
from __future__ import annotations

import pathlib
from collections import Counter
from html import escape

from atc_py.common.atomic_write import write_atomic, write_in_folder
from atc_py.common.errors import AtcError

from .plan import parse_command_line
from .serve_report import section as serve_section
from .spec import ATB_KEYS, PATH_FLAGS
from .svg import grouped_bars
from .table import SERVE, read_results

FP32_MODES = {"must_keep_origin_dtype", "force_fp32"}
DEFAULT_PRECISION = "force_fp16"       # atc-py's (and ATC's) default
PLOT_FLAGS = ("soc_version", "tiling_schedule_optimize", "precision_mode")
COMPARED = (("e2e_us", "latency", "us"), ("memory_size", "planned memory", "B"), ("tasks", "tasks", ""),
            ("ttft_us", "TTFT", "us"), ("tpot_us", "TPOT", "us"), ("mean_ttft_ms", "mean TTFT", "ms"),
            ("mean_tpot_ms", "mean TPOT", "ms"))                   # up is worse
COMPARED_UP = (("output_throughput_per_npu", "output throughput per NPU", "tok/s"),)      # up is better

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;
vertical-align:top}th{background:#f3f3f3;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.ok{background:#e3f4e1;color:#1e5e1a}td.fail{background:#fbe0de;color:#8c1d13;font-weight:600}
td.regressed{outline:3px solid #d62728;outline-offset:-3px}td.improved{outline:3px solid #2ca02c;outline-offset:-3px}
tr.regression td{background:#fbe0de}tr.improvement td{background:#e3f4e1}
.banner{padding:10px 14px;border-radius:6px;margin:12px 0;font-weight:600}
.banner.bad{background:#fbe0de;color:#8c1d13}.banner.good{background:#e3f4e1;color:#1e5e1a}
.banner.same{background:#eef;color:#224}
.chart{display:block;margin:6px 0 18px}.chart-title{font-weight:600;font-size:13px}.tick,.val,.legend{font-size:11px}
.cat{font-size:12px}.fail{font-size:11px;fill:#8c1d13;font-weight:600}.grid{stroke:#e5e5e5}.axis{stroke:#444}
.marker{stroke:#111;stroke-width:2}.scroll{overflow-x:auto}th.key{color:#555;font-style:italic}
.muted{color:#666}code{font-size:12px}
td.feasible{background:#e3f4e1;color:#1e5e1a;font-weight:600}td.infeasible{background:#fdf0d5;color:#8a5300}
img.serve-chart{display:block;max-width:100%;margin:6px 0 12px}
"""


def _flags(row: dict) -> dict[str, str]:
    return parse_command_line(row["options"])


def _atb(row: dict) -> tuple[tuple[str, str], ...]:
    """The row's ATB settings (grid columns, not in `options`)."""
    return tuple((k, row[k]) for k in ATB_KEYS if row.get(k) is not None)


def precision_label(mode: str) -> str:
    return f"{mode} (fp32)" if mode in FP32_MODES else f"{mode} (fp16)"


def variant(row: dict) -> str:
    f = _flags(row)
    sink = "sink on" if f.get("tiling_schedule_optimize", "0") == "1" else "sink off"
    return f"{sink} · {precision_label(f.get('precision_mode') or DEFAULT_PRECISION)}"


def model_label(row: dict, skip: tuple[str, ...]) -> str:
    """The model and its flags that are not in `skip` (the matrix's columns, or the charts' variants and
    SoC), so two rows with one label are the same point; file flags by their file name."""
    extra = [f"{k}={pathlib.PurePosixPath(v).name if k in PATH_FLAGS else v}"
             for k, v in sorted(_flags(row).items()) if k not in skip and k != "framework"]
    extra += [f"{k}={v}" for k, v in _atb(row) if k not in skip]
    return row["model"] + (f" [{', '.join(extra)}]" if extra else "") + ("" if row["numeric"] else " (timing only)")


def _ident(row: dict) -> tuple:
    return row["model"], row["options"], _atb(row), row["numeric"]


def _num(v, digits: int = 4) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1e6 else f"{v:.0f}"
    return str(v)


def _pct(before, after) -> float | None:
    if before is None or after is None:
        return None
    if before == 0:
        return 0.0 if after == 0 else float("inf")
    return (after - before) / abs(before) * 100.0


class Comparison:
    """Points of the current table against a baseline table, joined on (model, options, ATB settings, numeric)."""

    def __init__(self, rows: list[dict], base_rows: list[dict]):
        base = {_ident(r): r for r in base_rows}
        cur = {_ident(r): r for r in rows}
        self.added = [r for r in rows if _ident(r) not in base]
        self.removed = [r for r in base_rows if _ident(r) not in cur]
        self.changes = []            # (row, base row, kind, [reasons])
        for r in rows:
            b = base.get(_ident(r))
            if b is None:
                continue
            kind, reasons = self.classify(r, b)
            if reasons:
                self.changes.append((r, b, kind, reasons))
        self.by_ident = {_ident(r): kind for r, _, kind, _ in self.changes}

    @staticmethod
    def classify(r: dict, b: dict) -> tuple[str, list[str]]:
        worse, better = [], []
        if r["status"] != b["status"]:
            msg = f"status {b['status']} → {r['status']}"
            (better if r["status"] == "ok" else worse).append(msg)
        elif r["status"] == "ok":
            for col, name, unit in COMPARED:
                p = _pct(b[col], r[col])
                if p is None or abs(p) < 1e-9:
                    continue
                msg = f"{name} {_num(b[col])} → {_num(r[col])} {unit} ({p:+.1f} %)"
                (worse if p > 0 else better).append(msg)
            for col, name, unit in COMPARED_UP:
                p = _pct(b[col], r[col])
                if p is not None and abs(p) >= 1e-9:
                    msg = f"{name} {_num(b[col])} → {_num(r[col])} {unit} ({p:+.1f} %)"
                    (better if p > 0 else worse).append(msg)
            if b["feasible"] is not None and r["feasible"] is not None and b["feasible"] != r["feasible"]:
                (better if r["feasible"] else worse).append("meets its SLOs now" if r["feasible"] else
                                                            "misses its SLOs now")
            if b["max_abs_err"] is not None and r["max_abs_err"] is not None and r["max_abs_err"] > b["max_abs_err"]:
                worse.append(f"max abs error {b['max_abs_err']:.3g} → {r['max_abs_err']:.3g}")
        if worse:
            return "regression", worse + better
        return ("improvement", better) if better else ("same", [])

    def counts(self) -> Counter:
        return Counter(kind for _, _, kind, _ in self.changes)


def _matrix(rows: list[dict], grid_keys: list[str], comparison: Comparison | None) -> str:
    columns: list[tuple] = []
    for r in rows:
        col = tuple(r.get(k) for k in grid_keys)
        if col not in columns:
            columns.append(col)
    labels: list[str] = []
    cells: dict[tuple[str, tuple], dict] = {}
    for r in rows:
        label = model_label(r, tuple(grid_keys))
        if label not in labels:
            labels.append(label)
        cells[(label, tuple(r.get(k) for k in grid_keys))] = r
    out = ['<div class="scroll"><table class="matrix">']
    for depth, key in enumerate(grid_keys or ["point"]):
        out.append(f'<tr><th class="key">{escape(key)}</th>')
        i = 0
        while i < len(columns):
            prefix = columns[i][:depth + 1]
            span = 1
            while i + span < len(columns) and columns[i + span][:depth + 1] == prefix:
                span += 1
            value = columns[i][depth] if grid_keys else "—"
            out.append(f'<th colspan="{span}">{escape(str(value))}</th>')
            i += span
        out.append("</tr>")
    out.append('<tr><th class="key">model</th>' + f'<th colspan="{len(columns)}"></th></tr>')
    for label in labels:
        out.append(f"<tr><th>{escape(label)}</th>")
        for col in columns:
            r = cells.get((label, col))
            if r is None:
                out.append('<td class="muted">–</td>')
                continue
            mark = comparison.by_ident.get(_ident(r), "") if comparison else ""
            cls = {"regression": " regressed", "improvement": " improved"}.get(mark, "")
            arrow = {"regression": " ▲", "improvement": " ▼"}.get(mark, "")
            if r["status"] == "ok":
                lat = f" {_num(r['e2e_us'])} us" if r["e2e_us"] is not None else ""
                lat += f", {_num(r['tokens_per_s'])} tokens/s" if r.get("tokens_per_s") is not None else ""
                out.append(f'<td class="ok{cls}" title="{escape(r["options"])}">ok{lat}{arrow}</td>')
            else:
                out.append(f'<td class="fail{cls}" title="{escape(r["error_message"] or "")}">'
                           f'{escape(r["status"])}{arrow}</td>')
        out.append("</tr>")
    out.append("</table></div>")
    return "\n".join(out)


def _charts(rows: list[dict], grid_keys: list[str]) -> str:
    socs = sorted({_flags(r).get("soc_version", "?") for r in rows})
    out = []
    for soc in socs:
        mine = [r for r in rows if _flags(r).get("soc_version", "?") == soc]
        cats: list[str] = []
        series: list[str] = []
        lat, mem, low, failed = {}, {}, {}, {}
        for r in mine:
            cat = model_label(r, PLOT_FLAGS)
            var = variant(r)
            cats.append(cat) if cat not in cats else None
            series.append(var) if var not in series else None
            key = (cat, var)
            if r["status"] == "ok":
                lat[key] = r["e2e_us"]
            else:
                failed[key] = r["status"]
            if r["memory_size"] is not None:
                mem[key] = r["memory_size"]
                low[key] = r["memory_lower_bound"]
        series.sort()
        out.append(f"<h3>{escape(soc)}</h3>")
        out.append(grouped_bars(f"{soc}: simulated end-to-end latency", "us", cats, series, lat, failed))
        out.append(grouped_bars(f"{soc}: planned feature-map memory", "bytes", cats, series, mem,
                                {k: v for k, v in failed.items() if k not in mem}, low, "lower bound"))
    return "\n".join(out)


def _changes(comparison: Comparison, baseline: str) -> str:
    n = comparison.counts()
    reg, imp = n.get("regression", 0), n.get("improvement", 0)
    cls = "bad" if reg else ("good" if imp else "same")
    parts = [f'<div class="banner {cls}" id="baseline-summary">vs baseline {escape(baseline)}: {reg} regression(s), '
             f"{imp} improvement(s), {len(comparison.added)} new point(s), {len(comparison.removed)} point(s) gone"
             "</div>"]
    if comparison.changes:
        parts.append('<table class="changes"><tr><th>change</th><th>model</th><th>options</th><th>what</th></tr>')
        order = {"regression": 0, "improvement": 1}
        for r, _, kind, reasons in sorted(comparison.changes, key=lambda c: (order[c[2]], _ident(c[0]))):
            parts.append(f'<tr class="{kind}"><td>{kind}</td><td>{escape(r["model"])}</td>'
                         f'<td><code>{escape(r["options"])}</code></td><td>{escape("; ".join(reasons))}</td></tr>')
        parts.append("</table>")
    for title, group in (("New points", comparison.added), ("Points gone", comparison.removed)):
        if group:
            parts.append(f"<h3>{title}</h3><ul>" + "".join(
                f"<li>{escape(r['model'])} <code>{escape(r['options'])}</code> ({escape(r['status'])})</li>"
                for r in group) + "</ul>")
    return "\n".join(parts)


def _failures(rows: list[dict]) -> str:
    bad = [r for r in rows if r["status"] != "ok"]
    if not bad:
        return "<p>Every point compiled and ran.</p>"
    out = ['<table class="failures"><tr><th>model</th><th>options</th><th>status</th><th>message</th></tr>']
    for r in bad:
        out.append(f'<tr><td>{escape(r["model"])}</td><td><code>{escape(r["options"])}</code></td>'
                   f'<td class="fail">{escape(r["status"])}</td><td>{escape(r["error_message"] or "")}</td></tr>')
    out.append("</table>")
    return "\n".join(out)


def _cell(value) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<td class="num">{escape(_num(value))}</td>'
    return f"<td>{escape(str(value) if value is not None else '')}</td>"


def _all_rows(rows: list[dict]) -> str:
    if not rows:
        return ""
    cols = [c for c in rows[0] if c not in ("key", "error_message")]
    out = [f"<details><summary>All {len(rows)} rows</summary><table class='results'><tr>"
           + "".join(f"<th>{escape(c)}</th>" for c in cols) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(_cell(r[c]) for c in cols) + "</tr>")
    out.append("</table></details>")
    return "\n".join(out)


def render(rows: list[dict], grid_keys: list[str], source: str, base_rows: list[dict] | None = None,
           baseline: str = "") -> str:
    counts = Counter(r["status"] for r in rows)
    versions = sorted({r["tool_version"] for r in rows if r["tool_version"]})
    failed = ", ".join(f"{escape(k)} ×{n}" for k, n in sorted(counts.items()) if k != "ok")
    comparison = Comparison(rows, base_rows) if base_rows is not None else None
    body = ["<h1>om-sweep report</h1>",
            f'<p class="muted">{escape(source)} · {len(rows)} points · ok {counts.get("ok", 0)} · failed '
            f'{len(rows) - counts.get("ok", 0)}{" (" + failed + ")" if failed else ""} · grid: '
            f'{escape(", ".join(grid_keys) or "none")} · tools {escape(", ".join(versions))}</p>']
    if comparison is not None:
        body += ["<h2>Changes against the baseline</h2>", _changes(comparison, baseline)]
    builds = [r for r in rows if r["kind"] != SERVE]
    served = [r for r in rows if r["kind"] == SERVE]
    if builds or not served:
        keys = [k for k in grid_keys if any(r.get(k) is not None for r in builds)]
        body += ["<h2>Pass/fail matrix</h2>",
                 '<p class="muted">ok with the simulated end-to-end latency, or the error code (hover for the message)'
                 + ("; ▲ regressed, ▼ improved against the baseline" if comparison else "") + ".</p>",
                 _matrix(builds, keys, comparison),
                 "<h2>Latency and memory per SoC</h2>",
                 '<p class="muted">Bars per model: tiling sink on/off × precision mode (fp16 or fp32 compute). '
                 "Memory is the planned feature map; the black tick is its lower bound.</p>",
                 _charts(builds, keys)]
    if served:
        body += ['<h2 id="serving">Serving: throughput against TPOT</h2>', serve_section(served, grid_keys)]
    body += ["<h2>Failures</h2>", _failures(rows),
             "<h2>Results</h2>", _all_rows(rows)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>om-sweep report</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def write_report(results, out, baseline=None, in_output_folder: bool = False) -> None:
    """in_output_folder: `om-sweep run` names the file in its own folder, so a symlink there is replaced;
    a path the user gives (`om-sweep report -o`) is written as atc-py writes its outputs (a link is followed)."""
    rows, grid_keys = read_results(results)
    base_rows = read_results(baseline)[0] if baseline else None
    html = render(rows, grid_keys, str(results), base_rows, str(baseline or ""))
    out = pathlib.Path(out)
    if not out.parent.is_dir():
        raise AtcError("E40010", path=str(out), reason="the folder does not exist")
    try:
        (write_in_folder if in_output_folder else write_atomic)(out, html.encode("utf-8"))
    except OSError as exc:
        raise AtcError("E40010", path=str(out), reason=exc.strerror or str(exc)) from None
