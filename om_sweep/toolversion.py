"""The version of the tools a result was made with: part of every job key, so results of other code rerun.

atc-py's version number does not change with every commit, so the version also carries a digest of the
compiler's and the simulator's source files: a result computed by different code is not reused, and a
Dask worker running other code than the driver is refused before the sweep starts.
"""
from __future__ import annotations

import functools
import hashlib
import pathlib

import atc_py
import om_run

RECORD_SCHEMA = 3   # bump when a job record gains or changes fields (job.py): older records rerun


@functools.lru_cache(maxsize=1)
def tool_version() -> str:
    digest = hashlib.sha256()
    for package in (atc_py, om_run):
        root = pathlib.Path(package.__file__).resolve().parent
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{package.__name__}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return f"{atc_py.__version__}+src.{digest.hexdigest()[:12]}.r{RECORD_SCHEMA}"
