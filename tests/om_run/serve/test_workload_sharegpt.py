"""vllm bench serve's ShareGPT dataset on a small synthetic file of ShareGPT_V3's schema: vLLM's filters (>= 2 turns;
prompt 4..1024 tokens, output >= 4 unless --sharegpt-output-len, prompt + output <= 2048), its shuffle and its
oversampling with Python's random seeded by --seed. Each text is n copies of "word": n tokens by token_count.py's
rule ("word", " word", ...), so the counts below are checked by hand."""
import json
import random

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.workload.sharegpt import sharegpt_requests


def words(n):
    return " ".join(["word"] * n)


def chat(conv_id, *turn_lengths, first="human"):
    roles = [first, "gpt" if first == "human" else "human"]
    return {"id": conv_id, "conversations": [{"from": roles[k % 2], "value": words(n)}
                                             for k, n in enumerate(turn_lengths)]}


ENTRIES = [
    chat("A", 10, 20),              # valid
    chat("B", 10),                  # one turn: dropped before the shuffle
    {"id": "C"},                    # no conversations: dropped
    chat("D", 3, 50),               # prompt too short
    chat("E", 10, 3),               # output too short (valid with --sharegpt-output-len)
    chat("F", 1025, 10),            # prompt too long
    chat("G", 1000, 1049),          # prompt + output 2049 > 2048
    chat("H", 1000, 1048, 7),       # 2048: valid (a third turn is ignored)
    chat("I", 4, 4),                # the boundaries: valid
    chat("J", 6, 7, first="gpt"),   # vLLM takes turns 0 and 1 by position, whoever speaks: valid
]
LENGTHS = {"A": (10, 20), "D": (3, 50), "E": (10, 3), "F": (1025, 10), "G": (1000, 1049), "H": (1000, 1048),
           "I": (4, 4), "J": (6, 7)}
VALID = {"A", "H", "I", "J"}


@pytest.fixture
def sharegpt_file(tmp_path):
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(ENTRIES))
    return str(path)


def _vllm_order(seed, valid):
    """The ids vLLM takes: the >= 2-turn entries in file order, random.seed(seed); random.shuffle; the valid ones."""
    kept = [e["id"] for e in ENTRIES if len(e.get("conversations", [])) >= 2]
    random.seed(seed)
    random.shuffle(kept)
    return [c for c in kept if c in valid]


def test_the_filters_keep_four_of_the_ten_in_vllms_order(sharegpt_file):
    reqs = sharegpt_requests(sharegpt_file, num_prompts=4, seed=0)
    assert [r.request_id for r in reqs] == ["0", "1", "2", "3"]
    assert [(r.prompt_len, r.output_len) for r in reqs] == [LENGTHS[c] for c in _vllm_order(0, VALID)]
    assert all(r.arrival_s == 0.0 and r.prompt_ids is None for r in reqs)
    first_two = sharegpt_requests(sharegpt_file, num_prompts=2, seed=0)
    assert [(r.prompt_len, r.output_len) for r in first_two] == [LENGTHS[c] for c in _vllm_order(0, VALID)[:2]]


def test_another_seed_another_order(sharegpt_file):
    orders = {tuple(r.prompt_len for r in sharegpt_requests(sharegpt_file, 4, seed=s)) for s in range(6)}
    assert len(orders) > 1
    for s in range(6):
        got = [(r.prompt_len, r.output_len) for r in sharegpt_requests(sharegpt_file, 4, seed=s)]
        assert got == [LENGTHS[c] for c in _vllm_order(s, VALID)]


def test_too_few_are_oversampled_as_vllm_does(sharegpt_file):
    reqs = sharegpt_requests(sharegpt_file, num_prompts=10, seed=0)
    assert [r.request_id for r in reqs] == [str(i) for i in range(10)]
    sampled = [LENGTHS[c] for c in _vllm_order(0, VALID)]
    random.seed(0)                                  # vLLM: random.seed(seed), then random.choice per missing one
    extra = [random.choice(sampled) for _ in range(6)]
    assert [(r.prompt_len, r.output_len) for r in reqs] == sampled + extra


def test_a_given_output_length_lifts_the_output_checks(sharegpt_file):
    reqs = sharegpt_requests(sharegpt_file, num_prompts=6, seed=1, output_len=50)
    valid = {"A", "E", "G", "H", "I", "J"}          # E's short answer and G's long one no longer count
    assert [r.prompt_len for r in reqs] == [LENGTHS[c][0] for c in _vllm_order(1, valid)]
    assert {r.output_len for r in reqs} == {50}


def test_prompt_ids_follow_the_text(sharegpt_file):
    reqs = sharegpt_requests(sharegpt_file, num_prompts=4, vocab_size=32000)
    assert all(len(r.prompt_ids) == r.prompt_len for r in reqs)
    by_len = {r.prompt_len: r.prompt_ids for r in reqs}
    assert by_len[1000][:10] == by_len[10]          # "word word ..." prompts share their first tokens


@pytest.mark.parametrize("content, message", [
    ({"id": "x"}, "is not a list"),
    ([chat("A", 10, 20), "oops"], "entry [1] is not a JSON object"),
    ([{"id": "z", "conversations": "hello"}], "entry [0] (id 'z'): \"conversations\" is not a list"),
    ([{"id": "y", "conversations": [{"from": "human"}, {"from": "gpt", "value": "x"}]}],
     "entry [0] (id 'y'): turn 0 has no text"),
    ([chat("D", 3, 50), chat("B", 9)], "none of its 1 conversations"),
])
def test_malformed_files_are_named_errors(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    with pytest.raises(AtcError) as exc:
        sharegpt_requests(str(path), num_prompts=3)
    assert exc.value.code == "E13003" and str(path) in str(exc.value) and message in str(exc.value)


def test_a_missing_or_broken_file_is_an_error_not_a_traceback(tmp_path):
    with pytest.raises(AtcError, match="E13003"):
        sharegpt_requests(str(tmp_path / "absent.json"), num_prompts=3)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"id": "a",\n "conversations": [}')
    with pytest.raises(AtcError, match=r"not valid JSON.*line 2"):
        sharegpt_requests(str(broken), num_prompts=3)


@pytest.mark.parametrize("kwargs, flag", [(dict(num_prompts=0), "--num-prompts"),
                                          (dict(num_prompts=2, output_len=0), "--sharegpt-output-len")])
def test_bad_flags(sharegpt_file, kwargs, flag):
    with pytest.raises(AtcError) as exc:
        sharegpt_requests(sharegpt_file, **kwargs)
    assert exc.value.code == "E10001" and flag in str(exc.value)
