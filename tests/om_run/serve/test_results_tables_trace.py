"""The per-request and per-step CSV tables and the Chrome / Perfetto trace of the hand-worked run."""
from __future__ import annotations

import csv
import io
import json
from collections import Counter

from om_run.serve.results import ResultFlags, write_results
from om_run.serve.results.tables import REQUEST_COLUMNS, STEP_COLUMNS, requests_csv, steps_csv
from om_run.serve.results.trace import chrome_trace

from .results_cases import RUN_INFO, records, steps


def _rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_request_table():
    text = requests_csv(records())
    assert text.splitlines()[0].split(",") == REQUEST_COLUMNS == [
        "request_id", "arrival_ms", "queued_ms", "first_token_ms", "finish_ms", "prompt_tokens", "output_tokens",
        "ttft_ms", "tpot_ms", "e2el_ms", "preemptions", "error"]
    a, b, c, d = _rows(text)
    assert a == {"request_id": "A", "arrival_ms": "0.000", "queued_ms": "0.000", "first_token_ms": "100.000",
                 "finish_ms": "250.000", "prompt_tokens": "10", "output_tokens": "3", "ttft_ms": "100.000",
                 "tpot_ms": "75.000", "e2el_ms": "250.000", "preemptions": "0", "error": ""}
    assert (b["preemptions"], c["tpot_ms"], d["error"], d["output_tokens"]) == ("1", "0.000", "boom", "1")


def test_step_table():
    text = steps_csv(steps())
    assert text.splitlines()[0].split(",") == STEP_COLUMNS == [
        "step", "start_ms", "end_ms", "duration_ms", "num_seqs", "num_prefill_tokens", "num_decode_tokens",
        "kv_blocks_in_use", "num_blocks", "preempted", "waiting", "device_ms", "host_ms", "collectives_ms"]
    rows = _rows(text)
    assert rows[1] == {"step": "1", "start_ms": "100.000", "end_ms": "300.000", "duration_ms": "200.000",
                       "num_seqs": "2", "num_prefill_tokens": "20", "num_decode_tokens": "1",
                       "kv_blocks_in_use": "3", "num_blocks": "64", "preempted": "1", "waiting": "1",
                       "device_ms": "180.000", "host_ms": "20.000", "collectives_ms": "0.000"}


def test_trace_events():
    trace = json.loads(json.dumps(chrome_trace(records(), steps())))
    ev = trace["traceEvents"]
    kinds = Counter(e["ph"] for e in ev)
    assert kinds["X"] == 3 and kinds["C"] == 6 and kinds["i"] == 1 and kinds["M"] == 4
    assert kinds["b"] == kinds["e"] == 4 + 4 + 2          # 4 requests, 4 first tokens (D failed after one), 2 decodes
    names = [e["name"] for e in ev if e["ph"] == "X"]
    assert names == ["P:10 D:0", "P:20 D:1", "P:70 D:2"]
    step1 = next(e for e in ev if e["ph"] == "X" and e["args"]["step"] == 1)
    assert (step1["ts"], step1["dur"]) == (100000.0, 200000.0)           # microseconds
    kv = [e["args"]["in use"] for e in ev if e["name"] == "KV blocks"]
    assert kv == [1, 3, 6]
    assert {e["name"] for e in ev if e["ph"] == "M"} == {"process_name", "thread_name"}
    a = [e for e in ev if e.get("cat") == "request" and e["id"] == 0]
    assert [(e["ph"], e["name"], e["ts"]) for e in a] == [
        ("b", "A", 0.0), ("b", "to first token", 0.0), ("b", "decode", 100000.0),
        ("e", "decode", 250000.0), ("e", "to first token", 100000.0), ("e", "A", 250000.0)]
    d = next(e for e in ev if e.get("cat") == "request" and e["ph"] == "b" and e["name"] == "D")
    assert d["args"]["error"] == "boom"


def test_a_tensor_parallel_steps_collectives_are_in_the_csv_and_on_their_track():
    import dataclasses
    step = dataclasses.replace(steps()[1], collectives=(("HcomAllReduce", 9, 4096, 20e-6), ("HcomAllGather", 1, 512, 30e-6)),
                               comm_s=9 * 20e-6 + 30e-6)
    assert _rows(steps_csv([step]))[0]["collectives_ms"] == "0.210"
    ev = [e for e in chrome_trace([], [step])["traceEvents"] if e.get("cat") == "collective"]
    assert [(e["name"], e["tid"], e["ts"], e["dur"]) for e in ev] == [
        ("HcomAllReduce x9", 1, 100000.0, 180.0), ("HcomAllGather x1", 1, 100180.0, 30.0)]
    assert ev[0]["args"]["bytes_per_call"] == 4096


def test_client_queue_span():
    recs = records()
    recs[1].queued_s = 0.05
    ev = chrome_trace(recs, [])["traceEvents"]
    q = [e for e in ev if e.get("name") == "client queue"]
    assert [(e["ph"], e["ts"]) for e in q] == [("b", 150000.0), ("e", 200000.0)]


def test_written_files(tmp_path):
    flags = ResultFlags(requests_csv=tmp_path / "r.csv", steps_csv=tmp_path / "s.csv", trace=tmp_path / "t.json")
    files = write_results(records(), steps(), RUN_INFO, flags).files
    assert files == [tmp_path / "r.csv", tmp_path / "s.csv", tmp_path / "t.json"]
    assert json.loads((tmp_path / "t.json").read_text())["displayTimeUnit"] == "ms"
    assert (tmp_path / "r.csv").read_text() == requests_csv(records())
