"""`om-run serve --load-format auto` on tiny random-weight Hugging Face models: every request's tokens equal
transformers' greedy tokens for its prompt alone (tests/data/serve/*/expected.json, written by
tools/real_models/serve_models.py), while the engine batches them with chunked prefills beside decodes and a tiny
KV cache forces preemption and recompute."""
from __future__ import annotations

import json

import pytest

from om_run.serve.command import parse_flags
from om_run.serve.request import Request
from om_run.serve.session import prepare, simulate
from tests.helpers import ROOT

DATA = ROOT / "tests" / "data" / "serve"


def run_expected(name: str, *args: str):
    expected = json.loads((DATA / name / "expected.json").read_text())
    flags = parse_flags([DATA / name, "--load-format", "auto", "--max-model-len", "40", "--no-progress",
                         "--step-time", "direct", *args])
    prep = prepare(flags, out=lambda line: None)
    reqs = [Request(str(k), 0.001 * k, len(p), len(t), tuple(p))
            for k, (p, t) in enumerate(zip(expected["prompts"], expected["tokens"]))]
    seen = {}
    sample = prep.runner.sample

    def recording(plan):
        out = sample(plan)
        for seq, tok in out.items():
            seen.setdefault(seq.request.request_id, []).append(tok)
        return out
    prep.runner.sample = recording
    res = simulate(prep, reqs, None, progress=False)
    return expected, seen, res


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["llama", "qwen2", "qwen3"])
def test_chunked_batches_with_preemption_give_transformers_tokens(name):
    # V0 with chunked prefill (an 8-token budget splits every prompt), 4-token blocks, 12 blocks for 4 requests of
    # up to 31 tokens: running requests are preempted and recomputed
    expected, seen, res = run_expected(name, "--scheduler-version", "v0", "--enable-chunked-prefill",
                                       "--max-num-batched-tokens", "8", "--max-num-seqs", "4", "--block-size", "4",
                                       "--num-gpu-blocks-override", "12")
    assert res.preemptions > 0
    assert any(s.num_prefill_tokens and s.num_decode_tokens for s in res.steps)     # chunks beside decodes
    assert all(r.success for r in res.records)
    for k, want in enumerate(expected["tokens"]):
        assert seen[str(k)] == want          # a recomputed request's prefill samples only its next new token


@pytest.mark.heavy
def test_v1_mixed_steps_give_transformers_tokens():
    # V1 (vllm-ascend gives it 128-token blocks): a 6-token budget chunks the prompts beside the running decodes
    expected, seen, res = run_expected("qwen2", "--scheduler-version", "v1", "--max-num-batched-tokens", "6",
                                       "--max-num-seqs", "4", "--num-gpu-blocks-override", "16")
    assert any(s.num_prefill_tokens and s.num_decode_tokens for s in res.steps)
    for k, want in enumerate(expected["tokens"]):
        assert seen[str(k)] == want


@pytest.mark.heavy
def test_v0_prefill_steps_and_decode_steps_give_transformers_tokens():
    expected, seen, res = run_expected("llama", "--scheduler-version", "v0", "--block-size", "4",
                                       "--max-num-seqs", "3", "--num-gpu-blocks-override", "32")
    assert all(not (s.num_prefill_tokens and s.num_decode_tokens) for s in res.steps)   # V0: never mixed
    for k, want in enumerate(expected["tokens"]):
        assert seen[str(k)] == want


@pytest.mark.heavy
@pytest.mark.parametrize("tp", [2, 4])
def test_tensor_parallel_ranks_give_the_tp1_tokens(tp):
    """Each rank its heads (TP 4: the two key/value heads copied to two ranks each), MLP and vocabulary slices, the
    all-reduces and the logits' all-gather computed over the world of ranks: the same greedy tokens."""
    expected, seen, res = run_expected("qwen2", "--scheduler-version", "v0", "--block-size", "4",
                                       "--max-num-seqs", "2", "--tensor-parallel-size", str(tp),
                                       "--num-gpu-blocks-override", "24")
    for k, want in enumerate(expected["tokens"]):
        assert seen[str(k)] == want
    assert res.steps and all(s.collectives for s in res.steps)
