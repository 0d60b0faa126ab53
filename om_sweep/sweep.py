"""A whole sweep: plan the points, skip jobs whose results are stored, run the rest on an engine (storing
each record as it arrives), then write the table. The Python API behind `om-sweep run`."""
from __future__ import annotations

import pathlib
import sys
from collections import Counter
from dataclasses import dataclass, field

from .engines import Engine
from .plan import Plan, make_plan
from .progress import Progress
from .spec import SweepSpec
from .store import ResultStore
from .table import build_rows, write_results
from .toolversion import tool_version


@dataclass
class SweepOutcome:
    plan: Plan
    rows: list[dict]
    ran: int                     # jobs run now
    reused: int                  # jobs whose stored record was used
    paths: list[pathlib.Path] = field(default_factory=list)

    def statuses(self) -> Counter:
        return Counter(r["status"] for r in self.rows)


SHOWN_IGNORED = 5                # warnings naming an ignored record; past them, one line counts the rest


def warn_ignored(ignored: list[str], stream) -> None:
    """Say which stored records were not trusted (their jobs run again), a few by name and the rest counted."""
    for what in ignored[:SHOWN_IGNORED]:
        print(f"[WARNING] om-sweep: ignored the stored record {what}; its job runs again", file=stream)
    if len(ignored) > SHOWN_IGNORED:
        print(f"[WARNING] om-sweep: ignored {len(ignored) - SHOWN_IGNORED} more stored records; their jobs run again",
              file=stream)


def run_sweep(spec: SweepSpec, out_dir, engine: Engine, compute: bool | None = None, rerun_failed: bool = False,
              progress_stream=None, on_record=None) -> SweepOutcome:
    """on_record(job, record): called after each record is stored (tests use it to interrupt a sweep).
    Warnings go to progress_stream (default stderr)."""
    out_dir = pathlib.Path(out_dir)
    version = tool_version()
    plan = make_plan(spec, version, compute)
    store = ResultStore(out_dir)
    store.remove_stale_temp_files()
    records: dict[str, dict] = {}
    todo = []
    for job in plan.jobs:
        rec = store.reusable(job, rerun_failed)
        if rec is None:
            todo.append(job)
        else:
            records[job.key] = rec
    warn_ignored(store.ignored, progress_stream if progress_stream is not None else sys.stderr)
    progress = Progress(len(todo), len(records), engine.name, stream=progress_stream)

    def arrived(job, rec):
        store.save(job.key, rec)
        records[job.key] = rec
        progress.update(rec["status"])
        if on_record is not None:
            on_record(job, rec)

    try:
        if todo:
            engine.run(todo, arrived)
    finally:
        progress.close()
    rows = build_rows(plan, records, version)
    paths = write_results(out_dir, rows, plan.grid_keys)
    return SweepOutcome(plan, rows, ran=len(todo), reused=len(plan.jobs) - len(todo), paths=paths)
