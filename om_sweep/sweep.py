"""A whole sweep: plan the points, skip jobs whose results are stored, run the rest on an engine (storing
each record as it arrives), then write the table. The Python API behind `om-sweep run`."""
from __future__ import annotations

import pathlib
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


def run_sweep(spec: SweepSpec, out_dir, engine: Engine, compute: bool | None = None, rerun_failed: bool = False,
              progress_stream=None, on_record=None) -> SweepOutcome:
    """on_record(job, record): called after each record is stored (tests use it to interrupt a sweep)."""
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
