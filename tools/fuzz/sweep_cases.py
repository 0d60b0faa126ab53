"""Hostile sweep files and output folders for om-sweep, and files planted in om-run's output folders.

Each case prepares its folder (the case's cwd), runs one command and checks what must hold afterwards: the
sweep file is a FIFO, /dev/zero, a sparse multi-GiB file or a grid of billions of points; the output folder
holds symlinks (to the campaign's canary folder, to a file of the case, dangling), a forged record, a FIFO.
A sweep file whose YAML gives a key twice must be refused. Nothing may hang, blow up, write through a link or
trust a planted record; the campaign's own rules (no write outside out/, none into the canary) apply too.
"""
from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass
from typing import Callable

import yaml

GOOD = {"models": ["m.onnx"], "grid": {"soc_version": ["Ascend910B1"]}, "run": {"compute": False}}
OUT = "out/r"
FORGED_E2E = 0.125          # a latency no real job of the cases reports


@dataclass
class SweepCase:
    what: str
    tool: str
    args: list[str]
    prepare: Callable[[pathlib.Path, dict], None]
    check: Callable[[pathlib.Path, dict], list[str]]
    refuse: bool = False       # the command must fail: running to the end is a wrong acceptance


def _sweep(d: pathlib.Path, doc: dict = GOOD) -> None:
    (d / "s.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def job_key(d: pathlib.Path) -> str:
    """The key of the case's one job (GOOD's point), as om-sweep will compute it."""
    from om_sweep.plan import make_plan
    from om_sweep.spec import load_spec
    from om_sweep.toolversion import tool_version
    (job,) = make_plan(load_spec(d / "s.yaml"), tool_version()).jobs
    return job.key


def _jobs(d: pathlib.Path) -> pathlib.Path:
    jobs = d / OUT / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    return jobs


def _nothing(d: pathlib.Path, ctx: dict) -> list[str]:
    return []


def _target_kept(d: pathlib.Path, ctx: dict) -> list[str]:
    return [] if (d / "target.txt").read_bytes() == b"keep\n" else ["target.txt written through a planted link"]


def _no_links(*names: str) -> Callable[[pathlib.Path, dict], list[str]]:
    def check(d: pathlib.Path, ctx: dict) -> list[str]:
        bad = [n.format(**ctx) for n in names if os.path.islink(d / n.format(**ctx))]
        return _target_kept(d, ctx) + ([f"planted links left in place: {bad}"] if bad else [])
    return check


def _not_forged(d: pathlib.Path, ctx: dict) -> list[str]:
    csv = d / OUT / "results.csv"
    if not csv.is_file():
        return ["no results.csv"]
    return [f"a forged record was used: {FORGED_E2E}"] if str(FORGED_E2E) in csv.read_text() else []


def _fifo_kept(d: pathlib.Path, ctx: dict) -> list[str]:
    import stat
    path = _jobs(d) / f"{ctx['key']}.json"
    return [] if stat.S_ISFIFO(os.lstat(path).st_mode) else ["the planted FIFO was replaced"]


# -- preparations -------------------------------------------------------------------------------------------------

def _fifo_sweep(d, ctx):
    os.mkfifo(d / "s.yaml")


def _zero_sweep(d, ctx):
    os.symlink("/dev/zero", d / "s.yaml")


def _sparse_sweep(d, ctx):
    with open(d / "s.yaml", "wb") as f:
        f.truncate(3 << 30)


def _huge_grid(d, ctx):
    names = ["soc_version", "tiling_schedule_optimize", "precision_mode", "enable_single_stream",
             "op_select_implmode", "disable_reuse_memory", "input_format"]
    _sweep(d, {"models": ["m.onnx"], "grid": {n: [f"v{i}" for i in range(25)] for n in names}})


def _long_grid_key(d, ctx):
    _sweep(d, {"models": ["m.onnx"], "grid": {"static_model_ops_lower_limit": list(range(120_000))}})


def _many_entries(d, ctx):
    _sweep(d, {"models": ["m.onnx"] * 110_000, "grid": {"soc_version": ["Ascend910B1"]}})


def _jobs_link(d, ctx):
    _sweep(d)
    (d / OUT).mkdir(parents=True)
    os.symlink(ctx["canary"], d / OUT / "jobs")


def _table_links(d, ctx):
    _sweep(d)
    (d / OUT).mkdir(parents=True)
    for name in ("results.csv", "results.parquet", "report.html"):
        os.symlink(d / "target.txt", d / OUT / name)


def _dangling_record(d, ctx):
    _sweep(d)
    ctx["key"] = job_key(d)
    os.symlink(os.path.join(ctx["canary"], "escaped.json"), _jobs(d) / f"{ctx['key']}.json")


def _forged_record(d, ctx, link: bool):
    from om_sweep.job import RESULT_FIELDS
    from om_sweep.store import record_digest
    _sweep(d)
    key = ctx["key"] = job_key(d)
    rec = {name: None for name in RESULT_FIELDS}
    rec.update(status="ok", error_message="", attempts=1, e2e_us=FORGED_E2E, tasks=1, time_limit_s=600.0)
    rec.update(key=key, digest=record_digest(key, rec))
    if link:                       # a valid record, but reached through a symlink
        (d / "forged.json").write_text(json.dumps(rec))
        os.symlink(d / "forged.json", _jobs(d) / f"{key}.json")
    else:                          # edited after its digest was computed
        (_jobs(d) / f"{key}.json").write_text(json.dumps({**rec, "tasks": 2}))


def _duplicate_key(text: str):
    def prepare(d, ctx):
        (d / "s.yaml").write_text(text)
    return prepare


def _fifo_record(d, ctx):
    _sweep(d)
    ctx["key"] = job_key(d)
    os.mkfifo(_jobs(d) / f"{ctx['key']}.json")


def _om_run_links(om_outputs: list[str]):
    def prepare(d, ctx):
        (d / "out" / "prof").mkdir(parents=True, exist_ok=True)
        for name in om_outputs:
            os.symlink(d / "target.txt", d / "out" / name)
        os.symlink(os.path.join(ctx["canary"], "trace.json"), d / "out" / "prof" / "trace.json")
        os.symlink(d / "target.txt", d / "out" / "prof" / "op_summary.csv")
    return prepare


def cases(om_outputs: list[str]) -> list[SweepCase]:
    """om_outputs: the file names om-run gives the outputs of the campaign's m.om in out/."""
    run = ["run", "s.yaml", "-o", OUT, "--workers", "1", "--no-report"]
    jobs_file = OUT + "/jobs/{key}.json"
    return [
        SweepCase("sweep file is a FIFO", "om-sweep", run, _fifo_sweep, _nothing),
        SweepCase("sweep file is /dev/zero", "om-sweep", run, _zero_sweep, _nothing),
        SweepCase("sweep file of 3 GiB", "om-sweep", run, _sparse_sweep, _nothing),
        SweepCase("grid of 6e9 points", "om-sweep", run, _huge_grid, _nothing),
        SweepCase("grid key of 120,000 values", "om-sweep", run, _long_grid_key, _nothing),
        SweepCase("110,000 model entries", "om-sweep", run, _many_entries, _nothing),
        SweepCase("jobs/ is a symlink to the canary", "om-sweep", run, _jobs_link, _nothing),
        SweepCase("results.* and report.html are symlinks", "om-sweep", run[:-1], _table_links,
                  _no_links(OUT + "/results.csv", OUT + "/results.parquet", OUT + "/report.html")),
        SweepCase("dangling record symlink into the canary", "om-sweep", run, _dangling_record, _no_links(jobs_file)),
        SweepCase("forged record through a symlink", "om-sweep", run, lambda d, c: _forged_record(d, c, True),
                  lambda d, c: _not_forged(d, c) + _no_links(jobs_file)(d, c)),
        SweepCase("record edited in place", "om-sweep", run, lambda d, c: _forged_record(d, c, False), _not_forged),
        SweepCase("record is a FIFO", "om-sweep", run, _fifo_record, _fifo_kept),
        SweepCase("top-level key given twice", "om-sweep", run,
                  _duplicate_key("models: [m.onnx]\ngrid: {soc_version: [Ascend910B1]}\nmodels: [nope.onnx]\n"
                                 "run: {compute: false}\n"), _nothing, refuse=True),
        SweepCase("grid key given twice", "om-sweep", run,
                  _duplicate_key("models: [m.onnx]\ngrid:\n  soc_version: [Ascend910B1]\n  soc_version: [Ascend310P3]\n"
                                 "run: {compute: false}\n"), _nothing, refuse=True),
        SweepCase("om-run outputs and profile are symlinks", "om-run",
                  ["--model", "m.om", "--output", "out", "--profile", "out/prof"], _om_run_links(om_outputs),
                  _no_links(*[f"out/{n}" for n in om_outputs], "out/prof/trace.json", "out/prof/op_summary.csv")),
    ]
