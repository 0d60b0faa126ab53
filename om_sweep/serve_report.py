"""The report's serving section: per served model, output throughput per NPU against mean and SLO-percentile TPOT
(one series per combination of the varied settings, its points joined along the request rate, filled where the
point meets its SLOs, hollow where it misses them), and a table of the points with their feasible marks.

The chart is matplotlib's (Figure and the Agg canvas, never pyplot: no global state), a PNG inside the page; the
rest of the report draws its SVG by hand (svg.py), but a scatter with two axes and markers is matplotlib's job.
Without matplotlib (the `report` extra) the page says so where the chart would be, and the table stays.
"""
from __future__ import annotations

import math
from html import escape

from om_run.serve.results.report_html import png_data

from .plan import parse_command_line
from .serve_spec import LOAD_KEYS, SERVE_GRID_KEYS

LOAD_FLAGS = ("request-rate", "max-concurrency")      # the load offered: points along a series, not series
COLUMNS = (("request_rate", "req/s", "rate"), ("output_throughput_per_npu", "output tok/s per NPU", "num"),
           ("request_throughput", "req/s done", "num"), ("mean_ttft_ms", "mean TTFT ms", "num"),
           ("pct_ttft_ms", "p{p} TTFT ms", "num"), ("mean_tpot_ms", "mean TPOT ms", "num"),
           ("pct_tpot_ms", "p{p} TPOT ms", "num"), ("p99_itl_ms", "p99 ITL ms", "num"),
           ("completed", "completed", "num"), ("failed", "failed", "num"))


def _rate(row: dict) -> float:
    text = parse_command_line(row["options"]).get("request-rate") or "inf"
    return float(text)


def _percentile(rows: list[dict]) -> str:
    pcts = {r["slo_percentile"] for r in rows if r["slo_percentile"] is not None}
    return f"{pcts.pop():g}" if len(pcts) == 1 else "SLO-percentile"


def series_of(rows: list[dict], grid_keys: list[str]) -> dict[str, list[dict]]:
    """Rows grouped by everything but the load (their command line without --request-rate / --max-concurrency),
    each group named by the grid values that tell it from the others, its rows in rising request rate."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        rest = {k: v for k, v in parse_command_line(r["options"]).items() if k not in LOAD_FLAGS}
        groups.setdefault(repr(sorted(rest.items())), []).append(r)
    varied = [k for k in grid_keys if k in SERVE_GRID_KEYS and k not in LOAD_KEYS
              and len({r.get(k) for r in rows}) > 1]
    out: dict[str, list[dict]] = {}
    for n, members in enumerate(groups.values()):
        label = ", ".join(f"{k}={members[0].get(k)}" for k in varied if members[0].get(k) is not None) or "all points"
        if label in out:                  # the entries differ in what the grid does not vary (workload, SLOs)
            label = f"{label} #{n + 1}"
        out[label] = sorted(members, key=_rate)
    return out


def common_slo(rows: list[dict], metric: str) -> float | None:
    """The bound every point has on `metric` (ms), if they share one: drawn as a line."""
    bounds = set()
    for r in rows:
        slos = dict(pair.split(":") for pair in (r["slos"] or "").split())
        bounds.add(float(slos[metric]) if metric in slos else None)
    return bounds.pop() if len(bounds) == 1 else None


def chart_png(title: str, series: dict[str, list[dict]], pct: str, tpot_slo: float | None = None) -> str | None:
    """Base64 PNG of the chart, or None without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
    except ImportError:
        return None
    fig = Figure(figsize=(9, 4.2))
    axes = fig.subplots(1, 2, sharey=True)
    colors = [f"C{i % 10}" if len(series) <= 10 else _tab20(i) for i in range(len(series))]
    for (label, rows), color in zip(series.items(), colors):
        ok = [r for r in rows if r["status"] == "ok" and r["output_throughput_per_npu"] is not None]
        for ax, col in zip(axes, ("mean_tpot_ms", "pct_tpot_ms")):
            xs, ys = [r[col] for r in ok], [r["output_throughput_per_npu"] for r in ok]
            ax.plot(xs, ys, "-", color=color, lw=1, alpha=0.5)
            for r, x, y in zip(ok, xs, ys):
                ax.plot([x], [y], "o", ms=7, color=color, mfc=color if r["feasible"] else "none", mew=1.5)
    for ax, what in zip(axes, ("mean TPOT (ms)", f"p{pct} TPOT (ms)")):
        ax.set_xlabel(what)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("output tokens/s per NPU")
    handles = [Line2D([], [], color=c, marker="o", lw=1, label=label + ("" if any(r["status"] == "ok" for r in rows)
                                                                          else " (every point failed)"))
               for (label, rows), c in zip(series.items(), colors)]
    if tpot_slo is not None:
        axes[1].axvline(tpot_slo, ls="--", color="0.4", lw=1)
        handles.append(Line2D([], [], ls="--", color="0.4", lw=1, label=f"TPOT SLO {tpot_slo:g} ms"))
    handles += [Line2D([], [], color="0.3", marker="o", ls="", label="filled: meets the SLOs"),
                Line2D([], [], color="0.3", marker="o", ls="", mfc="none", label="hollow: misses them")]
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 0.9), fontsize=8, frameon=False)
    # the legend beside the axes, however long its labels: the PNG grows to hold it
    return png_data(fig, FigureCanvasAgg, bbox_inches="tight")


def _tab20(i: int):
    from matplotlib import colormaps
    return colormaps["tab20"](i % 20)


def _num(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "inf" if math.isinf(v) else f"{v:.4g}" if abs(v) < 1e6 else f"{v:.0f}"
    return str(v)


def _mark(r: dict) -> str:
    if r["status"] != "ok" or r["feasible"] is None:
        return '<td class="muted">–</td>'
    if r["feasible"]:
        return '<td class="feasible" title="meets every SLO, no failed request">✔ yes</td>'
    return '<td class="infeasible" title="misses an SLO, or a request failed">✘ no</td>'


def points_table(rows: list[dict], series: dict[str, list[dict]], pct: str) -> str:
    head = "".join(f"<th>{escape(name.format(p=pct))}</th>" for _, name, _ in COLUMNS)
    out = ['<div class="scroll"><table class="serve-points"><tr><th>series</th><th>status</th>'
           f"{head}<th>SLOs</th><th>feasible</th></tr>"]
    for label, members in series.items():
        for r in members:
            cells = []
            for col, _, kind in COLUMNS:
                value = _rate(r) if kind == "rate" else r[col]
                cells.append(f'<td class="num">{escape(_num(value))}</td>')
            status = "ok" if r["status"] == "ok" else "fail"
            out.append(f'<tr><td>{escape(label)}</td><td class="{status}" title="{escape(r["error_message"] or "")}">'
                       f'{escape(r["status"])}</td>{"".join(cells)}<td>{escape(r["slos"] or "none")}</td>'
                       f"{_mark(r)}</tr>")
    out.append("</table></div>")
    return "\n".join(out)


def section(rows: list[dict], grid_keys: list[str]) -> str:
    """The HTML of the serving section: per model its chart and its table."""
    out = ['<p class="muted">Output tokens/s per NPU against mean and percentile TPOT; one series per combination '
           "of the varied settings, its points in rising request rate. Filled: the point meets its SLOs (each SLO "
           "metric's percentile within its bound, no failed request); hollow: it misses them. Failed points are in "
           "the table only.</p>"]
    models = list(dict.fromkeys(r["model"] for r in rows))
    for model in models:
        mine = [r for r in rows if r["model"] == model]
        series = series_of(mine, grid_keys)
        pct = _percentile(mine)
        out.append(f"<h3>{escape(model)}</h3>")
        png = chart_png(f"{model}: throughput against TPOT", series, pct, common_slo(mine, "tpot"))
        if png is None:
            out.append('<p class="muted">No chart: matplotlib is not installed (pip install \'atc-py[report]\').</p>')
        else:
            out.append(f'<img class="serve-chart" alt="{escape(model)}: output tokens/s per NPU against TPOT" '
                       f'src="data:image/png;base64,{png}">')
        out.append(points_table(mine, series, pct))
    return "\n".join(out)
