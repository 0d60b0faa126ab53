"""Reading a small file the user names on the command line (a JSON config, a plugin list, an .om for --mode):
it must be a regular file (a FIFO would block, /dev/zero never ends) of at most max_bytes, and its text must
parse; every problem goes through the caller's `fail(reason)`, which builds the caller's error code."""
from __future__ import annotations

import json
import os
import stat
from typing import Callable

from .errors import AtcError

Fail = Callable[[str], AtcError]


def read_bytes(path: str, fail: Fail, max_bytes: int) -> bytes:
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:
        raise fail(getattr(exc, "strerror", None) or str(exc)) from None
    if not stat.S_ISREG(st.st_mode):
        raise fail("it is not a regular file")
    if st.st_size > max_bytes:
        raise fail(f"the file has {st.st_size} bytes (limit {max_bytes})")
    try:
        with open(path, "rb") as f:
            return f.read(st.st_size)
    except OSError as exc:
        raise fail(exc.strerror or str(exc)) from None


def _no_constants(name: str):
    raise ValueError(f"{name} is not a JSON number")


def read_json(path: str, fail: Fail, max_bytes: int = 1 << 20):
    """The parsed JSON of a regular file; NaN/Infinity, bad UTF-8 and nesting beyond Python's stack are errors."""
    data = read_bytes(path, fail, max_bytes)
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        raise fail(f"the file is not valid JSON: {str(exc)[:200]}") from None
