"""vllm bench serve's arrivals: rate inf sends everything at 0; otherwise gamma gaps (shape B, scale 1/(R*B))
drawn from np.random after np.random.seed(seed), summed and scaled so the last lands at N/R. Statistical checks use
fixed seeds; their tolerances are stated at each assert (several standard errors wide)."""
import math

import numpy as np
import pytest

from atc_py.common.errors import AtcError
from om_run.serve.request import Request
from om_run.serve.workload.arrivals import arrival_times, timed


def _vllm_schedule(n, rate, burstiness, seed):
    """vllm/benchmarks/serve.py get_request's delays, spelled as vLLM spells them (the global generator)."""
    saved = np.random.get_state()
    try:
        np.random.seed(seed)
        delay_ts = []
        for _ in range(n):
            if rate == float("inf"):
                delay_ts.append(0)
            elif burstiness == float("inf"):
                delay_ts.append(1.0 / rate)
            else:
                theta = 1.0 / (rate * burstiness)
                delay_ts.append(np.random.gamma(shape=burstiness, scale=theta))
        for i in range(1, len(delay_ts)):
            delay_ts[i] += delay_ts[i - 1]
        if delay_ts[-1] != 0:
            factor = (n / rate) / delay_ts[-1]
            delay_ts = [d * factor for d in delay_ts]
        return delay_ts
    finally:
        np.random.set_state(saved)


@pytest.mark.parametrize("rate, burstiness, seed", [(4.0, 1.0, 0), (0.5, 0.3, 11), (20.0, 5.0, 2),
                                                    (3.0, float("inf"), 0)])
def test_the_same_seed_gives_vllms_schedule(rate, burstiness, seed):
    assert arrival_times(300, rate, burstiness, seed) == _vllm_schedule(300, rate, burstiness, seed)


def test_rate_inf_sends_every_request_at_zero():
    assert arrival_times(50) == [0.0] * 50
    assert arrival_times(50, float("inf"), burstiness=0.2, seed=5) == [0.0] * 50


def test_the_mean_gap_is_one_over_the_rate_and_poisson_gaps_are_exponential():
    n, rate = 20000, 8.0
    times = arrival_times(n, rate, 1.0, seed=1)
    assert times == sorted(times) and times[0] > 0          # the first request waits for its own gap
    assert times[-1] == pytest.approx(n / rate, rel=1e-12)  # vLLM's rescaling: the mean gap is exactly 1/R
    gaps = np.diff([0.0] + times)
    assert gaps.mean() == pytest.approx(1 / rate, rel=1e-9)
    # exponential gaps: P(gap < mean) = 1 - 1/e = 0.632; standard error sqrt(p(1-p)/n) = 0.0034, tolerance 0.02
    assert abs((gaps < 1 / rate).mean() - (1 - math.exp(-1))) < 0.02


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
def test_burstiness_sets_the_coefficient_of_variation(burstiness):
    """Gamma(shape B) gaps have CV 1/sqrt(B); with 50,000 gaps the sample CV's standard error is <= 1.5 % (B=0.25,
    kurtosis 27), tolerance 6 %."""
    gaps = np.diff([0.0] + arrival_times(50000, 10.0, burstiness, seed=4))
    assert gaps.std() / gaps.mean() == pytest.approx(1 / math.sqrt(burstiness), rel=0.06)


def test_infinite_burstiness_is_an_even_schedule():
    assert arrival_times(4, 2.0, float("inf")) == pytest.approx([0.5, 1.0, 1.5, 2.0])


@pytest.mark.parametrize("rate, burstiness, flag", [(0.0, 1.0, "--request-rate"), (-2.0, 1.0, "--request-rate"),
                                                    (float("nan"), 1.0, "--request-rate"), (1.0, 0.0, "--burstiness"),
                                                    (1.0, -1.0, "--burstiness"), (1.0, float("nan"), "--burstiness")])
def test_a_rate_or_burstiness_that_is_not_positive_is_refused(rate, burstiness, flag):
    with pytest.raises(AtcError) as exc:
        arrival_times(3, rate, burstiness)
    assert exc.value.code == "E10001" and flag in str(exc.value)


def test_timed_keeps_the_requests_and_sets_their_times():
    reqs = [Request(str(i), 0.0, 10 + i, 5) for i in range(5)]
    out = timed(reqs, 2.0, 1.0, seed=0)
    assert [r.arrival_s for r in out] == arrival_times(5, 2.0, 1.0, 0)
    assert [(r.request_id, r.prompt_len) for r in out] == [(r.request_id, r.prompt_len) for r in reqs]
