"""The numbers vllm bench serve reports, computed from the simulated requests the way vllm computes them, so that
a deployer can set them beside a real run on the device.

Source: vllm-project/vllm, vllm/benchmarks/serve.py on main at 009e6d4a (mid-2026, after PR #49611 added probe
requests): calculate_metrics, check_goodput_args / parse_goodput, process_one_metric and the --percentile-metrics /
--metric-percentiles / --goodput flags. What it does, and so what this does:

* Only successful requests count: completed, total_input, the TTFT / TPOT / ITL / E2EL samples; a failed one
  adds 0 to the output lengths and 1 to `failed`.
* TPOT of a request = (E2EL - TTFT) / (output tokens - 1), only for outputs of more than one token; goodput
  counts a single-token output's TPOT as 0. ITL pools every inter-token gap of every request.
* mean / median / std (population) / percentiles are numpy's over the samples in seconds, times 1000; an empty
  sample list gives 0 (vllm's `values or 0`).
* Throughputs divide by the benchmark duration: from the benchmark's start (t = 0, before the first request
  is sent: with a finite rate the first one waits its own gamma-drawn delay) to the last request's end.
* Peak output tokens/s: tokens bucketed by whole seconds since the earliest successful send; peak concurrent
  requests: a sweep over the successful requests' [send, end) intervals.
* With --max-concurrency the client's own queueing (RequestRecord.queued_s) gives client_queue_time and, with a
  finite rate, e2el_including_client_queue; they are reported only when named in --percentile-metrics.

Two checks are stricter than vllm's: an unknown --percentile-metrics name (vllm ignores it silently) and a
percentile outside (0, 100] (numpy would raise, or take 0 as the minimum) are errors here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from atc_py.common.errors import AtcError

from ..request import RequestRecord

PERCENTILE_METRICS = ("ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue")
DEFAULT_PERCENTILE_METRICS = "ttft,tpot,itl"
DEFAULT_METRIC_PERCENTILES = "99"
GOODPUT_METRICS = ("ttft", "tpot", "e2el")
MS = 1000


def _bad(flag: str, value: object, reason: str) -> AtcError:
    return AtcError("E10001", value=repr(value), parameter=flag, reason=reason)


def parse_percentile_metrics(text: str | None) -> tuple[str, ...]:
    """--percentile-metrics: comma-separated names; None or empty gives vllm's default for generative models."""
    names = tuple((text or DEFAULT_PERCENTILE_METRICS).split(","))
    for name in names:
        if name not in PERCENTILE_METRICS:
            raise _bad("--percentile-metrics", text, f"unknown metric {name!r}; allowed: {', '.join(PERCENTILE_METRICS)}")
    return names


def parse_metric_percentiles(text: str | None) -> tuple[float, ...]:
    """--metric-percentiles: comma-separated numbers such as "25,50,99", each in (0, 100]."""
    text = DEFAULT_METRIC_PERCENTILES if text is None else text
    values = []
    for item in text.split(","):
        try:
            p = float(item)
        except ValueError:
            raise _bad("--metric-percentiles", text, f"{item!r} is not a number") from None
        if not 0 < p <= 100:
            raise _bad("--metric-percentiles", text, f"percentile {item.strip()} is outside (0, 100]")
        values.append(p)
    return tuple(values)


def parse_goodput(pairs: Iterable[str] | str | None) -> dict[str, float]:
    """--goodput ttft:MS tpot:MS e2el:MS (vllm's nargs="+"; one space-separated string works too): each pair
    splits on ':' into exactly a name and a float; the name must be a goodput metric, the value not negative."""
    if not pairs:
        return {}
    if isinstance(pairs, str):
        pairs = pairs.split()
    slos: dict[str, float] = {}
    for pair in pairs:
        try:
            name, value = pair.split(":")
            slos[name] = float(value)
        except ValueError:
            raise _bad("--goodput", pair, 'service level objectives are "KEY:VALUE" pairs, where the key is a '
                       "metric name and the value a number in milliseconds") from None
    for name, value in slos.items():
        if name not in GOODPUT_METRICS:
            raise _bad("--goodput", f"{name}:{value}", f"the service level objective name must be one of "
                       f"{list(GOODPUT_METRICS)}")
        if value < 0:
            raise _bad("--goodput", f"{name}:{value}", "the service level objective value must be non-negative")
    return slos


def percentile_word(p: float) -> str:
    """How vllm names a percentile in keys and labels: 99 -> "99", 99.9 -> "99.9"."""
    return str(int(p)) if int(p) == p else str(p)


@dataclass(frozen=True)
class Selection:
    """What to report: the metrics with percentile lines, the percentiles, and the goodput SLOs in ms."""
    metrics: tuple[str, ...] = ("ttft", "tpot", "itl")
    percentiles: tuple[float, ...] = (99.0,)
    goodput: dict[str, float] = field(default_factory=dict)

    @classmethod
    def parse(cls, percentile_metrics: str | None = None, metric_percentiles: str | None = None,
              goodput: Iterable[str] | str | None = None) -> "Selection":
        return cls(parse_percentile_metrics(percentile_metrics), parse_metric_percentiles(metric_percentiles),
                   parse_goodput(goodput))


@dataclass(frozen=True)
class Stats:
    """One metric's summary in milliseconds; percentiles as (p, value) in the order asked."""
    mean_ms: float
    median_ms: float
    std_ms: float
    percentiles_ms: tuple[tuple[float, float], ...]


def stats_ms(values_s: Sequence[float], percentiles: Sequence[float]) -> Stats:
    """numpy's mean / median / std / percentile of samples in seconds, in ms; no samples gives zeros."""
    v = list(values_s) or 0
    return Stats(float(np.mean(v) * MS), float(np.median(v) * MS), float(np.std(v) * MS),
                 tuple((p, float(np.percentile(v, p) * MS)) for p in percentiles))


@dataclass
class ServeMetrics:
    """vllm's BenchmarkMetrics for a simulated run; `stats` holds every metric that applies (ttft, tpot, itl,
    e2el always; the client-queue ones with --max-concurrency), the writers show those `selection` names."""
    completed: int
    failed: int
    total_input: int
    total_output: int
    duration_s: float
    request_throughput: float
    request_goodput: float | None
    output_throughput: float
    total_token_throughput: float
    max_output_tokens_per_s: float
    max_concurrent_requests: int
    output_lens: list[int]
    stats: dict[str, Stats]
    selection: Selection


def benchmark_duration(records: Sequence[RequestRecord]) -> float:
    """From the start (t = 0) to the end of the last request, failed ones included (vllm waits for them all)."""
    return max((r.token_s[-1] if r.token_s else r.arrival_s for r in records), default=0.0)


def _token_times(r: RequestRecord) -> list[float]:
    """The token times as vllm rebuilds them: start + TTFT, then each ITL added on."""
    t = r.arrival_s + r.ttft_s
    times = [t]
    for gap in r.itl_s:
        t += gap
        times.append(t)
    return times


def _peaks(ok: Sequence[RequestRecord]) -> tuple[float, int]:
    """Peak output tokens per whole-second bucket and the peak number of requests in flight."""
    if not ok:
        return 0.0, 0
    first = min(r.arrival_s for r in ok)
    last = max(r.arrival_s + r.e2el_s for r in ok)
    buckets = np.zeros(int(np.ceil(last - first)) + 1)
    for r in ok:
        for t in _token_times(r):
            k = int(t - first)
            if 0 <= k < len(buckets):
                buckets[k] += 1
    events = sorted([(r.arrival_s, 1) for r in ok] + [(r.arrival_s + r.e2el_s, -1) for r in ok])
    now = peak = 0
    for _, delta in events:
        now += delta
        peak = max(peak, now)
    return float(np.max(buckets)), peak


def _good(ttfts, tpots, e2els, slos: dict[str, float]) -> int:
    columns, limits = [], []
    for name, values in (("ttft", ttfts), ("tpot", tpots), ("e2el", e2els)):
        if name in slos:
            columns.append(values)
            limits.append(slos[name] / MS)
    return sum(all(s >= v for s, v in zip(limits, row)) for row in zip(*columns))


def calculate_metrics(records: Sequence[RequestRecord], duration_s: float, selection: Selection | None = None,
                      max_concurrency: int | None = None, request_rate: float = math.inf) -> ServeMetrics:
    """vllm's calculate_metrics (and the queue samples benchmark() adds) over the records of one run."""
    selection = selection or Selection()
    ok = [r for r in records if r.success]
    ttfts = [r.ttft_s for r in ok]
    e2els = [r.e2el_s for r in ok]
    itls = [gap for r in ok for gap in r.itl_s]
    tpots = [r.tpot_s for r in ok if len(r.token_s) > 1]
    all_tpots = [r.tpot_s for r in ok]
    output_lens = [len(r.token_s) if r.success else 0 for r in records]
    total_input = sum(r.prompt_len for r in ok)
    total_output = sum(output_lens)
    per_s = (lambda n: n / duration_s) if duration_s > 0 else (lambda n: 0.0)
    p = selection.percentiles
    stats = {"ttft": stats_ms(ttfts, p), "tpot": stats_ms(tpots, p), "itl": stats_ms(itls, p),
             "e2el": stats_ms(e2els, p)}
    if max_concurrency is not None:
        stats["client_queue_time"] = stats_ms([r.queued_s for r in ok], p)
        if not math.isinf(request_rate):
            stats["e2el_including_client_queue"] = stats_ms([r.e2el_s + r.queued_s for r in ok], p)
    peak_tokens, peak_requests = _peaks(ok)
    return ServeMetrics(
        completed=len(ok), failed=len(records) - len(ok), total_input=total_input, total_output=total_output,
        duration_s=duration_s, request_throughput=per_s(len(ok)),
        request_goodput=per_s(_good(ttfts, all_tpots, e2els, selection.goodput)) if selection.goodput else None,
        output_throughput=per_s(total_output), total_token_throughput=per_s(total_input + total_output),
        max_output_tokens_per_s=peak_tokens, max_concurrent_requests=peak_requests, output_lens=output_lens,
        stats=stats, selection=selection)


def reported(m: ServeMetrics) -> list[tuple[str, str, str]]:
    """The metrics with percentile lines, in vllm's order (not the flag's): (key, short name, section header)."""
    table = (("ttft", "TTFT", "Time to First Token"), ("tpot", "TPOT", "Time per Output Token (excl. 1st token)"),
             ("itl", "ITL", "Inter-token Latency"), ("e2el", "E2EL", "End-to-end Latency"),
             ("client_queue_time", "Client Queue Time", "Client-side Queueing"),
             ("e2el_including_client_queue", "E2EL incl. Client Queue", "Queue-inclusive End-to-end Latency"))
    return [row for row in table if row[0] in m.selection.metrics and row[0] in m.stats]
