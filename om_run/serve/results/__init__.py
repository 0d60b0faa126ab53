"""The result writers of om-run serve: what a serving run reports, in the formats LLM deployers already hold from
their devices, so they can be set side by side or diffed.

* metrics.py: vllm bench serve's numbers (calculate_metrics, --goodput, --percentile-metrics, --metric-percentiles)
* summary.py: the "Serving Benchmark Result" block vllm prints
* vllm_json.py: --save-result's JSON file (its keys, units and default file name)
* aisbench.py: AISBench's performances/<model>/<dataset>.csv and .json
* tables.py: per-request and per-step CSV tables
* trace.py: a Chrome / Perfetto trace of steps, KV cache, queue and requests
* report_html.py: one self-contained HTML page with charts (matplotlib, the optional [report] extra)

write_results() runs the ones a ResultFlags asks for; each module's functions can be used alone too.

run_info keys (all optional): model_id, backend (vllm's --backend; default "openai"), label, tokenizer_id,
num_prompts, dataset, request_rate (req/s, inf = all at once), burstiness, max_concurrency, duration (s, from the
start to the last request's end; else taken from the records), date ("%Y%m%d-%H%M%S"; else now), engine,
settings (a dict shown in the report), aisbench_model_abbr, aisbench_dataset_abbr.
"""
from __future__ import annotations

import math
import os
import pathlib
from dataclasses import dataclass, field
from typing import Sequence

from atc_py.common.atomic_write import write_atomic

from ..request import RequestRecord, StepRecord
from .metrics import Selection, ServeMetrics, benchmark_duration, calculate_metrics
from .summary import failure_lines, summary_lines

__all__ = ["ResultFlags", "Results", "compute", "write_results"]


@dataclass(frozen=True)
class ResultFlags:
    """The command line's result flags, as vllm bench serve spells them where it has them; a path of None means
    that file is not written."""
    save_result: bool = False
    result_filename: str | None = None
    result_dir: str | os.PathLike | None = None
    save_detailed: bool = False
    append_result: bool = False
    metadata: tuple[str, ...] = ()
    percentile_metrics: str | None = None
    metric_percentiles: str | None = None
    goodput: tuple[str, ...] = ()
    aisbench_output: str | os.PathLike | None = None
    requests_csv: str | os.PathLike | None = None
    steps_csv: str | os.PathLike | None = None
    trace: str | os.PathLike | None = None
    report: str | os.PathLike | None = None

    def check(self) -> Selection:
        """Every flag's value checked before the run (or any file) starts; the metric selection they make."""
        from .report_html import require_matplotlib
        from .vllm_json import parse_metadata
        parse_metadata(self.metadata)
        if self.report is not None:
            require_matplotlib()
        return Selection.parse(self.percentile_metrics, self.metric_percentiles, self.goodput)


@dataclass
class Results:
    """What a run reports: to print, `failures` (vllm's capped error list, empty when none failed) then `summary`."""
    metrics: ServeMetrics
    summary: list[str]                                   # vllm's printed block, one line each
    failures: list[str] = field(default_factory=list)
    files: list[pathlib.Path] = field(default_factory=list)


def compute(records: Sequence[RequestRecord], run_info: dict, selection: Selection | None = None) -> Results:
    """The metrics and summary block of a run, nothing written."""
    rate = float(run_info.get("request_rate", math.inf))
    mc = run_info.get("max_concurrency")
    duration = run_info.get("duration")
    m = calculate_metrics(records, benchmark_duration(records) if duration is None else float(duration),
                          selection, mc, rate)
    return Results(m, summary_lines(m, mc, rate), failure_lines(records))


def write_results(records: Sequence[RequestRecord], steps: Sequence[StepRecord], run_info: dict,
                  flags: ResultFlags = ResultFlags()) -> Results:
    """Compute the metrics and write every file `flags` asks for; Results.files lists them in writing order."""
    from . import aisbench, report_html, tables, trace, vllm_json
    res = compute(records, run_info, flags.check())
    if flags.save_result or flags.append_result:
        date = vllm_json.run_date(run_info)
        body = vllm_json.result_json(records, res.metrics, {**run_info, "date": date}, flags.metadata,
                                     flags.save_detailed)
        path = vllm_json.result_path(run_info, date, flags.result_filename, flags.result_dir)
        res.files.append(vllm_json.write_result(path, body, flags.append_result))
    if flags.aisbench_output is not None:
        res.files += aisbench.write_aisbench(flags.aisbench_output, records, run_info)
    for path, text in ((flags.requests_csv, lambda: tables.requests_csv(records)),
                       (flags.steps_csv, lambda: tables.steps_csv(steps))):
        if path is not None:
            write_atomic(path, text().encode("utf-8"))
            res.files.append(pathlib.Path(path))
    if flags.trace is not None:
        trace.write_trace(flags.trace, records, steps)
        res.files.append(pathlib.Path(flags.trace))
    if flags.report is not None:
        report_html.write_report(flags.report, records, steps, run_info, res.summary)
        res.files.append(pathlib.Path(flags.report))
    return res
