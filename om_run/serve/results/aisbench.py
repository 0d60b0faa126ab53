"""--aisbench-output DIR: the two performance files AISBench's default_perf summarizer writes, laid out as AISBench
lays them out, so a simulated run diffs against `ais_bench --mode perf` output from the device.

Source: AISBench/benchmark master 29c363e (tag v3.1-20260820-master): summarizers/default_perf.py
(_calc_perf_data: the per-request numbers from each request's time points; _dump_calculated_perf_data: the
paths), calculators/base_perf_metric_calculator.py (statistics, units, CSV layout, common metrics) and
default_perf_metric_calculator.py (the single "total" stage). Matched:

* Files: <DIR>/performances/<model abbr>/<dataset abbr>.csv (per-request metrics) and .json (common metrics).
* CSV: csv.writer rows (CRLF), header "Performance Parameters, Stage, Average, Min, Max, Median, P75, P90, P99,
  N"; rows E2EL, TTFT, TPOT, ITL, InputTokens, OutputTokens, OutputTokenThroughput, PrefillTokenThroughput in
  that order, Stage "total". Each statistic is round(x, 4) of the raw sample (seconds for latencies), a latency
  then round(x * 1000, 4) with " ms", a throughput " token/s", token counts bare; Median is the 50th
  percentile; N counts successful requests (for TPOT and ITL those with a nonzero gap). ITL is left out when
  empty, TTFT / TPOT (and PrefillTokenThroughput with TTFT) when they sum to 0.
* Per request: E2EL = last time point - send, TTFT = first token - send, TPOT = (E2EL - TTFT) / (tokens - 1),
  ITL = the gaps between token times, OutputTokenThroughput = tokens / E2EL, PrefillTokenThroughput =
  prompt tokens / TTFT. Only successful requests are sampled.
* JSON (indent 4): {"Benchmark Duration": {"total": "<ms> ms"}, "Total Requests", "Failed Requests",
  "Success Requests", "Concurrency" (sum of E2EL / duration), "Max Concurrency", "Request Throughput" (req/s),
  "Total Input Tokens", "Total Generated Tokens", "Input / Output / Total Token Throughput" (token/s)}; the
  duration runs from the earliest successful send to the latest successful end.

Not matched: AISBench's <dataset>_details.jsonl / db_data (its raw per-request store) and the *_plot.html
pages. "Max Concurrency" is AISBench's configured batch_size; a run without --max-concurrency reports its
number of requests. On the device AISBench records a time point per streamed chunk, including a trailing
usage-only chunk if the server sends one; the simulation has one point per token.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import pathlib
import re
from typing import Sequence

import numpy as np

from atc_py.common.atomic_write import make_output_dir, safe_stem, write_in_folder
from atc_py.common.errors import AtcError

from ..request import RequestRecord

DEFAULT_STATS = ("Average", "Min", "Max", "Median", "P75", "P90", "P99")
_PERCENT = re.compile(r"^P(0*[1-9]\d?)$")       # P1 .. P99, as AISBench accepts them
MS_METRICS = ("E2EL", "TTFT", "TPOT", "ITL")
TOKEN_RATE_METRICS = ("OutputTokenThroughput", "PrefillTokenThroughput")
STAGE = "total"


def check_stats(stats: Sequence[str]) -> tuple[str, ...]:
    """AISBench's stats_list: Average, Min, Max, Median or P1..P99, at most eight."""
    bad = [s for s in stats if s not in ("Average", "Min", "Max", "Median") and not _PERCENT.match(s)]
    if bad or not stats or len(stats) > 8:
        raise AtcError("E10001", value=repr(list(stats)), parameter="AISBench stats",
                       reason="give 1 to 8 of Average, Min, Max, Median, P1..P99")
    return tuple(stats)


def _statistics(samples: list, stats: Sequence[str]) -> dict:
    out = {k: 0 for k in stats}
    if not samples:
        return out
    arr = np.asarray(samples, dtype=float)
    for k in stats:
        if k == "Average":
            v = arr.mean()
        elif k == "Min":
            v = arr.min()
        elif k == "Max":
            v = arr.max()
        else:
            v = np.percentile(arr, 50 if k == "Median" else int(k[1:]))
        out[k] = round(float(v), 4)
    return out


def _samples(ok: Sequence[RequestRecord]) -> dict[str, list]:
    """The per-request samples of convert_result, in its order; ITL as one list per request."""
    e2el = [r.e2el_s for r in ok]
    ttft = [r.ttft_s for r in ok]
    tokens = [len(r.token_s) for r in ok]
    out = {
        "E2EL": e2el,
        "TTFT": ttft,
        "TPOT": [(e - t) / (n - 1) if n > 1 else 0 for e, t, n in zip(e2el, ttft, tokens)],
        "ITL": [r.itl_s for r in ok],
        "InputTokens": [r.prompt_len for r in ok],
        "OutputTokens": tokens,
        "OutputTokenThroughput": [n / e if e else 0.0 for n, e in zip(tokens, e2el)],
        "PrefillTokenThroughput": [r.prompt_len / t if t > 0 else 0.0 for r, t in zip(ok, ttft)],
    }
    return out


def per_request_metrics(records: Sequence[RequestRecord], stats: Sequence[str] = DEFAULT_STATS) -> dict[str, dict]:
    """{metric: {stat: value with its unit, ..., "N": count}} for the rows of the CSV (stage "total")."""
    ok = [r for r in records if r.success]
    samples = _samples(ok)
    itl_per_request = samples["ITL"]
    pooled = [g for gaps in itl_per_request for g in gaps]
    samples["ITL"] = pooled
    if not pooled or not any(next((g for g in itl_per_request if g), [])):
        samples.pop("ITL")
    for key in ("TTFT", "TPOT"):
        if math.isclose(sum(samples[key]), 0):
            samples.pop(key)
            if key == "TTFT":
                samples.pop("PrefillTokenThroughput")
    decode_count = sum(1 for gaps in itl_per_request if any(gaps))
    table = {}
    for metric, values in samples.items():
        row: dict = _statistics(values, stats)
        if metric in MS_METRICS:
            row = {k: f"{round(v * 1000, 4)} ms" for k, v in row.items()}
        elif metric in TOKEN_RATE_METRICS:
            row = {k: f"{v} token/s" for k, v in row.items()}
        row["N"] = decode_count if metric in ("TPOT", "ITL") else len(ok)
        table[metric] = row
    return table


def common_metrics(records: Sequence[RequestRecord], max_concurrency: int | None = None) -> dict[str, dict]:
    """The "Common Metric" table: {name: {"total": value with its unit}}."""
    ok = [r for r in records if r.success]
    duration = max(r.token_s[-1] for r in ok) - min(r.arrival_s for r in ok)
    e2el = sum(r.e2el_s for r in ok)
    total_in = sum(r.prompt_len for r in ok)
    total_out = sum(len(r.token_s) for r in ok)
    out: dict[str, dict] = {
        "Benchmark Duration": {STAGE: f"{round(duration * 1000, 4)} ms"},
        "Total Requests": {STAGE: len(records)},
        "Failed Requests": {STAGE: len(records) - len(ok)},
        "Success Requests": {STAGE: len(ok)},
        "Concurrency": {STAGE: round(e2el / duration, 4) if duration > 0 else 0},
        "Max Concurrency": {STAGE: max_concurrency if max_concurrency is not None else len(records)},
        "Request Throughput": {STAGE: f"{round(len(ok) / duration, 4) if duration > 0 else 0} req/s"},
        "Total Input Tokens": {STAGE: total_in},
        "Total Generated Tokens": {STAGE: total_out},
        "Input Token Throughput": {},
        "Output Token Throughput": {},
        "Total Token Throughput": {},
    }
    if duration > 0:
        for name, n in (("Input Token Throughput", total_in), ("Output Token Throughput", total_out),
                        ("Total Token Throughput", total_in + total_out)):
            out[name][STAGE] = f"{round(n / duration, 4)} token/s"
    return out


def metrics_csv(table: dict[str, dict]) -> str:
    """AISBench's _export_to_csv: the header from the first row's keys, one line per metric and stage."""
    buf = io.StringIO()
    w = csv.writer(buf)
    headers = list(next(iter(table.values())).keys())
    w.writerow(["Performance Parameters", "Stage"] + headers)
    for metric, row in table.items():
        w.writerow([metric, STAGE] + [row.get(k, "") for k in headers])
    return buf.getvalue()


def write_aisbench(directory: str | os.PathLike, records: Sequence[RequestRecord], run_info: dict,
                   stats: Sequence[str] = DEFAULT_STATS) -> list[pathlib.Path]:
    """Write <dir>/performances/<model abbr>/<dataset abbr>.csv and .json. run_info's "aisbench_model_abbr" and
    "aisbench_dataset_abbr" name them (default: the model id's last part and the dataset's name)."""
    stats = check_stats(stats)
    if not any(r.success for r in records):
        raise AtcError("E30002", reason="AISBench output: all requests failed, so there are no performance "
                                        "results to write (AISBench stops the same way)")
    model = run_info.get("aisbench_model_abbr") or safe_stem(str(run_info.get("model_id", "model")).split("/")[-1])
    dataset = run_info.get("aisbench_dataset_abbr") or safe_stem(str(run_info.get("dataset") or "dataset"))
    folder = make_output_dir(pathlib.Path(directory) / "performances" / safe_stem(model), "AISBench output")
    files = [(folder / f"{safe_stem(dataset)}.csv", metrics_csv(per_request_metrics(records, stats))),
             (folder / f"{safe_stem(dataset)}.json",
              json.dumps(common_metrics(records, run_info.get("max_concurrency")), indent=4, ensure_ascii=False))]
    for path, text in files:
        write_in_folder(path, text.encode("utf-8"))
    return [p for p, _ in files]
