"""One job: compile with atc-py's own flag handling, simulate with om-run's, and record the numbers.

Runs inside the job's own process (sandbox.py). Every error of the tools becomes the record's status and
message, exactly as atc-py / om-run would report it; numbers gathered before the error stay in the record.
A point with `generate` runs om-run --generate's decode loop (om_run/generate/decode.py) instead of one execution;
a serving point runs om-run serve (serve_job.py).
ATB's settings are the point's (its grid values, else ATB's defaults), never the environment the job runs in:
the environment is not part of the job key.
"""
from __future__ import annotations

import os
import pathlib
import time

from atc_py.cli import flags as cmdline
from atc_py.cli import main as atc_cli
from atc_py.common.errors import AtcError
from atc_py.plugins import ENV as PLUGIN_ENV
from atc_py.plugins import load_plugins
from om_run.compare.outputs import compare_outputs
from om_run.generate.decode import Decoder, decoder_io, generate, read_prompt
from om_run.load.loader import load_model
from om_run.run.gears import read_gears
from om_run.run.io import load_expected, load_inputs, load_npy, load_npz
from om_run.run.simulate import simulate
from om_run.sim.atb import AtbSettings
from om_run.sim.execute import check_inputs
from om_run.sim.host import Simulation
from om_run.sim.profile import RuntimeProfile
from om_run.sim.report import summary_json
from om_run.sim.warm import warm

from .plan import Job

# what a serving point records: vllm bench serve's metrics (its names), the SLO check and the throughput per NPU
SERVE_FIELDS = {
    "completed": "int", "failed": "int", "duration": "float", "request_throughput": "float",
    "output_throughput": "float", "total_token_throughput": "float", "request_goodput": "float",
    **{f"{stat}_{metric}_ms": "float" for metric in ("ttft", "tpot", "itl") for stat in ("mean", "median", "p99")},
    "preemptions": "int", "slos": "string", "slo_percentile": "float",
    "pct_ttft_ms": "float", "pct_tpot_ms": "float", "pct_e2el_ms": "float",     # at slo_percentile
    "feasible": "bool", "npus": "int", "output_throughput_per_npu": "float",
}
SERVE_NPUS = 1      # om-run serve simulates one NPU per model (--tensor-parallel-size 1)
# what a job records, in table order (table.py adds the point's identity columns around them)
RESULT_FIELDS = {
    "status": "string", "error_message": "string",
    "compile_s": "float", "tasks": "int", "streams": "int", "events": "int", "om_models": "int",
    "memory_size": "int", "memory_lower_bound": "int", "weight_size": "int",
    "e2e_us": "float", "host_us": "float", "device_us": "float", "syncs": "int", "hazards": "int",
    "ttft_us": "float", "tpot_us": "float", "tokens_per_s": "float", "generated_tokens": "int",
    "setup_cache_hits": "int", "kernel_cache_hits": "int",
    **SERVE_FIELDS,
    "max_abs_err": "float", "max_rel_err": "float", "mismatched": "int",
    "simulate_s": "float", "attempts": "int", "time_limit_s": "float", "memory_limit_mb": "float",
}
GENERATION_FIELDS = ("ttft_us", "tpot_us", "tokens_per_s", "generated_tokens", "setup_cache_hits",
                     "kernel_cache_hits")       # filled by points with `generate` only
WALL_CLOCK_FIELDS = ("compile_s", "simulate_s")   # measured durations: they differ from run to run
OK = "ok"


def empty_record(job: Job) -> dict:
    rec = {name: None for name in RESULT_FIELDS}
    rec.update(status=OK, error_message="", attempts=1, time_limit_s=job.time_limit_s,
               memory_limit_mb=job.memory_limit_mb)
    if job.serve is not None:           # known before the run: failed rows show them too
        rec.update(slos=job.serve.slos, slo_percentile=job.serve.slo_percentile, npus=SERVE_NPUS)
    return rec


def failed(rec: dict, exc: AtcError, local_paths: dict[str, str], job: Job) -> dict:
    rec["status"] = exc.code
    rec["error_message"] = _shown(exc.message, local_paths, job)
    return rec


def _shown(message: str, local_paths: dict[str, str], job: Job) -> str:
    """Messages name files as the sweep does, wherever the job ran (a worker may hold a shipped copy)."""
    model = job.files[0]
    for original, local in sorted(local_paths.items(), key=lambda kv: -len(kv[1])):
        message = message.replace(local, job.model if original == model.path else original)
    return message


def execute(job: Job, local_paths: dict[str, str], workdir: str) -> dict:
    """compile -> simulate -> record. local_paths maps each of job.files' paths to where it is readable here."""
    if job.serve is not None:
        from .serve_job import execute_serve
        return execute_serve(job, local_paths, workdir)
    os.environ.pop(PLUGIN_ENV, None)        # plugins come from the sweep file only: they are in the job key
    rec = empty_record(job)
    loc = lambda p: local_paths.get(p, p)   # noqa: E731
    try:
        given = {name: value for name, value in job.flags.items()}
        if given.get("op_plugin"):
            given["op_plugin"] = ":".join(loc(p) for p in given["op_plugin"].split(":"))
        if given.get("op_attr_config"):
            given["op_attr_config"] = loc(given["op_attr_config"])
        stem = pathlib.Path(job.files[0].path).stem
        given["model"] = loc(job.files[0].path)
        given["output"] = str(pathlib.Path(workdir) / stem)
        for name, value in given.items():
            cmdline.check(name, value)      # what atc-py's command-line parser checks
        argv = [f"--{k}={v}" for k, v in given.items()]
        t0 = time.perf_counter()
        result = atc_cli.build_from_flags(given, argv)
        rec["compile_s"] = round(time.perf_counter() - t0, 6)
        s = result.summary
        rec.update(tasks=s["tasks"], streams=s["stream_num"], events=s["event_num"], om_models=s["models"],
                   memory_size=s["memory_size"], memory_lower_bound=s["memory_lower_bound"],
                   weight_size=s["weight_size"])
        om_path = given["output"] + ".om"
        result.save(om_path)
        del result
        _simulate(job, rec, om_path, given.get("op_plugin", ""), loc)
    except AtcError as exc:
        failed(rec, exc, local_paths, job)
    return rec


def atb_settings(job: Job) -> AtbSettings:
    """ATB's settings of the point, read as ATB reads its variables (spec.py checked the values)."""
    return AtbSettings.from_env(dict(job.atb))


def _simulate(job: Job, rec: dict, om_path: str, op_plugin: str, loc) -> None:
    t0 = time.perf_counter()
    load_plugins(op_plugin)
    model = load_model(om_path)
    prof = RuntimeProfile.load(loc(job.sim_config) if job.sim_config else None)
    if job.generate:
        try:
            _generate(job, rec, model, prof, om_path, loc(job.inputs))
        finally:
            rec["simulate_s"] = round(time.perf_counter() - t0, 6)
        return
    inputs = None
    if job.compute:
        spec = ",".join(loc(p) for p in job.inputs.split(",")) if job.inputs else None
        inputs = load_inputs(model, spec, job.seed)
        check_inputs(model, inputs)
    try:
        outputs, loops = simulate(model, prof, inputs, job.loop, job.compute, atb=atb_settings(job))
    finally:
        rec["simulate_s"] = round(time.perf_counter() - t0, 6)
    summary = summary_json(loops, model.name, model.soc_version)
    rec.update(e2e_us=summary["e2e_us"], host_us=summary["host_us"], device_us=summary["device_us"],
               syncs=summary["host_device_syncs"], hazards=len(summary["hazards"]))
    if job.expected:
        errors = compare_outputs(model, outputs, load_expected(model, loc(job.expected)), job.rtol, job.atol)
        compared = [e for e in errors if e.shape_ok]
        rec.update(max_abs_err=max((e.max_abs for e in compared), default=0.0),
                   max_rel_err=max((e.max_rel for e in compared), default=0.0),
                   mismatched=sum(e.mismatched for e in errors))
        bad = [e for e in errors if not e.ok]
        if bad:
            detail = "; ".join(f"{e.name}: shape {list(e.shape)} != expected {list(e.expected_shape)}"
                               if not e.shape_ok else f"{e.name}: {e.mismatched} of {e.size} elements"
                               for e in bad)
            raise AtcError("E30003", reason=f"outputs differ from the expected values beyond rtol {job.rtol}, "
                                            f"atol {job.atol} ({detail})")


def _prompt_arrays(path: str, input_ids: str) -> dict:
    """The prompt file's arrays, as om-run --generate reads --input: an .npz, or one .npy of the token ids."""
    return load_npz(path) if path.lower().endswith(".npz") else {input_ids: load_npy(path)}


def _generate(job: Job, rec: dict, model, prof: RuntimeProfile, om_path: str, prompt_path: str) -> None:
    """om-run --generate's decode loop (om_run/generate/command.py, a model without gears): the KV cache resident on the
    device, the point's ATB settings. e2e_us is the whole generation, host_us / device_us its steps' sums."""
    if read_gears(model, om_path) is not None:
        raise AtcError("E30002", reason="--generate: om-sweep runs decoders built without gears (--dynamic_batch_size,"
                                        " --dynamic_image_size, --dynamic_dims); give the cache's range with "
                                        "--input_shape_range or a static --input_shape")
    roles = decoder_io(model, om_path)
    decoder = Decoder(model, roles)
    prompt = read_prompt(prompt_path, roles, _prompt_arrays(prompt_path, roles.input_ids))
    sim = Simulation(model, prof, compute=True, atb=atb_settings(job))
    sim.resident = decoder.resident()

    def run_step(feeds):
        check_inputs(model, feeds)
        return sim.run(feeds)

    warm(sim)
    gen = generate(decoder, prompt, job.generate, run_step)
    s, counters = gen.summary(), sim.atb_counters()
    rec.update(e2e_us=s["total_us"], host_us=sum(st.host_ns for st in gen.steps) / 1e3,
               device_us=sum(st.device_ns for st in gen.steps) / 1e3,
               syncs=sum(st.stats.syncs for st in gen.steps), hazards=sum(len(st.stats.hazards) for st in gen.steps),
               ttft_us=s["ttft_us"], tpot_us=s["tpot_us"], tokens_per_s=s["tokens_per_s"],
               generated_tokens=s["generated_tokens"], setup_cache_hits=counters["setup_cache_hits"],
               kernel_cache_hits=counters["kernel_cache_hits"])
