"""vllm bench serve's result JSON (keys, order, units, file name, --metadata, --append-result) and its printed
summary block, both checked against what vllm/benchmarks/serve.py (main at 009e6d4a) writes."""
from __future__ import annotations

import json

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.results import ResultFlags, compute, write_results
from om_run.serve.results.metrics import Selection
from om_run.serve.results.summary import failure_lines
from om_run.serve.results.vllm_json import default_filename, result_json, result_path

from .results_cases import RUN_INFO, records, steps

# main_async's setup keys, --metadata, the traffic keys, then benchmark()'s result dict for a generative backend
# with a tokenizer, then process_one_metric's keys for ttft, tpot, itl (the default --percentile-metrics).
SETUP = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts"]
TRAFFIC = ["request_rate", "burstiness", "max_concurrency"]
RESULT = ["duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
          "request_goodput", "output_throughput", "total_token_throughput", "input_lens", "output_lens", "ttfts",
          "itls", "latencies", "start_times", "queue_times", "generated_texts", "errors", "max_output_tokens_per_s",
          "max_concurrent_requests", "rtfx"]
DETAILED = {"input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors"}
STATS = [f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl") for s in ("mean", "median", "std", "p99")]


def _json(detailed=False, metadata=(), run_info=RUN_INFO, **sel):
    recs = records()
    res = compute(recs, run_info, Selection.parse(**sel))
    return result_json(recs, res.metrics, run_info, metadata, detailed)


def test_key_set_and_order():
    assert list(_json()) == SETUP + TRAFFIC + [k for k in RESULT if k not in DETAILED] + STATS
    assert list(_json(detailed=True)) == SETUP + TRAFFIC + RESULT + STATS


def test_metadata_goes_after_the_setup_keys():
    keys = list(_json(metadata=["version=0.3.3", " tp = 1", "note=a=b"]))
    assert keys[:10] == SETUP + ["version", "tp", "note"]
    body = _json(metadata=["version=0.3.3", " tp = 1", "note=a=b"])
    assert (body["version"], body["tp"], body["note"]) == ("0.3.3", "1", "a=b")
    with pytest.raises(AtcError, match="KEY=VALUE"):
        _json(metadata=["novalue"])


def test_values_and_units():
    body = _json(detailed=True, metric_percentiles="50,99.9", percentile_metrics="ttft,e2el", goodput="e2el:200")
    assert body["request_rate"] == "inf" and body["tokenizer_id"] == "Qwen/Qwen3-8B" and body["label"] is None
    assert body["duration"] == pytest.approx(0.6)                          # seconds
    assert body["ttfts"] == pytest.approx([0.1, 0.3, 0.1, 0.1])            # seconds; D's first token came
    assert body["itls"][0] == pytest.approx([0.05, 0.1]) and body["itls"][3] == []
    assert body["latencies"] == pytest.approx([0.25, 0.4, 0.1, 0.0])       # a failed request's stays 0
    assert body["output_lens"] == [3, 2, 1, 0] and body["input_lens"] == [10, 20, 30, 40]
    assert body["errors"] == ["", "", "", "boom"] and body["generated_texts"] == [""] * 4
    assert body["mean_e2el_ms"] == pytest.approx(250) and body["p99.9_ttft_ms"] > body["p50_ttft_ms"]
    assert "mean_tpot_ms" not in body and body["request_goodput"] == pytest.approx(1 / 0.6)
    assert [k for k in body if k.startswith(("mean_", "median_", "std_", "p5", "p9"))] == [
        "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms", "p99.9_ttft_ms",
        "mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p50_e2el_ms", "p99.9_e2el_ms"]


def test_client_queue_keys():
    info = {**RUN_INFO, "max_concurrency": 2, "request_rate": 4.0}
    body = _json(run_info=info, percentile_metrics="ttft,client_queue_time,e2el_including_client_queue")
    assert body["request_rate"] == 4.0 and body["max_concurrency"] == 2
    assert list(body)[-12:] == [f"{s}_{m}_ms" for m in ("ttft", "client_queue_time", "e2el_including_client_queue")
                                for s in ("mean", "median", "std", "p99")]


def test_default_file_name():
    info = {"backend": "vllm", "request_rate": 10, "model_id": "Qwen/Qwen3-8B", "max_concurrency": 4}
    assert default_filename(info, "20250101-120000") == "vllm-10.0qps-concurrency4-Qwen3-8B-20250101-120000.json"
    info = {"backend": "openai", "label": "sim", "model_id": "m"}
    assert default_filename(info, "20250101-120000") == "sim-infqps-m-20250101-120000.json"


def test_result_dir_and_file_name(tmp_path):
    assert result_path(RUN_INFO, "d", "x.json", tmp_path / "new") == tmp_path / "new" / "x.json"
    assert (tmp_path / "new").is_dir()
    assert result_path(RUN_INFO, "d").name == "vllm-infqps-Qwen3-8B-d.json"


def test_save_and_append(tmp_path):
    flags = ResultFlags(save_result=True, result_dir=tmp_path, metadata=("tp=1",))
    res = write_results(records(), steps(), RUN_INFO, flags)
    path = tmp_path / "vllm-infqps-Qwen3-8B-20250101-120000.json"
    assert res.files == [path]
    first = json.loads(path.read_text())
    assert first["tp"] == "1" and first["completed"] == 3
    write_results(records(), steps(), RUN_INFO, ResultFlags(append_result=True, result_filename=str(path)))
    lines = path.read_text().split("\n")
    assert len(lines) == 2 and json.loads(lines[1])["date"] == "20250101-120000"


# vllm's lines as printed; "|" marks where the trailing spaces of "{:<10}" end
SUMMARY = """\
============ Serving Benchmark Result ============
Successful requests:                     3         |
Failed requests:                         1         |
Benchmark duration (s):                  0.60      |
Total input tokens:                      60        |
Total generated tokens:                  6         |
Request throughput (req/s):              5.00      |
Output token throughput (tok/s):         10.00     |
Peak output token throughput (tok/s):    6.00      |
Peak concurrent requests:                2.00      |
Total token throughput (tok/s):          110.00    |
---------------Time to First Token----------------
Mean TTFT (ms):                          166.67    |
Median TTFT (ms):                        100.00    |
P99 TTFT (ms):                           296.00    |
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          87.50     |
Median TPOT (ms):                        87.50     |
P99 TPOT (ms):                           99.75     |
---------------Inter-token Latency----------------
Mean ITL (ms):                           83.33     |
Median ITL (ms):                         100.00    |
P99 ITL (ms):                            100.00    |
=================================================="""


def test_summary_block():
    assert compute(records(), RUN_INFO).summary == [line.removesuffix("|") for line in SUMMARY.splitlines()]


def test_summary_optional_lines():
    info = {**RUN_INFO, "max_concurrency": 8, "request_rate": 2.5}
    lines = compute(records(), info, Selection.parse("e2el", "50", ["ttft:1000"])).summary
    assert lines[3:5] == ["Maximum request concurrency:             8         ",
                          "Request rate configured (RPS):           2.50      "]
    assert "Request goodput (req/s):                 5.00      " in lines
    assert lines[-5:] == ["----------------End-to-end Latency----------------",
                          "Mean E2EL (ms):                          250.00    ",
                          "Median E2EL (ms):                        250.00    ",
                          "P50 E2EL (ms):                           250.00    ",
                          "=" * 50]


def test_failure_lines():
    assert failure_lines(records()) == ["Failed requests during benchmark run detected (capping to 10):",
                                        "Error 0: boom"]
    assert failure_lines(records()[:3]) == []


def test_bad_flags_stop_before_any_file(tmp_path):
    for flags in (ResultFlags(save_result=True, result_dir=tmp_path / "x", metric_percentiles="0"),
                  ResultFlags(save_result=True, result_dir=tmp_path / "x", goodput=("ttft:-3",)),
                  ResultFlags(save_result=True, result_dir=tmp_path / "x", metadata=("novalue",))):
        with pytest.raises(AtcError):
            write_results(records(), steps(), RUN_INFO, flags)
    assert not list(tmp_path.iterdir())


def test_results_carry_the_failure_lines():
    assert compute(records(), RUN_INFO).failures == ["Failed requests during benchmark run detected (capping to 10):",
                                                     "Error 0: boom"]
