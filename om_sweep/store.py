"""The result store: one JSON record per finished job in OUT/jobs/<key>.json, written atomically the moment
the job ends, so a killed sweep loses only the jobs that were running and a rerun skips the rest.

Records are read back as untrusted files: one that is not a regular file (a planted symlink, a FIFO), is too
large, is not a complete record of this schema, or whose digest does not match its key and content (edited,
forged, copied under another key) is ignored with a warning and its job runs again, never half-used. The
digest is no signature: it catches edits and misfiled or foreign records, while the folder's permissions keep
out whoever could compute one. Records are written without following symlinks (write_in_folder), and jobs/
itself must be a folder, not a link out of the output folder.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import pathlib
import re
import stat

from atc_py.common.atomic_write import write_in_folder
from atc_py.common.errors import AtcError

from .job import OK, RESULT_FIELDS
from .plan import Job

KEY = re.compile(r"^[0-9a-f]{64}$")
LIMIT_STATUSES = {"E40004": "time_limit_s", "E40005": "memory_limit_mb"}
MAX_RECORD_BYTES = 1 << 20           # a record is ~1 KiB; an error message is bounded well below this
_TYPES = {"string": (str,), "int": (int,), "float": (int, float), "bool": (bool,)}


def record_digest(key: str, rec: dict) -> str:
    """sha256 of the job key and every result field, canonical JSON: what a stored record must carry."""
    body = {"key": key, "record": {name: rec.get(name) for name in RESULT_FIELDS}}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def valid_record(rec) -> bool:
    if not isinstance(rec, dict) or set(rec) != set(RESULT_FIELDS) | {"key", "digest"}:
        return False
    if not isinstance(rec["key"], str) or not KEY.match(rec["key"]):
        return False
    for name, kind in RESULT_FIELDS.items():
        value = rec[name]
        if value is not None and (isinstance(value, bool) != (kind == "bool") or not isinstance(value, _TYPES[kind])):
            return False
    return isinstance(rec["status"], str) and bool(rec["status"])


def _read_bounded(path: pathlib.Path) -> bytes:
    """The file's bytes if it is a regular file (not followed through a symlink) of at most MAX_RECORD_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError("it is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("it is not a regular file")
        data = f.read(MAX_RECORD_BYTES + 1)
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError(f"it holds more than {MAX_RECORD_BYTES >> 20} MiB")
    return data


def _checked(rec, key: str) -> dict:
    if not valid_record(rec):
        raise ValueError("it is not a complete record of this om-sweep")
    if rec["key"] != key:
        raise ValueError("it is the record of another job")
    if rec["digest"] != record_digest(key, rec):
        raise ValueError("its digest does not match its content (edited or forged)")
    return rec


class ResultStore:
    def __init__(self, out_dir: pathlib.Path):
        self.dir = pathlib.Path(out_dir) / "jobs"
        self.ignored: list[str] = []       # "jobs/<key>.json: why", for the warnings of the sweep
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            st = os.lstat(self.dir)
        except OSError as exc:
            raise AtcError("E40010", path=str(self.dir), reason=exc.strerror or str(exc)) from None
        if not stat.S_ISDIR(st.st_mode):
            raise AtcError("E40010", path=str(self.dir), reason="it is a symbolic link; om-sweep keeps its records "
                                                                "in a folder of its own inside the output folder")

    def path(self, key: str) -> pathlib.Path:
        return self.dir / f"{key}.json"

    def load(self, key: str) -> dict | None:
        """The stored record, or None: missing (quietly) or failing a check (noted in self.ignored)."""
        path = self.path(key)
        try:
            return _checked(json.loads(_read_bounded(path).decode("utf-8")), key)
        except FileNotFoundError:
            return None
        except OSError as exc:
            why = exc.strerror or str(exc)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            why = str(exc) if isinstance(exc, ValueError) and str(exc).startswith("it") else "it is not valid JSON"
        self.ignored.append(f"{self.dir.name}/{path.name}: {why}")
        return None

    def save(self, key: str, rec: dict) -> None:
        rec = {**{name: rec[name] for name in RESULT_FIELDS}, "key": key}
        rec["digest"] = record_digest(key, rec)
        write_in_folder(self.path(key), (json.dumps(rec, sort_keys=True) + "\n").encode())

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
