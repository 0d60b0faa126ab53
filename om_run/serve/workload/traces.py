"""`--trace FILE`: replay recorded requests at their own arrival times (the file's suffix picks the format).

  - .csv: Vidur's trace (microsoft/vidur, TraceReplayRequestGenerator and data/processed_traces/*.csv): a header
    naming arrived_at, num_prefill_tokens, num_decode_tokens (any order; other columns ignored), one request a
    row; arrived_at in seconds, num_prefill_tokens the prompt's tokens, num_decode_tokens the tokens it generates.
  - .jsonl: AISBench's Mooncake trace (AISBench/benchmark, datasets/mooncake_trace.py and its README), one JSON
    object a line: "timestamp" (milliseconds, >= 0), "input_length" (prompt tokens) or "input_text" (a prompt,
    counted by token_count.py), "output_length" (default 1, as AISBench), "hash_ids" (optional: ids of the prompt's
    512-token blocks; prompts naming the same id share that block, so the prefix cache sees what Mooncake saw).

Both tools sort by arrival (AISBench sorts its prompts by timestamp; Vidur's event queue orders them by time), so
rows may come in any order: the requests are sorted by arrival (ties keep the file's order) and numbered "0", "1",
... in that order. Times are taken as they are, not shifted to start at 0. A row that is malformed, has a negative
or non-finite time, or asks for zero tokens is an error naming its line (Vidur would clip tokens up to 1, AISBench
turns an output_length of 0 into 1: here they are refused, a request of no token measures nothing). Vidur's
max_tokens cap and scale factors are not applied: the engine refuses a request too long for the model itself."""
from __future__ import annotations

import dataclasses
import os

from atc_py.common.userfiles import read_bytes

from ..request import Request
from .checks import bad_file, bad_flag
from .mooncake_jsonl import mooncake_rows
from .vidur_csv import vidur_rows

MAX_FILE_BYTES = 2 << 30


def read_trace(path: str, seed: int = 0, vocab_size: int | None = None,
               num_prompts: int | None = None) -> list[Request]:
    """The trace's requests sorted by arrival, the first `num_prompts` of them when it is given."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in (".csv", ".jsonl"):
        raise bad_flag("--trace", path, "a trace is a Vidur .csv or an AISBench (Mooncake) .jsonl file")
    if num_prompts is not None and num_prompts < 1:
        raise bad_flag("--num-prompts", num_prompts, "at least one request is needed")
    data = read_bytes(path, lambda why: bad_file(path, why), MAX_FILE_BYTES)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise bad_file(path, f"the file is not UTF-8 text (byte {exc.start})") from None
    rows = vidur_rows(text, path, seed, vocab_size) if suffix == ".csv" else mooncake_rows(text, path, seed, vocab_size)
    if not rows:
        raise bad_file(path, "the trace has no request")
    rows.sort(key=lambda r: r.arrival_s)            # stable: ties keep the file's order
    if num_prompts is not None:
        rows = rows[:num_prompts]
    return [dataclasses.replace(r, request_id=str(i)) for i, r in enumerate(rows)]
