"""build(WorkloadSpec): vllm bench serve's defaults, a dataset timed by the rate, a trace at its own times, and the
flag combinations vLLM refuses."""
import json
import math

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.workload import WorkloadSpec, build
from om_run.serve.workload.arrivals import arrival_times


def test_vllm_defaults_1000_random_requests_all_at_zero():
    reqs = build(WorkloadSpec())
    assert len(reqs) == 1000 and {(r.prompt_len, r.output_len, r.arrival_s) for r in reqs} == {(1024, 128, 0.0)}
    assert [r.request_id for r in reqs] == [str(i) for i in range(1000)]
    assert all(r.prompt_ids is None for r in reqs)


def test_a_dataset_is_timed_by_the_rate_with_the_seed(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"id": str(i), "conversations": [{"from": "human", "value": "hello there " * (i + 2)},
                                                                 {"from": "gpt", "value": "fine thanks " * 3}]}
                                for i in range(8)]))
    reqs = build(WorkloadSpec(dataset_name="sharegpt", dataset_path=str(path), num_prompts=8, request_rate=2.0,
                              seed=5, vocab_size=100))
    assert [r.arrival_s for r in reqs] == arrival_times(8, 2.0, 1.0, seed=5)
    assert math.isclose(reqs[-1].arrival_s, 4.0) and all(len(r.prompt_ids) == r.prompt_len for r in reqs)


def test_a_trace_keeps_its_times(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n3,10,2\n1,20,4\n")
    reqs = build(WorkloadSpec(trace=str(path)))
    assert [(r.request_id, r.arrival_s, r.prompt_len) for r in reqs] == [("0", 1.0, 20), ("1", 3.0, 10)]


@pytest.mark.parametrize("kwargs, flag", [
    (dict(dataset_name="sonnet"), "--dataset-name"),
    (dict(dataset_name="sharegpt"), "--dataset-path"),
    (dict(dataset_path="x.json"), "--dataset-path"),             # vLLM: the random dataset reads no file
    (dict(trace="t.csv", request_rate=5.0), "--request-rate"),
    (dict(trace="t.csv", dataset_name="sharegpt"), "--dataset-name"),
    (dict(trace="t.csv", dataset_path="s.json"), "--dataset-path"),
    (dict(seed=-1), "--seed"),
    (dict(seed=1 << 32), "--seed"),
    (dict(request_rate=0.0), "--request-rate"),
    (dict(burstiness=0.0), "--burstiness"),
    (dict(vocab_size=0), "vocab_size"),
    (dict(num_prompts=0), "--num-prompts"),
])
def test_refused_combinations_name_the_flag(kwargs, flag):
    with pytest.raises(AtcError) as exc:
        build(WorkloadSpec(**kwargs))
    assert exc.value.code == "E10001" and flag in str(exc.value)
