"""vllm bench serve's random dataset: lengths drawn from vLLM's symmetric integer ranges, in vLLM's draw order,
reproducible from the seed; the prefix shared; bad flags are E10001 naming the flag."""
import math

import numpy as np
import pytest

from atc_py.common.errors import AtcError
from om_run.serve.workload.random_dataset import length_bounds, random_requests


def test_lengths_fall_in_vllms_symmetric_range_and_repeat_with_the_seed():
    reqs = random_requests(2000, input_len=1000, output_len=100, range_ratio=0.3, seed=7)
    ins = [r.prompt_len for r in reqs]
    outs = [r.output_len for r in reqs]
    assert min(ins) >= 700 and max(ins) <= 1300 and min(outs) >= 70 and max(outs) <= 130
    assert min(ins) < 720 and max(ins) > 1280               # the range is used to its ends (2000 uniform draws)
    assert abs(np.mean(ins) - 1000) < 15                    # centred on the asked length (old vLLM: below it)
    assert [r.request_id for r in reqs] == [str(i) for i in range(2000)]
    assert all(r.arrival_s == 0.0 for r in reqs)
    again = random_requests(2000, input_len=1000, output_len=100, range_ratio=0.3, seed=7)
    assert [(r.prompt_len, r.output_len) for r in again] == list(zip(ins, outs))
    other = random_requests(2000, input_len=1000, output_len=100, range_ratio=0.3, seed=8)
    assert [r.prompt_len for r in other] != ins


def test_bounds_are_floor_and_ceil_and_the_output_is_at_least_one():
    assert length_bounds(1024, 0.0) == (1024, 1024)
    assert length_bounds(10, 0.25) == (7, 13)               # floor(7.5), ceil(12.5)
    assert length_bounds(0, 0.5, at_least=1) == (1, 1)
    assert {r.output_len for r in random_requests(50, input_len=8, output_len=0)} == {1}
    fixed = random_requests(20)                             # vLLM's defaults: 1024 in, 128 out, ratio 0
    assert {(r.prompt_len, r.output_len) for r in fixed} == {(1024, 128)}


def test_the_draws_are_vllms_in_vllms_order():
    """One default_rng(seed): input lengths, output lengths, offsets, then the prefix; request i's own tokens are
    (offset_i + i + k) mod vocab (vLLM's RandomDataset with a tokenizer of no special token)."""
    n, vocab, prefix = 6, 5000, 4
    reqs = random_requests(n, input_len=40, output_len=10, range_ratio=0.5, prefix_len=prefix, seed=3,
                           vocab_size=vocab)
    rng = np.random.default_rng(3)
    ins = rng.integers(math.floor(40 * 0.5), math.ceil(40 * 1.5) + 1, size=n)
    outs = rng.integers(5, 15 + 1, size=n)
    offsets = rng.integers(0, vocab, size=n)
    head = rng.integers(0, vocab, size=prefix).tolist()
    for i, r in enumerate(reqs):
        assert r.prompt_len == prefix + ins[i] and r.output_len == outs[i]
        own = [(int(offsets[i]) + i + k) % vocab for k in range(int(ins[i]))]
        assert list(r.prompt_ids) == head + own


def test_prompt_ids_only_with_a_vocabulary():
    assert all(r.prompt_ids is None for r in random_requests(3, input_len=16))
    reqs = random_requests(3, input_len=16, prefix_len=5, vocab_size=100)
    assert all(len(r.prompt_ids) == r.prompt_len == 21 for r in reqs)
    assert all(0 <= t < 100 for r in reqs for t in r.prompt_ids)
    assert len({r.prompt_ids[:5] for r in reqs}) == 1       # the prefix is shared
    assert len({r.prompt_ids[5:] for r in reqs}) == 3       # the rest is not


@pytest.mark.parametrize("kwargs, flag", [
    (dict(range_ratio=1.0), "--random-range-ratio"),
    (dict(range_ratio=-0.1), "--random-range-ratio"),
    (dict(range_ratio=float("nan")), "--random-range-ratio"),
    (dict(input_len=-1), "--random-input-len"),
    (dict(output_len=-5), "--random-output-len"),
    (dict(prefix_len=-2), "--random-prefix-len"),
    (dict(input_len=0), "--random-input-len"),              # a prompt of no token
    (dict(input_len=1, range_ratio=0.5), "--random-input-len"),
])
def test_bad_flags_name_the_flag(kwargs, flag):
    with pytest.raises(AtcError) as exc:
        random_requests(4, **kwargs)
    assert exc.value.code == "E10001" and flag in str(exc.value)


def test_a_prefix_alone_is_a_prompt_and_no_request_is_an_error():
    assert {r.prompt_len for r in random_requests(3, input_len=0, prefix_len=5)} == {5}
    with pytest.raises(AtcError, match="--num-prompts"):
        random_requests(0)
