"""`vllm bench serve --dataset-name random`: prompts of random token ids with lengths drawn around the asked ones.

Semantics of vLLM's RandomDataset as vLLM main has it (vllm/benchmarks/datasets/utils.py get_sampling_params and
datasets.py RandomDataset.sample, read in 2026; the range symmetric since PR #16126, April 2025, the floor/ceil
bounds and the output floor of 1 later; one float ratio here, not main's {"input", "output"} pair): with
r = --random-range-ratio in [0, 1), each request's input length is drawn uniformly from the integers
[floor(L*(1-r)), ceil(L*(1+r))] for L = --random-input-len, its output length from
[max(1, floor(O*(1-r))), max(1, ceil(O*(1+r)))] for O = --random-output-len, and the prompt is --random-prefix-len
shared tokens followed by the drawn length. The older benchmarks/benchmark_serving.py drew input lengths from
[L*r, L] and outputs from [O*r, O] (r = 1 meant fixed lengths, and the mean was below L).

Draw order, from one numpy.random.default_rng(--seed) as vLLM's: all input lengths, all output lengths, one vocab
offset per request, then the prefix. Token ids: the prefix is `prefix_len` draws from the vocabulary, request i's
own tokens are (offset_i + i + k) mod vocab_size, k = 0.. as vLLM builds them. vLLM then decodes and re-encodes the
text (its lengths can move by a token or two, its special tokens are left out of the vocabulary, and
num_special_tokens_to_add() is taken off L): with no tokenizer here, the ids and lengths are the drawn ones."""
from __future__ import annotations

import math

import numpy as np

from ..request import Request
from .checks import bad_flag

DEFAULT_INPUT_LEN = 1024
DEFAULT_OUTPUT_LEN = 128
DEFAULT_RANGE_RATIO = 0.0
DEFAULT_PREFIX_LEN = 0


def length_bounds(length: int, range_ratio: float, at_least: int = 0) -> tuple[int, int]:
    """The inclusive integer range vLLM draws a length from."""
    low = max(math.floor(length * (1 - range_ratio)), at_least)
    high = max(math.ceil(length * (1 + range_ratio)), at_least)
    return low, high


def _check(num_prompts: int, input_len: int, output_len: int, range_ratio: float, prefix_len: int) -> None:
    if num_prompts < 1:
        raise bad_flag("--num-prompts", num_prompts, "at least one request is needed")
    if not 0.0 <= range_ratio < 1.0:        # also NaN
        raise bad_flag("--random-range-ratio", range_ratio, "it must be in [0, 1) (vLLM's symmetric range)")
    for flag, value in (("--random-input-len", input_len), ("--random-output-len", output_len),
                        ("--random-prefix-len", prefix_len)):
        if value < 0:
            raise bad_flag(flag, value, "a token count cannot be negative")
    if prefix_len + length_bounds(input_len, range_ratio)[0] < 1:
        raise bad_flag("--random-input-len", input_len, f"with --random-range-ratio {range_ratio} and "
                       f"--random-prefix-len {prefix_len} a prompt could have no token")


def random_requests(num_prompts: int, input_len: int = DEFAULT_INPUT_LEN, output_len: int = DEFAULT_OUTPUT_LEN,
                    range_ratio: float = DEFAULT_RANGE_RATIO, prefix_len: int = DEFAULT_PREFIX_LEN, seed: int = 0,
                    vocab_size: int | None = None) -> list[Request]:
    """`num_prompts` requests "0", "1", ... all arriving at 0 (arrivals.py times them); prompt_ids only with a
    vocab_size."""
    _check(num_prompts, input_len, output_len, range_ratio, prefix_len)
    rng = np.random.default_rng(seed)
    in_low, in_high = length_bounds(input_len, range_ratio)
    out_low, out_high = length_bounds(output_len, range_ratio, at_least=1)
    input_lens = rng.integers(in_low, in_high + 1, size=num_prompts)
    output_lens = rng.integers(out_low, out_high + 1, size=num_prompts)
    ids: list[tuple[int, ...] | None] = [None] * num_prompts
    if vocab_size is not None:
        if vocab_size < 1:
            raise bad_flag("vocab_size", vocab_size, "the vocabulary must have at least one token")
        offsets = rng.integers(0, vocab_size, size=num_prompts)
        prefix = rng.integers(0, vocab_size, size=prefix_len).tolist() if prefix_len > 0 else []
        for i in range(num_prompts):
            own = (int(offsets[i]) + i + np.arange(int(input_lens[i]))) % vocab_size
            ids[i] = tuple(prefix + own.tolist())
    return [Request(str(i), 0.0, prefix_len + int(input_lens[i]), int(output_lens[i]), ids[i])
            for i in range(num_prompts)]
