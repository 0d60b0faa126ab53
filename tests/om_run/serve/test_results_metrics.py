"""vllm bench serve's metrics over the hand-worked run of results_cases: successful requests only, TPOT without
single-token outputs, ITL pooled, numpy's statistics in ms, goodput against SLOs, and the flags' checks."""
from __future__ import annotations

import math

import numpy as np
import pytest

from atc_py.common.errors import AtcError
from om_run.serve.request import RequestRecord
from om_run.serve.results.metrics import (
    Selection,
    benchmark_duration,
    calculate_metrics,
    parse_goodput,
    parse_metric_percentiles,
    parse_percentile_metrics,
    percentile_word,
)

from .results_cases import records

approx = pytest.approx


def _metrics(**sel):
    recs = records()
    return calculate_metrics(recs, benchmark_duration(recs), Selection.parse(**sel))


def test_counts_duration_and_throughputs():
    m = _metrics()
    assert (m.completed, m.failed, m.total_input, m.total_output) == (3, 1, 60, 6)
    assert m.duration_s == approx(0.6)
    assert m.request_throughput == approx(5.0)
    assert m.output_throughput == approx(10.0)
    assert m.total_token_throughput == approx(110.0)
    assert m.output_lens == [3, 2, 1, 0]          # the failed request counts 0 tokens, as vllm's
    assert m.request_goodput is None


def test_latency_statistics_by_hand():
    m = _metrics(metric_percentiles="50,99")
    ttft, tpot, itl, e2el = (m.stats[k] for k in ("ttft", "tpot", "itl", "e2el"))
    # TTFT [100, 300, 100] ms: numpy's linear percentile of the sorted [100, 100, 300] at rank 0.99 * 2 = 1.98
    assert (ttft.mean_ms, ttft.median_ms) == (approx(500 / 3), approx(100))
    assert ttft.std_ms == approx(math.sqrt(((100 - 500 / 3) ** 2 * 2 + (300 - 500 / 3) ** 2) / 3))
    assert ttft.percentiles_ms == ((50.0, approx(100)), (99.0, approx(296)))
    # TPOT [75, 100] ms: C's single token has none
    assert (tpot.mean_ms, tpot.median_ms, tpot.std_ms) == (approx(87.5), approx(87.5), approx(12.5))
    assert tpot.percentiles_ms[1] == (99.0, approx(99.75))
    # ITL pooled over A and B: [50, 100, 100] ms
    assert (itl.mean_ms, itl.median_ms, itl.percentiles_ms[1][1]) == (approx(250 / 3), approx(100), approx(100))
    # E2EL [250, 400, 100] ms
    assert (e2el.mean_ms, e2el.median_ms, e2el.percentiles_ms[1][1]) == (approx(250), approx(250), approx(397))


def test_statistics_are_numpys():
    m = _metrics(metric_percentiles="25,75,99.9")
    ttfts = [0.1, 0.3, 0.1]
    assert [v for _, v in m.stats["ttft"].percentiles_ms] == [approx(np.percentile(ttfts, p) * 1000)
                                                              for p in (25, 75, 99.9)]


def test_peaks():
    m = _metrics()
    assert m.max_output_tokens_per_s == 6.0        # every token inside the first second
    assert m.max_concurrent_requests == 2          # [0, .25) [.2, .6) [.3, .4): A ends before C starts


def test_peak_concurrency_counts_an_end_before_a_start_at_the_same_time():
    recs = [RequestRecord("a", 0.0, 1, 1, [1.0]), RequestRecord("b", 1.0, 1, 1, [2.0])]
    assert calculate_metrics(recs, 2.0).max_concurrent_requests == 1


def test_peak_tokens_per_second_buckets():
    recs = [RequestRecord("a", 0.0, 1, 4, [0.5, 1.2, 1.5, 1.9]), RequestRecord("b", 0.5, 1, 2, [2.1, 2.2])]
    assert calculate_metrics(recs, 2.2).max_output_tokens_per_s == 3.0   # 1.2, 1.5, 1.9


def test_goodput():
    assert _metrics(goodput="ttft:150 tpot:80").request_goodput == approx(2 / 0.6)   # A; C's TPOT counts as 0
    assert _metrics(goodput=["e2el:200"]).request_goodput == approx(1 / 0.6)        # C only
    assert _metrics(goodput=["ttft:300", "tpot:100", "e2el:400"]).request_goodput == approx(3 / 0.6)  # bounds hold


def test_failed_requests_are_left_out():
    ok_only = [r for r in records() if r.success]
    a, b = calculate_metrics(records(), 0.6), calculate_metrics(ok_only, 0.6)
    assert a.stats == b.stats and a.total_input == b.total_input and a.failed == 1 and b.failed == 0


def test_client_queue_metrics_need_max_concurrency():
    recs = records()
    recs[0].queued_s = 0.5
    assert "client_queue_time" not in calculate_metrics(recs, 0.6).stats
    m = calculate_metrics(recs, 0.6, max_concurrency=2)
    assert m.stats["client_queue_time"].mean_ms == approx(500 / 3)
    assert "e2el_including_client_queue" not in m.stats                    # an infinite rate has none
    m = calculate_metrics(recs, 0.6, max_concurrency=2, request_rate=4.0)
    assert m.stats["e2el_including_client_queue"].mean_ms == approx((750 + 400 + 100) / 3)


def test_no_successful_request_gives_zeros():
    m = calculate_metrics([RequestRecord("x", 0.0, 5, 2, [], error="refused")], 0.0)
    assert (m.completed, m.failed, m.request_throughput, m.stats["ttft"].mean_ms) == (0, 1, 0.0, 0.0)


def test_flag_defaults_and_words():
    assert parse_percentile_metrics(None) == ("ttft", "tpot", "itl")
    assert parse_metric_percentiles(None) == (99.0,)
    assert parse_metric_percentiles("25,50,99") == (25.0, 50.0, 99.0)
    assert parse_goodput(None) == {} and parse_goodput(["ttft:5", "e2el:1e3"]) == {"ttft": 5.0, "e2el": 1000.0}
    assert [percentile_word(p) for p in (99.0, 99.9, 50.0)] == ["99", "99.9", "50"]


@pytest.mark.parametrize("text", ["0", "101", "-5", "abc", "50,,99", "nan"])
def test_bad_percentiles(text):
    with pytest.raises(AtcError) as e:
        parse_metric_percentiles(text)
    assert e.value.code == "E10001" and "--metric-percentiles" in str(e.value)


@pytest.mark.parametrize("pairs, why", [(["ttft=5"], "KEY:VALUE"), (["ttft:5:6"], "KEY:VALUE"),
                                        (["ttft:abc"], "KEY:VALUE"), (["itl:5"], "must be one of"),
                                        (["ttft:-1"], "non-negative")])
def test_bad_goodput(pairs, why):
    with pytest.raises(AtcError) as e:
        parse_goodput(pairs)
    assert e.value.code == "E10001" and "--goodput" in str(e.value) and why in str(e.value)


def test_unknown_percentile_metric():
    with pytest.raises(AtcError, match="unknown metric 'bogus'"):
        parse_percentile_metrics("ttft,bogus")
