"""A serving point in its job's process: om-run serve's own flag parsing and checks, its step table (cached on disk
under $OM_RUN_SERVE_CACHE, so the jobs of one machine build each table once), the simulated run, and vllm's metrics
with the point's SLO check recorded. An error of om-run serve (vLLM refusing the settings, a bad config.json) is
the row's status and message, as om-run serve prints it."""
from __future__ import annotations

import math
import os
import time

import click

from atc_py.common.errors import AtcError

from .job import empty_record, failed
from .plan import Job

MODEL_FILES = ("config", "weights")      # job.files roles that live in the model folder


def model_folder(job: Job, local_paths: dict[str, str], workdir: str) -> str:
    """The model's files in one folder, as om-run serve reads a Hugging Face folder: links to where each is
    readable here (a worker's shipped copies land in a folder each)."""
    folder = os.path.join(workdir, "model")
    os.makedirs(folder)
    for ref in job.files:
        if ref.role in MODEL_FILES:
            os.symlink(local_paths.get(ref.path, ref.path), os.path.join(folder, os.path.basename(ref.path)))
    return folder


def _local(arg: str, local_paths: dict[str, str]) -> str:
    """A file flag's path where the file is readable here."""
    flag, eq, value = arg.partition("=")
    return f"{flag}={local_paths[value]}" if eq and value in local_paths else arg


def serve_flags(job: Job, model_dir: str, local_paths: dict[str, str]) -> dict:
    """om-run serve's parsed flags (its click command: the same types, defaults and choices)."""
    from om_run.serve.command import parse_flags
    argv = [_local(a, local_paths) for a in job.serve.argv] + [model_dir, "--no-progress", "--workers=1"]
    try:
        flags = parse_flags(argv)
    except click.ClickException as exc:
        param = getattr(exc, "param", None)
        name = param.opts[0] if param is not None and param.opts else "--request-rate"
        value = next((a.partition("=")[2] for a in argv if a.startswith(name + "=")), "")
        raise AtcError("E10001", value=value, parameter=name, reason=exc.format_message()) from None
    return flags


def execute_serve(job: Job, local_paths: dict[str, str], workdir: str) -> dict:
    from om_run.serve.session import prepare, run_info, simulate
    rec = empty_record(job)
    model_dir = ""
    try:
        model_dir = model_folder(job, local_paths, workdir)
        flags = serve_flags(job, model_dir, local_paths)
        t0 = time.perf_counter()
        try:
            prep = prepare(flags, out=lambda line: None)      # the build and the step table: "compile"
        finally:
            rec["compile_s"] = round(time.perf_counter() - t0, 6)
        t0 = time.perf_counter()
        try:
            res = simulate(prep, prep.requests, flags["max_concurrency"], progress=False)
        finally:
            rec["simulate_s"] = round(time.perf_counter() - t0, 6)
        if not math.isfinite(res.duration_s):
            raise AtcError("E19999", message="the simulated duration is not finite")
        record_metrics(rec, job, flags, res, run_info(flags, prep, flags["request_rate"]))
    except AtcError as exc:
        failed(rec, exc, local_paths, job)
        if model_dir:
            rec["error_message"] = rec["error_message"].replace(model_dir, job.model)
    return rec


def record_metrics(rec: dict, job: Job, flags: dict, res, info: dict) -> None:
    """vllm bench serve's numbers (results.compute), the SLO percentiles and feasibility (capacity.meets: no failed
    request, each SLO metric's percentile within its bound) and the output throughput per NPU."""
    from om_run.serve.capacity import meets, slo_values
    from om_run.serve.results import compute
    from om_run.serve.results.metrics import Selection
    m = compute(res.records, info, Selection.parse(None, None, flags["goodput"])).metrics
    npus = flags["tensor_parallel_size"]
    rec.update(completed=m.completed, failed=m.failed, duration=m.duration_s, request_throughput=m.request_throughput,
               output_throughput=m.output_throughput, total_token_throughput=m.total_token_throughput,
               request_goodput=m.request_goodput, preemptions=res.preemptions, npus=npus,
               output_throughput_per_npu=m.output_throughput / npus)
    for metric in ("ttft", "tpot", "itl"):
        s = m.stats[metric]
        rec.update({f"mean_{metric}_ms": s.mean_ms, f"median_{metric}_ms": s.median_ms,
                    f"p99_{metric}_ms": dict(s.percentiles_ms)[99.0]})
    pct = job.serve.slo_percentile
    rec.update({f"pct_{k}_ms": v for k, v in slo_values(res.records, pct).items()})
    rec["feasible"] = meets(res.records, dict(job.serve.goodput), pct)[0]
