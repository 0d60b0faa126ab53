"""One field of a trace row, checked: where it is wrong the error names the file, the line and the field."""
from __future__ import annotations

import math

import numpy as np

from atc_py.common.errors import AtcError

from .checks import bad_file, whole_number


class Row:
    """Where a row is (file and 1-based line), to name it in an error."""

    def __init__(self, path: str, line: int) -> None:
        self.path, self.line = path, line

    def error(self, reason: str) -> AtcError:
        return bad_file(self.path, f"line {self.line}: {reason}")

    def seconds(self, value: object, field: str, per_second: float = 1.0) -> float:
        """A time in the file's unit (`per_second` of them a second) as seconds: finite and >= 0."""
        number = value
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise self.error(f"{field} {value!r} is not a number") from None
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise self.error(f"{field} {value!r} is not a number")
        if not math.isfinite(number):
            raise self.error(f"{field} {value!r} is not a finite time")
        if number < 0:
            raise self.error(f"{field} {value!r} is negative: a request cannot arrive before the start")
        return float(number) / per_second

    def tokens(self, value: object, field: str) -> int:
        """A token count: a whole number >= 1."""
        count = whole_number(value)
        if count is None:
            raise self.error(f"{field} {value!r} is not a whole number of tokens")
        if count < 1:
            raise self.error(f"{field} is {count}: a request needs at least one token there")
        return count


def random_ids(rng: np.random.Generator, count: int, vocab_size: int | None) -> tuple[int, ...] | None:
    """Prompt tokens for a request the trace gives only a length for (distinct prompts, no shared prefix)."""
    return None if vocab_size is None else tuple(rng.integers(0, vocab_size, size=count).tolist())
