"""When each request arrives: `vllm bench serve --request-rate R --burstiness B`, drawn as its get_request draws them
(vllm/benchmarks/serve.py, main read in 2026), so one seed gives vLLM's schedule:
  - R = inf: every request at t = 0 (no draw);
  - else the gap before request i is Gamma(shape=B, scale=1/(R*B)) -- B = 1 is a Poisson process, B < 1 burstier,
    B > 1 more even; B = inf is the constant 1/R -- drawn in request order by np.random.gamma after
    np.random.seed(--seed) (vLLM's main() seeds the global generator; the random and ShareGPT datasets draw from
    their own generators, so nothing else draws from it first: a private RandomState(seed) is the same stream);
  - request i arrives at the sum of gaps 0..i (the first one after its own gap, not at 0), and the sums are scaled
    so the last arrival is exactly num_requests / R (vLLM closes the 1-2 % gap a sum of random gaps leaves).
The mean gap is 1/R and the coefficient of variation of the gaps 1/sqrt(B)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..request import Request
from .checks import bad_flag

DEFAULT_REQUEST_RATE = math.inf
DEFAULT_BURSTINESS = 1.0


def check_rate(request_rate: float, burstiness: float) -> None:
    """Both must be positive numbers (inf allowed): vLLM asserts burstiness > 0 and a positive rate."""
    if not request_rate > 0:                # also NaN
        raise bad_flag("--request-rate", request_rate, "the rate must be positive (inf sends every request at 0)")
    if not burstiness > 0:
        raise bad_flag("--burstiness", burstiness, "the burstiness must be positive (1 is a Poisson process)")


def arrival_times(num_requests: int, request_rate: float = DEFAULT_REQUEST_RATE,
                  burstiness: float = DEFAULT_BURSTINESS, seed: int = 0) -> list[float]:
    """The arrival second of each of `num_requests` requests, in sending order (non-decreasing)."""
    check_rate(request_rate, burstiness)
    if num_requests <= 0:
        return []
    if math.isinf(request_rate):
        return [0.0] * num_requests
    if math.isinf(burstiness):
        gaps = [1.0 / request_rate] * num_requests
    else:
        rng = np.random.RandomState(seed)
        gaps = rng.gamma(shape=burstiness, scale=1.0 / (request_rate * burstiness), size=num_requests).tolist()
    times = []
    total = 0.0
    for gap in gaps:                        # left to right, as vLLM's running sum
        total += gap
        times.append(total)
    if times[-1] != 0:
        factor = (num_requests / request_rate) / times[-1]
        times = [t * factor for t in times]
    return times


def timed(requests: list[Request], request_rate: float = DEFAULT_REQUEST_RATE,
          burstiness: float = DEFAULT_BURSTINESS, seed: int = 0) -> list[Request]:
    """`requests` (in sending order) with their arrival times."""
    times = arrival_times(len(requests), request_rate, burstiness, seed)
    return [dataclasses.replace(r, arrival_s=t) for r, t in zip(requests, times)]
