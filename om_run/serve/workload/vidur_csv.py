"""Vidur's trace CSV (microsoft/vidur, vidur/request_generator/trace_replay_request_generator.py; its
data/processed_traces/splitwise_conv.csv starts `arrived_at,num_prefill_tokens,num_decode_tokens` / `0.0,374,44`):
one request a row, arrived_at in seconds, the prompt's tokens and the tokens generated. A header is required."""
from __future__ import annotations

import csv
import io

import numpy as np

from ..request import Request
from .checks import bad_file
from .trace_values import Row, random_ids

COLUMNS = ("arrived_at", "num_prefill_tokens", "num_decode_tokens")


def vidur_rows(text: str, path: str, seed: int, vocab_size: int | None) -> list[Request]:
    """The rows in file order, ids not yet given."""
    reader = csv.reader(io.StringIO(text, newline=""))
    lines = _records(reader, path)
    header = next(lines, None)
    while header is not None and not any(cell.strip() for cell in header):
        header = next(lines, None)
    if header is None:
        raise bad_file(path, "the trace is empty: a header line naming " + ", ".join(COLUMNS) + " is required")
    names = [cell.strip() for cell in header]
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise bad_file(path, f"line {reader.line_num}: the header lacks column(s) {', '.join(missing)} "
                             f"(Vidur's trace has {', '.join(COLUMNS)})")
    at = [names.index(c) for c in COLUMNS]
    rng = np.random.default_rng(seed)
    rows = []
    for cells in lines:
        if not any(cell.strip() for cell in cells):
            continue
        row = Row(path, reader.line_num)
        if len(cells) != len(names):
            raise row.error(f"{len(cells)} fields where the header names {len(names)}")
        arrival = row.seconds(cells[at[0]].strip(), COLUMNS[0])
        prompt_len = row.tokens(cells[at[1]].strip(), COLUMNS[1])
        output_len = row.tokens(cells[at[2]].strip(), COLUMNS[2])
        rows.append(Request("", arrival, prompt_len, output_len, random_ids(rng, prompt_len, vocab_size)))
    return rows


def _records(reader, path: str):
    """The reader's records; a CSV syntax error (a NUL byte, a field past the size limit) names its line."""
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise bad_file(path, f"line {reader.line_num}: {exc}") from None
        yield cells
