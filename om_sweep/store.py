"""The result store: one JSON record per finished job in OUT/jobs/<key>.json, written atomically the moment
the job ends, so a killed sweep loses only the jobs that were running and a rerun skips the rest.

Records are read back as untrusted files: one that is not a complete record of this schema is ignored
(its job runs again), never half-used.
"""
from __future__ import annotations

import json
import os
import pathlib
import re

from atc_py.atomic_write import write_atomic
from atc_py.errors import AtcError

from .job import OK, RESULT_FIELDS
from .plan import Job

KEY = re.compile(r"^[0-9a-f]{64}$")
LIMIT_STATUSES = {"E40004": "time_limit_s", "E40005": "memory_limit_mb"}
_TYPES = {"string": (str,), "int": (int,), "float": (int, float)}


def valid_record(rec) -> bool:
    if not isinstance(rec, dict) or set(rec) != set(RESULT_FIELDS) | {"key"}:
        return False
    if not isinstance(rec["key"], str) or not KEY.match(rec["key"]):
        return False
    for name, kind in RESULT_FIELDS.items():
        value = rec[name]
        if value is not None and (isinstance(value, bool) or not isinstance(value, _TYPES[kind])):
            return False
    return isinstance(rec["status"], str) and bool(rec["status"])


class ResultStore:
    def __init__(self, out_dir: pathlib.Path):
        self.dir = pathlib.Path(out_dir) / "jobs"
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AtcError("E40010", path=str(self.dir), reason=exc.strerror or str(exc)) from None

    def path(self, key: str) -> pathlib.Path:
        return self.dir / f"{key}.json"

    def load(self, key: str) -> dict | None:
        try:
            rec = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        return rec if valid_record(rec) and rec["key"] == key else None

    def save(self, key: str, rec: dict) -> None:
        rec = {**rec, "key": key}
        write_atomic(self.path(key), (json.dumps(rec, sort_keys=True) + "\n").encode())

    def reusable(self, job: Job, rerun_failed: bool = False) -> dict | None:
        """The stored record if the job need not run again: it is done unless it failed and rerun_failed is
        set, or it hit a time/memory limit that has been raised since."""
        rec = self.load(job.key)
        if rec is None:
            return None
        if rerun_failed and rec["status"] != OK:
            return None
        limit_field = LIMIT_STATUSES.get(rec["status"])
        if limit_field:
            now, then = getattr(job, limit_field), rec[limit_field]
            if now is None or then is None or now > then:
                return None
        return rec

    def keys(self) -> list[str]:
        return sorted(p.stem for p in self.dir.glob("*.json") if KEY.match(p.stem))

    def remove_stale_temp_files(self) -> None:
        """Temp files of writes a killed run did not finish."""
        for p in self.dir.glob(".*.json.*"):
            try:
                os.unlink(p)
            except OSError:
                pass
