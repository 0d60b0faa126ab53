"""AISBench's performance files for the hand-worked run (AISBench/benchmark master 29c363e): the CSV of per-request
metric statistics and the JSON of common metrics, their layout, rounding and units."""
from __future__ import annotations

import csv
import io
import json

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.request import RequestRecord
from om_run.serve.results import ResultFlags, write_results
from om_run.serve.results.aisbench import common_metrics, metrics_csv, per_request_metrics, write_aisbench

from .results_cases import RUN_INFO, records, steps

HEADER = ["Performance Parameters", "Stage", "Average", "Min", "Max", "Median", "P75", "P90", "P99", "N"]
# Each statistic rounded to 4 places in its own unit (seconds for latencies) before the ms conversion: TTFT's
# mean 0.16667 s is 166.7 ms. TPOT keeps C's 0 (AISBench counts a single-token request's TPOT as 0) and its N
# counts only requests with a decode gap, like ITL's.
ROWS = [
    ["E2EL", "total", "250.0 ms", "100.0 ms", "400.0 ms", "250.0 ms", "325.0 ms", "370.0 ms", "397.0 ms", "3"],
    ["TTFT", "total", "166.7 ms", "100.0 ms", "300.0 ms", "100.0 ms", "200.0 ms", "260.0 ms", "296.0 ms", "3"],
    ["TPOT", "total", "58.3 ms", "0.0 ms", "100.0 ms", "75.0 ms", "87.5 ms", "95.0 ms", "99.5 ms", "2"],
    ["ITL", "total", "83.3 ms", "50.0 ms", "100.0 ms", "100.0 ms", "100.0 ms", "100.0 ms", "100.0 ms", "2"],
    ["InputTokens", "total", "20.0", "10.0", "30.0", "20.0", "25.0", "28.0", "29.8", "3"],
    ["OutputTokens", "total", "2.0", "1.0", "3.0", "2.0", "2.5", "2.8", "2.98", "3"],
    ["OutputTokenThroughput", "total", "9.0 token/s", "5.0 token/s", "12.0 token/s", "10.0 token/s",
     "11.0 token/s", "11.6 token/s", "11.96 token/s", "3"],
    ["PrefillTokenThroughput", "total", "155.5556 token/s", "66.6667 token/s", "300.0 token/s", "100.0 token/s",
     "200.0 token/s", "260.0 token/s", "296.0 token/s", "3"],
]
COMMON = {"Benchmark Duration": {"total": "600.0 ms"}, "Total Requests": {"total": 4},
          "Failed Requests": {"total": 1}, "Success Requests": {"total": 3}, "Concurrency": {"total": 1.25},
          "Max Concurrency": {"total": 4}, "Request Throughput": {"total": "5.0 req/s"},
          "Total Input Tokens": {"total": 60}, "Total Generated Tokens": {"total": 6},
          "Input Token Throughput": {"total": "100.0 token/s"}, "Output Token Throughput": {"total": "10.0 token/s"},
          "Total Token Throughput": {"total": "110.0 token/s"}}


def test_csv_rows():
    text = metrics_csv(per_request_metrics(records()))
    assert text.endswith("\r\n")                       # csv.writer's own line ends, as AISBench writes them
    assert list(csv.reader(io.StringIO(text))) == [HEADER] + ROWS


def test_common_metrics():
    assert common_metrics(records()) == COMMON
    assert list(common_metrics(records())) == list(COMMON)
    assert common_metrics(records(), max_concurrency=2)["Max Concurrency"] == {"total": 2}


def test_files_where_aisbench_puts_them(tmp_path):
    files = write_aisbench(tmp_path, records(), {**RUN_INFO, "aisbench_model_abbr": "vllm-api-stream-chat"})
    folder = tmp_path / "performances" / "vllm-api-stream-chat"
    assert files == [folder / "random.csv", folder / "random.json"]
    assert json.loads(files[1].read_text()) == COMMON
    assert files[1].read_text().startswith('{\n    "Benchmark Duration": {\n        "total": "600.0 ms"')
    files = write_results(records(), steps(), RUN_INFO, ResultFlags(aisbench_output=tmp_path / "b")).files
    assert files[0] == tmp_path / "b" / "performances" / "Qwen3-8B" / "random.csv"


def test_single_token_outputs_drop_itl_and_tpot():
    recs = [RequestRecord("a", 0.0, 8, 1, [0.2]), RequestRecord("b", 0.1, 8, 1, [0.4])]
    assert list(per_request_metrics(recs)) == ["E2EL", "TTFT", "InputTokens", "OutputTokens",
                                               "OutputTokenThroughput", "PrefillTokenThroughput"]


def test_other_stats():
    table = per_request_metrics(records(), ("Average", "P50"))
    assert table["E2EL"] == {"Average": "250.0 ms", "P50": "250.0 ms", "N": 3}


def test_errors(tmp_path):
    with pytest.raises(AtcError, match="all requests failed"):
        write_aisbench(tmp_path, [RequestRecord("x", 0.0, 4, 2, [], error="refused")], RUN_INFO)
    with pytest.raises(AtcError, match="P1..P99"):
        write_aisbench(tmp_path, records(), RUN_INFO, ("Average", "P100"))
