"""AISBench's timestamped trace, the Mooncake trace JSONL (AISBench/benchmark: ais_bench/benchmark/datasets/
mooncake_trace.py and configs/datasets/mooncake_trace/README_en.md). One JSON object a line; blank lines skipped:
  timestamp      number >= 0, milliseconds (required here: a replay needs every arrival; AISBench keeps rows
                 without one outside its timestamp schedule)
  input_length   prompt tokens, >= 1 (required unless input_text is given)
  input_text     a literal prompt: its tokens are counted by token_count.py, input_length and hash_ids are ignored
  output_length  tokens to generate, >= 1; absent means 1 (AISBench's `output_length or 1`)
  hash_ids       optional list of ints >= 0, one per 512-token block of the prompt: with n ids, input_length must be
                 in [(n-1)*512 + 1, n*512] (AISBench's check); the same id is the same block of tokens
Other keys (Mooncake's output fields, Bailian's chat_id ...) are ignored."""
from __future__ import annotations

import json

import numpy as np

from ..request import Request
from .token_count import count_tokens, token_ids
from .trace_values import Row, random_ids

BLOCK_SIZE = 512            # AISBench's (and Mooncake's) tokens per hash_id


def _no_constants(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _block_ids(row: Row, hash_ids: object, prompt_len: int) -> list[int]:
    if not isinstance(hash_ids, list) or not hash_ids:
        raise row.error(f"hash_ids {hash_ids!r} is not a non-empty list of block ids")
    for h in hash_ids:
        if isinstance(h, bool) or not isinstance(h, int) or h < 0:
            raise row.error(f"hash_ids holds {h!r}: a block id is an integer >= 0")
    last = prompt_len - (len(hash_ids) - 1) * BLOCK_SIZE
    if not 0 < last <= BLOCK_SIZE:
        raise row.error(f"input_length {prompt_len} does not fit {len(hash_ids)} hash_ids of {BLOCK_SIZE} tokens "
                        f"(it must be in [{(len(hash_ids) - 1) * BLOCK_SIZE + 1}, {len(hash_ids) * BLOCK_SIZE}])")
    return hash_ids


def _block_tokens(seed: int, block_id: int, vocab_size: int) -> tuple[int, ...]:
    """The 512 tokens of a block: fixed by the seed and the id alone, whichever request names it first."""
    return tuple(np.random.default_rng((seed, block_id)).integers(0, vocab_size, size=BLOCK_SIZE).tolist())


class _Prompts:
    """A row's prompt: its length and, with a vocabulary, its tokens (random, or the named blocks' tokens)."""

    def __init__(self, seed: int, vocab_size: int | None) -> None:
        self.seed, self.vocab_size = seed, vocab_size
        self.rng = np.random.default_rng(seed)          # the prompts with neither text nor hash_ids, in file order
        self.blocks: dict[int, tuple[int, ...]] = {}     # one copy of each block's tokens, shared by the prompts

    def of(self, row: Row, obj: dict) -> tuple[int, tuple[int, ...] | None]:
        text = obj.get("input_text")
        if text is not None:
            if not isinstance(text, str):
                raise row.error("input_text is not a string")
            if count_tokens(text) < 1:
                raise row.error("input_text has no token")
            return count_tokens(text), None if self.vocab_size is None else token_ids(text, self.vocab_size)
        if obj.get("input_length") is None:
            raise row.error("neither \"input_length\" nor \"input_text\": the prompt is unknown")
        length = row.tokens(obj["input_length"], "input_length")
        if not obj.get("hash_ids"):
            return length, random_ids(self.rng, length, self.vocab_size)
        named = _block_ids(row, obj["hash_ids"], length)
        if self.vocab_size is None:
            return length, None
        for b in named:
            if b not in self.blocks:
                self.blocks[b] = _block_tokens(self.seed, b, self.vocab_size)
        return length, tuple(t for b in named for t in self.blocks[b])[:length]


def mooncake_rows(text: str, path: str, seed: int, vocab_size: int | None) -> list[Request]:
    """The rows in file order, ids not yet given."""
    prompts = _Prompts(seed, vocab_size)
    rows = []
    for line_no, line in enumerate(text.split("\n"), start=1):     # not splitlines: JSON may hold a raw U+2028
        if not line.strip():
            continue
        row = Row(path, line_no)
        try:
            obj = json.loads(line, parse_constant=_no_constants)
        except (ValueError, RecursionError) as exc:
            raise row.error(f"not a JSON object: {str(exc)[:200]}") from None
        if not isinstance(obj, dict):
            raise row.error("not a JSON object")
        if obj.get("timestamp") is None:
            raise row.error("no \"timestamp\": a replay needs each request's arrival (milliseconds)")
        arrival = row.seconds(obj["timestamp"], "timestamp", per_second=1000.0)
        raw_out = obj.get("output_length")
        output_len = 1 if raw_out is None else row.tokens(raw_out, "output_length")
        prompt_len, ids = prompts.of(row, obj)
        rows.append(Request("", arrival, prompt_len, output_len, ids))
    return rows
