"""The block vllm bench serve prints at the end of a run, line for line, so a simulated run and a device run can
be set side by side (or diffed) as they stand.

Source: vllm-project/vllm, vllm/benchmarks/serve.py on main at 009e6d4a: benchmark() prints the header centred
in 50 '=', then "{:<40} {:<10}" lines (numbers "{:<10.2f}"; the trailing spaces are part of the line), a
'-'-centred header per reported metric with its Mean / Median / P{p} lines (std is saved, not printed), and 50 '='.
The simulation always knows its token counts, so the lines vllm prints only with a tokenizer are always there.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..request import RequestRecord
from .metrics import ServeMetrics, percentile_word, reported

WIDTH = 50


def _line(label: str, value, fmt: str = "") -> str:
    return ("{:<40} {:<10" + fmt + "}").format(label, value)


def failure_lines(records: Sequence[RequestRecord]) -> list[str]:
    """What calculate_metrics prints before the block when requests failed: at most ten of their errors."""
    failed = [r for r in records if not r.success]
    if not failed:
        return []
    return ["Failed requests during benchmark run detected (capping to 10):"] + \
        [f"Error {i}: {r.error}" for i, r in enumerate(failed[:10])]


def summary_lines(m: ServeMetrics, max_concurrency: int | None = None, request_rate: float = math.inf) -> list[str]:
    """The "Serving Benchmark Result" block, one string per printed line."""
    out = ["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=WIDTH, c="="),
           _line("Successful requests:", m.completed),
           _line("Failed requests:", m.failed)]
    if max_concurrency is not None:
        out.append(_line("Maximum request concurrency:", max_concurrency))
    if request_rate != math.inf:
        out.append(_line("Request rate configured (RPS):", request_rate, ".2f"))
    out += [_line("Benchmark duration (s):", m.duration_s, ".2f"),
            _line("Total input tokens:", m.total_input),
            _line("Total generated tokens:", m.total_output),
            _line("Request throughput (req/s):", m.request_throughput, ".2f")]
    if m.request_goodput is not None:
        out.append(_line("Request goodput (req/s):", m.request_goodput, ".2f"))
    out += [_line("Output token throughput (tok/s):", m.output_throughput, ".2f"),
            _line("Peak output token throughput (tok/s):", m.max_output_tokens_per_s, ".2f"),
            _line("Peak concurrent requests:", m.max_concurrent_requests, ".2f"),
            _line("Total token throughput (tok/s):", m.total_token_throughput, ".2f")]
    for key, name, header in reported(m):
        s = m.stats[key]
        out += ["{s:{c}^{n}}".format(s=header, n=WIDTH, c="-"),
                _line(f"Mean {name} (ms):", s.mean_ms, ".2f"),
                _line(f"Median {name} (ms):", s.median_ms, ".2f")]
        out += [_line(f"P{percentile_word(p)} {name} (ms):", v, ".2f") for p, v in s.percentiles_ms]
    out.append("=" * WIDTH)
    return out
