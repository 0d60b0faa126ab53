"""--report FILE: one self-contained HTML page of a serving run (charts as base64 PNGs inside it) to send to
someone or keep beside the device's numbers: the TTFT and TPOT CDFs, the batch (tokens and sequences per step)
and the KV blocks in use over time, the vllm-style summary and the run's settings.

Drawn with matplotlib's Agg canvas on Figure objects (never pyplot, so no global backend or state changes);
PNG metadata off, so the same run gives the same bytes. matplotlib is an optional extra: pip install
'atc-py[report]'."""
from __future__ import annotations

import html
import io
import os
from binascii import b2a_base64
from typing import Sequence

from atc_py.common.atomic_write import write_atomic
from atc_py.common.errors import AtcError

from ..request import RequestRecord, StepRecord

DPI = 100


def require_matplotlib():
    """The Figure and Agg canvas classes, or the error that tells the user how to get them."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise AtcError("E30008", feature="--report (the HTML report)", package="matplotlib", extra="report") from None
    return Figure, FigureCanvasAgg


def png_data(fig, canvas_cls, **savefig) -> str:
    """A figure as a PNG's base64 text (a data: URI's payload), without the metadata that would vary by run."""
    canvas_cls(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None}, **savefig)
    return b2a_base64(buf.getvalue(), newline=False).decode("ascii")


def _cdf(ax, values_ms: Sequence[float], what: str) -> None:
    xs = sorted(values_ms)
    if xs:
        ax.step([xs[0]] + xs, [0.0] + [(k + 1) / len(xs) for k in range(len(xs))], where="post")
    else:
        ax.text(0.5, 0.5, "no samples", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(f"{what} (ms)")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)


def _over_steps(ax, steps: Sequence[StepRecord], values: Sequence[float], label: str) -> None:
    """A value held over each step's span: the last step drawn to its end, not cut at its start."""
    if steps:
        ax.step([s.start_s for s in steps] + [steps[-1].end_s], list(values) + [values[-1]], where="post",
                label=label)


def charts(records: Sequence[RequestRecord], steps: Sequence[StepRecord]) -> dict[str, str]:
    """{title: base64 PNG} for the report's four charts."""
    Figure, Canvas = require_matplotlib()
    ok = [r for r in records if r.success]
    out = {}
    for title, values in (("TTFT CDF", [r.ttft_s * 1000 for r in ok]),
                          ("TPOT CDF", [r.tpot_s * 1000 for r in ok if len(r.token_s) > 1])):
        fig = Figure(figsize=(6.4, 3.6))
        ax = fig.add_subplot()
        _cdf(ax, values, title.split()[0])
        ax.set_title(title)
        fig.tight_layout()
        out[title] = png_data(fig, Canvas)
    fig = Figure(figsize=(9.6, 5.2))
    top, bottom = fig.subplots(2, 1, sharex=True)
    _over_steps(top, steps, [s.num_prefill_tokens for s in steps], "prefill tokens")
    _over_steps(top, steps, [s.num_decode_tokens for s in steps], "decode tokens")
    _over_steps(top, steps, [s.num_prefill_tokens + s.num_decode_tokens for s in steps], "all tokens")
    top.set_ylabel("tokens per step")
    _over_steps(bottom, steps, [s.num_seqs for s in steps], "running")
    _over_steps(bottom, steps, [s.waiting for s in steps], "waiting")
    bottom.set_ylabel("sequences")
    bottom.set_xlabel("time (s)")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
        if steps:
            ax.legend(loc="upper right")
    top.set_title("Batch per engine step")
    fig.tight_layout()
    out["Batch size over time"] = png_data(fig, Canvas)
    fig = Figure(figsize=(9.6, 3.6))
    ax = fig.add_subplot()
    _over_steps(ax, steps, [s.kv_blocks_in_use for s in steps], "in use")
    if steps:
        ax.axhline(max(s.num_blocks for s in steps), color="grey", linestyle="--", label="total")
        ax.legend(loc="upper right")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("KV blocks")
    ax.set_title("KV blocks in use")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    out["KV blocks in use over time"] = png_data(fig, Canvas)
    return out


def _summary_rows(lines: Sequence[str]) -> str:
    rows = []
    for line in lines:
        if line.startswith(("=", "-")):
            if line.strip("=-"):
                rows.append(f'<tr><th colspan="2">{html.escape(line.strip("=- "))}</th></tr>')
        else:
            rows.append(f"<tr><td>{html.escape(line[:40].strip())}</td><td>{html.escape(line[41:].strip())}</td></tr>")
    return "\n".join(rows)


def _settings_rows(run_info: dict) -> str:
    flat = []
    for key, value in run_info.items():
        if isinstance(value, dict):
            flat += [(f"{key}.{k}", v) for k, v in value.items()]
        else:
            flat.append((key, value))
    return "\n".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in flat)


def report_html(records: Sequence[RequestRecord], steps: Sequence[StepRecord], run_info: dict,
                summary: Sequence[str]) -> str:
    """The page: the summary table (vllm's summary lines), the run settings, the charts."""
    title = f"om-run serve: {run_info.get('model_id', '')}"
    figs = "\n".join(f'<h2>{html.escape(name)}</h2>\n<img alt="{html.escape(name)}" '
                     f'src="data:image/png;base64,{data}">' for name, data in charts(records, steps).items())
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: 2px 8px; text-align: left; }}
th {{ background: #eee; }}
img {{ max-width: 100%; }}
</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
<h2>Summary</h2>
<table>
{_summary_rows(summary)}
</table>
<h2>Run settings</h2>
<table>
{_settings_rows(run_info)}
</table>
{figs}
</body>
</html>
"""


def write_report(path: str | os.PathLike, records: Sequence[RequestRecord], steps: Sequence[StepRecord],
                 run_info: dict, summary: Sequence[str]) -> None:
    write_atomic(path, report_html(records, steps, run_info, summary).encode("utf-8"))
