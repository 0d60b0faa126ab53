"""--search-request-rate: the highest request rate whose run meets every --goodput SLO at the chosen percentile
(Vidur's capacity search): rates doubled from the start until one fails, halved until one passes, then bisected
until the failing rate is within SEARCH_TOLERANCE of the passing one. Each rate is a whole simulated run of the
same requests (same lengths and seed; only the arrival times scale)."""
from __future__ import annotations

import math

import click
import numpy as np

from atc_py.common.errors import AtcError

SEARCH_TOLERANCE = 1.05      # the answer's failing neighbour is at most 5 % above it
MAX_RUNS = 40
LOWEST_RATE = 1 / 256        # req/s: below this the SLO is out of the engine's reach at any load


def parse_slos(goodput: tuple[str, ...]) -> dict[str, float]:
    from .results.metrics import parse_goodput
    return dict(parse_goodput(list(goodput)))


def slo_values(records, percentile: float) -> dict[str, float]:
    """Each SLO metric's percentile (ms) over the successful requests; 0 for a metric without samples."""
    ok = [r for r in records if r.success]
    values = {"ttft": [r.ttft_s * 1e3 for r in ok], "tpot": [r.tpot_s * 1e3 for r in ok if r.output_len > 1],
              "e2el": [r.e2el_s * 1e3 for r in ok]}
    return {k: float(np.percentile(v, percentile)) if v else 0.0 for k, v in values.items()}


def meets(records, slos: dict[str, float], percentile: float) -> tuple[bool, dict[str, float]]:
    """Whether every request completed and each SLO metric's percentile is within its bound (ms)."""
    ok = [r for r in records if r.success]
    if len(ok) < len(records) or not ok:
        return False, {}
    values = slo_values(ok, percentile)
    seen = {k: values[k] for k in slos}
    return all(seen[k] <= v for k, v in slos.items()), seen


def search_rate(flags: dict, prep, result_flags, simulate, run_info) -> float:
    """simulate(prep, requests, max_concurrency, progress) and run_info(flags, prep, rate) are the session's."""
    from .results import write_results
    from .workload.arrivals import timed
    slos = parse_slos(tuple(flags["goodput"]))
    pct = flags["slo_percentile"]
    base = [r for r in prep.requests]
    tried: dict[float, bool] = {}

    def run(rate: float):
        reqs = timed(base, rate, flags["burstiness"], flags["seed"])
        res = simulate(prep, reqs, flags["max_concurrency"], progress=False)
        ok, seen = meets(res.records, slos, pct)
        tried[rate] = ok
        shown = ", ".join(f"p{pct:g} {k} {v:.2f} ms" for k, v in seen.items())
        click.echo(f"[INFO] request rate {rate:.4g} req/s: {'meets' if ok else 'misses'} the SLOs ({shown})")
        return ok, res

    rate = flags["request_rate"] if math.isfinite(flags["request_rate"]) else 1.0
    ok, res = run(rate)
    best = (rate, res) if ok else None
    lo, hi = (rate, None) if ok else (None, rate)
    while len(tried) < MAX_RUNS:
        if lo is None:
            r = hi / 2
            if r < LOWEST_RATE:
                break
        elif hi is None:
            r = lo * 2
        else:
            if hi <= lo * SEARCH_TOLERANCE:
                break
            r = math.sqrt(lo * hi)
        ok, res = run(r)
        if ok:
            lo, best = r, (r, res)
        else:
            hi = r
    if best is None:
        raise AtcError("E10001", value=" ".join(flags["goodput"]), parameter="--goodput",
                       reason=f"no request rate meets these SLOs at p{pct:g}: the lowest rate tried, "
                              f"{min(tried):.4g} req/s, misses them")
    rate, res = best
    click.echo(f"[INFO] highest request rate meeting the SLOs at p{pct:g}: {rate:.4g} req/s"
               + (f" ({hi:.4g} req/s misses them)" if hi is not None else " (the search's upper bound)"))
    results = write_results(res.records, res.steps, run_info(flags, prep, rate), result_flags)
    for line in results.failures + results.summary:
        click.echo(line)
    for path in results.files:
        click.echo(f"[INFO] wrote {path}")
    return rate
