"""Trace replay: Vidur's CSV (arrived_at s, num_prefill_tokens, num_decode_tokens) and AISBench's Mooncake JSONL
(timestamp ms, input_length / input_text, output_length, hash_ids); sorted by arrival, ids in that order; a bad row
is an E13003 naming the file and its line."""
import json

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.workload import WorkloadSpec, build
from om_run.serve.workload.traces import read_trace


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_vidur_csv_round_trip(tmp_path):
    made = build(WorkloadSpec(num_prompts=50, random_range_ratio=0.5, request_rate=7.0, seed=3))
    text = "arrived_at,num_prefill_tokens,num_decode_tokens\n" + "".join(
        f"{r.arrival_s!r},{r.prompt_len},{r.output_len}\n" for r in made)
    back = read_trace(_write(tmp_path, "t.csv", text))
    assert back == made                                            # ids, times, lengths; no prompt_ids


def test_vidur_csv_sorted_by_arrival_any_column_order_extra_columns(tmp_path):
    text = ("num_decode_tokens,request_id,arrived_at,num_prefill_tokens\n"
            "44,a,4.5,374\n"
            "\n"
            "109,b,0.0,396.0\n"                                    # pandas writes ints as 396.0
            "55,c,2.0,879\n"
            "16,d,2.0,91\n")                                       # a tie keeps the file's order
    reqs = read_trace(_write(tmp_path, "t.csv", text))
    assert [(r.request_id, r.arrival_s, r.prompt_len, r.output_len) for r in reqs] == [
        ("0", 0.0, 396, 109), ("1", 2.0, 879, 55), ("2", 2.0, 91, 16), ("3", 4.5, 374, 44)]
    assert [r.prompt_len for r in read_trace(_write(tmp_path, "t.csv", text), num_prompts=2)] == [396, 879]


def test_vidur_prompt_ids_with_a_vocabulary(tmp_path):
    path = _write(tmp_path, "t.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,5,2\n1,7,3\n")
    reqs = read_trace(path, seed=1, vocab_size=50)
    assert [len(r.prompt_ids) for r in reqs] == [5, 7] and all(0 <= t < 50 for r in reqs for t in r.prompt_ids)
    assert read_trace(path, seed=1, vocab_size=50) == reqs


@pytest.mark.parametrize("text, where", [
    ("", "the trace is empty"),
    ("arrived_at,num_prefill_tokens\n0,4\n", "line 1: the header lacks column(s) num_decode_tokens"),
    ("0.0,374,44\n1.0,396,109\n", "line 1: the header lacks column(s) arrived_at, num_prefill_tokens"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,4,4\n1,x,4\n", "line 3: num_prefill_tokens 'x' is not"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,4,4\n\n-1,4,4\n", "line 4: arrived_at '-1' is negative"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\nnan,4,4\n", "line 2: arrived_at 'nan' is not a finite"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,4,0\n", "line 2: num_decode_tokens is 0"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,0,4\n", "line 2: num_prefill_tokens is 0"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,12.5,4\n", "line 2: num_prefill_tokens '12.5' is not a "
                                                                    "whole number"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,4\n", "line 2: 2 fields where the header names 3"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n", "the trace has no request"),
])
def test_vidur_csv_errors_name_the_line(tmp_path, text, where):
    path = _write(tmp_path, "bad.csv", text)
    with pytest.raises(AtcError) as exc:
        read_trace(path)
    assert exc.value.code == "E13003" and path in str(exc.value) and where in str(exc.value)


def _jsonl(rows):
    return "".join((json.dumps(r) if isinstance(r, dict) else r) + "\n" for r in rows)


def test_mooncake_jsonl_round_trip(tmp_path):
    made = build(WorkloadSpec(num_prompts=40, random_range_ratio=0.5, request_rate=3.0, burstiness=0.5, seed=9))
    text = _jsonl({"timestamp": r.arrival_s * 1000, "input_length": r.prompt_len, "output_length": r.output_len}
                  for r in made)
    back = read_trace(_write(tmp_path, "t.jsonl", text))
    assert [(r.request_id, r.prompt_len, r.output_len) for r in back] == [
        (r.request_id, r.prompt_len, r.output_len) for r in made]
    assert [r.arrival_s for r in back] == pytest.approx([r.arrival_s for r in made], rel=1e-12)


def test_mooncake_fields(tmp_path):
    text = _jsonl([
        {"timestamp": 500, "input_text": "What is the capital of France?", "output_length": 10},
        {"timestamp": 0, "input_length": 600, "output_length": 100, "hash_ids": [1, 2]},
        "",
        {"timestamp": 200, "input_length": 1536, "hash_ids": [1, 2, 3], "chat_id": 7},   # no output_length: 1
        {"timestamp": 1000, "input_length": 300, "output_length": 5},
    ])
    reqs = read_trace(_write(tmp_path, "t.jsonl", text), vocab_size=1000)
    assert [(r.arrival_s, r.prompt_len, r.output_len) for r in reqs] == [
        (0.0, 600, 100), (0.2, 1536, 1), (0.5, 7, 10), (1.0, 300, 5)]          # ms -> s, sorted
    a, b = reqs[0].prompt_ids, reqs[1].prompt_ids
    assert len(a) == 600 and len(b) == 1536
    assert a == b[:600]                       # blocks 1 and 2 are the same tokens in both prompts: a cache hit
    assert b[1024:] != b[:512]                # block 3 is its own


@pytest.mark.parametrize("line, where", [
    ('{"timestamp": 0, "input_length": 512, "hash_ids": [1, 2]}', "line 2: input_length 512 does not fit 2 hash_ids"),
    ('{"timestamp": 0, "input_length": 10, "hash_ids": [-1]}', "line 2: hash_ids holds -1"),
    ('{"input_length": 10}', 'line 2: no "timestamp"'),
    ('{"timestamp": -5, "input_length": 10}', "line 2: timestamp -5 is negative"),
    ('{"timestamp": 1, "input_length": 0}', "line 2: input_length is 0"),
    ('{"timestamp": 1, "input_length": 4, "output_length": 0}', "line 2: output_length is 0"),
    ('{"timestamp": 1, "output_length": 4}', 'line 2: neither "input_length" nor "input_text"'),
    ('{"timestamp": "soon", "input_length": 4}', "line 2: timestamp 'soon' is not a number"),
    ('{"timestamp": 1, "input_length": 4', "line 2: not a JSON object"),
    ('[1, 2]', "line 2: not a JSON object"),
    ('{"timestamp": NaN, "input_length": 4}', "line 2: not a JSON object"),
])
def test_mooncake_errors_name_the_line(tmp_path, line, where):
    path = _write(tmp_path, "bad.jsonl", '{"timestamp": 0, "input_length": 8}\n' + line + "\n")
    with pytest.raises(AtcError) as exc:
        read_trace(path)
    assert exc.value.code == "E13003" and path in str(exc.value) and where in str(exc.value)


def test_an_unknown_suffix_or_missing_file(tmp_path):
    with pytest.raises(AtcError) as exc:
        read_trace(_write(tmp_path, "t.txt", "x"))
    assert exc.value.code == "E10001" and "--trace" in str(exc.value)
    with pytest.raises(AtcError, match="E13003"):
        read_trace(str(tmp_path / "absent.csv"))
