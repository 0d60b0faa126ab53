"""Flags real ATC command lines carry that change nothing atc-py builds, parsed and checked like ATC so such a
line converts (and a bad value still fails): --op_debug_level (what TBE keeps of its kernel builds; atc-py builds
no TBE kernels), --enable_scope_fusion_passes (TensorFlow scope fusion; atc-py has none), --device_id (the device
ATC's tuning uses; atc-py compiles without one). The first two are recorded in the .om."""
from __future__ import annotations

import re

from ..common.errors import AtcError
from .flag_table import check_value

MAX_DEVICE_ID = 1 << 16


def op_debug_level(text: str) -> int:
    """0 (default) to 4: the flag's value range (flag_table.py), with the command line's error."""
    if text in ("", "0"):
        return 0
    check_value("op_debug_level", text)
    return int(text)


def scope_fusion_passes(text: str) -> tuple[str, ...]:
    """Pass names, comma-separated (ATC: "multiple names can be set and separated by ','")."""
    if not text:
        return ()
    names = tuple(n.strip() for n in text.split(","))
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)]
    if bad:
        raise AtcError("E10001", value=text, parameter="--enable_scope_fusion_passes",
                       reason=f"{bad[0]!r} is not a pass name; the value is pass names separated by ','.")
    return names


def device_id(text: str) -> int:
    """A device ID: digits only."""
    if text == "":
        return 0
    if not re.fullmatch(r"\d{1,5}", text) or int(text) >= MAX_DEVICE_ID:
        raise AtcError("E10001", value=text, parameter="--device_id",
                       reason="The value must be a device ID, a non-negative integer.")
    return int(text)
