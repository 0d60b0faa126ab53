"""The workloads' error messages: a bad flag value is GE's E10001 naming the flag, a file that cannot be read or
has a malformed row is E13003 naming the file (and the row's line): one line for the user, never a traceback."""
from __future__ import annotations

import math

from atc_py.common.errors import AtcError


def bad_flag(flag: str, value: object, reason: str) -> AtcError:
    return AtcError("E10001", value=value, parameter=flag, reason=reason)


def bad_file(path: str, reason: str) -> AtcError:
    return AtcError("E13003", file=path, errmsg=reason)


def whole_number(value: object) -> int | None:
    """`value` as an int when it is one (an integral float too, as pandas writes ints); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            try:
                return whole_number(float(value))
            except ValueError:
                return None
    return None


def check_seed(seed: object) -> None:
    """numpy's legacy generator (vLLM's arrivals) takes 0 <= seed < 2**32."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 32:
        raise bad_flag("--seed", seed, "the seed must be an integer in [0, 2**32)")
