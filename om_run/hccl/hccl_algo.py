"""HCCL_ALGO, read from the environment in this one place.

HCCL honours it only for the algorithm between servers (level1; level2 between A3 SuperPoDs): level0, inside a
server, must be NA, because HCCL picks the intra-server algorithm from the hardware topology
(hicann/hccl docs/en/user_guide/hccl_env/HCCL_ALGO.md). Both forms are read: the global one,
"level0:NA;level1:ring", and the per-operator one, "allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R".
om-run prices ring, H-D_R and NHR between servers (and pairwise for all-to-all); HCCL's other names (NHR_V1, NB, AHC,
pipeline) are accepted and priced by the default selection, which the cost's notes say.
"""
from __future__ import annotations

import os

from atc_py.common.errors import AtcError

ENV = "HCCL_ALGO"
HCCL_NAMES = ("ring", "H-D_R", "NHR", "NHR_V1", "NB", "AHC", "pipeline", "pairwise")
MODELLED = {"ring": "ring", "H-D_R": "rhd", "NHR": "nhr", "pairwise": "pairwise"}
# HCCL_ALGO's operator keys -> our collectives (hicann/hccl HCCL_ALGO.md: reduce and scatter have no collective here)
_OP_KEYS = {"allgather": "all_gather", "reducescatter": "reduce_scatter", "allreduce": "all_reduce",
            "broadcast": "broadcast", "alltoall": "all_to_all", "reduce": None, "scatter": None}


def _bad(value: str, reason: str) -> AtcError:
    return AtcError("E10001", value=value, parameter=ENV, reason=reason)


def _levels(text: str, whole: str) -> str | None:
    """The level1 algorithm of one 'level0:NA;level1:X[;level2:Y]' setting (None when level1 is not set)."""
    level1 = None
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, sep, value = part.partition(":")
        if not sep or key not in ("level0", "level1", "level2"):
            raise _bad(whole, f"'{part}' is not levelN:<algorithm> (level0, level1, level2)")
        if key == "level0" and value != "NA":
            raise _bad(whole, "level0 (inside a server) can only be NA: HCCL chooses it from the hardware topology")
        if key != "level0" and value not in HCCL_NAMES:
            raise _bad(whole, f"'{value}' is not one of HCCL's algorithms ({', '.join(HCCL_NAMES)})")
        if key == "level1":
            level1 = value
    return level1


def parse(value: str) -> dict[str, str]:
    """collective (or '*' for the global form) -> HCCL's level1 algorithm name."""
    out: dict[str, str] = {}
    value = value.strip()
    if not value:
        return out
    if "=" not in value:
        level1 = _levels(value, value)
        return {"*": level1} if level1 else out
    for chunk in filter(None, (c.strip() for c in value.split("/"))):
        key, sep, levels = chunk.partition("=")
        if not sep or key not in _OP_KEYS:
            raise _bad(value, f"'{chunk}' is not <op>=level0:NA;level1:<algorithm> with <op> one of "
                              + ", ".join(_OP_KEYS))
        level1 = _levels(levels, value)
        if level1 and _OP_KEYS[key]:
            out[_OP_KEYS[key]] = level1
    return out


def level1_algorithm(op: str, environ=None) -> str | None:
    """The HCCL level1 algorithm name HCCL_ALGO asks for this collective (None: HCCL's own choice)."""
    table = parse((os.environ if environ is None else environ).get(ENV, ""))
    return table.get(op, table.get("*"))
