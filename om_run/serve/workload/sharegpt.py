"""`vllm bench serve --dataset-name sharegpt --dataset-path FILE`: the prompts and answer lengths of real chats.

The file is ShareGPT_V3's JSON: a list of {"id", "conversations": [{"from": "human" | "gpt", "value": TEXT}, ...]}.
vLLM's ShareGPTDataset (vllm/benchmarks/datasets, main read in 2026; the same rules as benchmark_serving.py's
sample_sharegpt_requests before it), step by step:
  1. keep the entries with a "conversations" list of >= 2 turns, in file order;
  2. random.seed(--seed); random.shuffle(entries) -- Python's Mersenne Twister, so the order here is vLLM's;
  3. walk the shuffled entries until --num-prompts are taken: prompt = turn 0's value, completion = turn 1's
     (by position: vLLM does not look at "from"), prompt_len = tokens of the prompt, output_len = tokens of the
     completion or --sharegpt-output-len; skip the pair unless is_valid_sequence: prompt_len >= 4, output_len >= 4
     (not checked with --sharegpt-output-len), prompt_len <= 1024 and prompt_len + output_len <= 2048;
  4. too few: random.seed(--seed) again and random.choice among the taken ones for each missing request (the ids
     go on after the last taken one).
The one difference is the token counts: token_count.py's rule stands in for the model's tokenizer (no BOS added),
so the filter of step 3 decides a few borderline chats differently (see token_count.py for the measured bias)."""
from __future__ import annotations

import random

from atc_py.common.userfiles import read_json

from ..request import Request
from .checks import bad_file, bad_flag
from .token_count import count_tokens, token_ids

MIN_LEN, MAX_PROMPT_LEN, MAX_TOTAL_LEN = 4, 1024, 2048      # vLLM's is_valid_sequence defaults
MAX_FILE_BYTES = 4 << 30                                    # ShareGPT_V3_unfiltered_cleaned_split.json is ~0.7 GB


def is_valid_sequence(prompt_len: int, output_len: int, skip_min_output_len_check: bool) -> bool:
    """vLLM's filter: neither side too short (the output's check off when its length is given), nor too long."""
    return (prompt_len >= MIN_LEN and (skip_min_output_len_check or output_len >= MIN_LEN)
            and prompt_len <= MAX_PROMPT_LEN and prompt_len + output_len <= MAX_TOTAL_LEN)


def _conversations(data: object, path: str) -> list[list]:
    """Step 1: each kept entry's turns."""
    if not isinstance(data, list):
        raise bad_file(path, "a ShareGPT file is a JSON list of conversations, this one is not a list")
    kept = []
    for n, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise bad_file(path, f"entry [{n}] is not a JSON object")
        turns = entry.get("conversations")
        if turns is None:
            continue
        if not isinstance(turns, list):
            raise bad_file(path, f"entry [{n}] (id {entry.get('id')!r}): \"conversations\" is not a list")
        if len(turns) >= 2:
            kept.append((n, entry.get("id"), turns))
    return kept


def _text(path: str, n: int, conv_id: object, turns: list, k: int) -> str:
    turn = turns[k]
    value = turn.get("value") if isinstance(turn, dict) else None
    if not isinstance(value, str):
        raise bad_file(path, f"entry [{n}] (id {conv_id!r}): turn {k} has no text \"value\"")
    return value


def sharegpt_requests(path: str, num_prompts: int, seed: int = 0, output_len: int | None = None,
                      vocab_size: int | None = None) -> list[Request]:
    """`num_prompts` requests "0", "1", ... all arriving at 0 (arrivals.py times them), in vLLM's order."""
    if num_prompts < 1:
        raise bad_flag("--num-prompts", num_prompts, "at least one request is needed")
    if output_len is not None and output_len < 1:
        raise bad_flag("--sharegpt-output-len", output_len, "a request must ask for at least one token")
    kept = _conversations(read_json(path, lambda why: bad_file(path, why), MAX_FILE_BYTES), path)
    rng = random.Random(seed)
    rng.shuffle(kept)
    taken: list[Request] = []
    for n, conv_id, turns in kept:
        if len(taken) >= num_prompts:
            break
        prompt = _text(path, n, conv_id, turns, 0)
        prompt_len = count_tokens(prompt)
        new_output_len = count_tokens(_text(path, n, conv_id, turns, 1)) if output_len is None else output_len
        if not is_valid_sequence(prompt_len, new_output_len, output_len is not None):
            continue
        ids = token_ids(prompt, vocab_size) if vocab_size is not None else None
        taken.append(Request(str(len(taken)), 0.0, prompt_len, new_output_len, ids))
    if not taken:
        raise bad_file(path, f"none of its {len(kept)} conversations of two turns or more passes vLLM's length "
                             f"filter (prompt {MIN_LEN}..{MAX_PROMPT_LEN} tokens, prompt + output <= {MAX_TOTAL_LEN})")
    sampled = list(taken)                               # vLLM chooses among these, never among the copies
    rng.seed(seed)
    for _ in range(num_prompts - len(sampled)):
        pick = rng.choice(sampled)
        taken.append(Request(str(len(taken)), 0.0, pick.prompt_len, pick.output_len, pick.prompt_ids))
    return taken
