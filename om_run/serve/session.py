"""One `om-run serve` run: the flags checked (engine settings, workload, result flags), the decoder built and its
steps priced, the KV cache sized from the SoC's memory, the requests run through the engine's scheduler in
simulated time, the results written in vllm's and AISBench's formats."""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass

import click

from atc_py.common.errors import AtcError

from ..sim.profile import RuntimeProfile
from .engine_config import EngineConfig, engine_config
from .hf_config import DecoderConfig, read_config
from .host_costs import V0AsyncOutput, V1Frontend, host_costs_for, swap_seconds
from .loop import LoopResult, run_loop
from .request import Request
from .tensor_parallel import shard

MAX_PROMPTS = 10_000_000     # requests of one run: each is a few hundred bytes of state
MAX_REQUEST_TOKENS = 1 << 24   # a random request's prompt or output (longer ones fail as too long anyway)


def _bad(flag: str, value, reason: str) -> AtcError:
    return AtcError("E10001", value=value, parameter=flag, reason=reason)


@dataclass
class Prepared:
    """Everything a run needs, checked: the model, the engine, the requests, the step prices."""
    cfg: DecoderConfig
    engine: EngineConfig
    requests: list[Request]
    pricer: object
    runner: object | None
    model_id: str


def _workload(flags: dict, cfg: DecoderConfig, need_tokens: bool) -> list[Request]:
    from .workload import WorkloadSpec, build
    for name in ("num_prompts", "random_input_len", "random_output_len"):
        if flags[name] is not None and flags[name] < 1:
            raise _bad("--" + name.replace("_", "-"), flags[name], "must be >= 1")
    if flags["num_prompts"] > MAX_PROMPTS:
        raise _bad("--num-prompts", flags["num_prompts"], f"at most {MAX_PROMPTS} requests are simulated in one run")
    if max(flags["random_input_len"], flags["random_output_len"]) > MAX_REQUEST_TOKENS:
        raise _bad("--random-input-len", flags["random_input_len"], f"at most {MAX_REQUEST_TOKENS} tokens a request")
    spec = WorkloadSpec(dataset_name=flags["dataset_name"], dataset_path=flags["dataset_path"],
                        num_prompts=flags["num_prompts"] if flags["trace_file"] is None else None,
                        random_input_len=flags["random_input_len"], random_output_len=flags["random_output_len"],
                        random_range_ratio=flags["random_range_ratio"], random_prefix_len=flags["random_prefix_len"],
                        sharegpt_output_len=flags["sharegpt_output_len"], request_rate=flags["request_rate"],
                        burstiness=flags["burstiness"], seed=flags["seed"], trace=flags["trace_file"],
                        vocab_size=cfg.vocab_size if need_tokens else None)
    return build(spec)


def prepare(flags: dict, out=None) -> Prepared:
    """Every check, the build and the step prices: what runs before the first simulated request."""
    echo = out or (lambda line: click.echo(line, err=True))
    model_dir = flags["model_dir"]
    cfg = read_config(model_dir)
    if flags["max_concurrency"] is not None and flags["max_concurrency"] < 1:
        raise _bad("--max-concurrency", flags["max_concurrency"], "must be >= 1")
    if flags["search_request_rate"] and not flags["goodput"]:
        raise _bad("--search-request-rate", "", "give the SLOs it searches for with --goodput (e.g. ttft:200 "
                                                "tpot:50)")
    if not 0 < flags["slo_percentile"] <= 100:
        raise _bad("--slo-percentile", flags["slo_percentile"], "must be in (0, 100]")
    engine = engine_config(flags, cfg)
    auto = flags["load_format"] == "auto"
    requests = _workload(flags, cfg, need_tokens=auto or engine.prefix_caching)
    echo(f"[INFO] {cfg.architecture}: {cfg.num_layers} layers, hidden {cfg.hidden_size}, {cfg.num_heads} heads "
         f"({cfg.num_kv_heads} KV), {cfg.weight_bytes() / (1 << 30):.2f} GiB of {cfg.dtype} weights")
    for line in engine.lines():
        echo(f"[INFO] {line}")
    weights = None
    if auto:   # the weights read (and a folder without them refused) before any step is simulated
        from .weights import decoder_weights
        weights = decoder_weights(cfg, model_dir)
    from .step_pricer import StepPricer
    pricer = StepPricer(cfg, engine, flags["step_time"], flags["workers"] or os.cpu_count() or 1,
                        progress=None if flags["no_progress"] else _bar("step table"), echo=echo)
    runner = None
    if auto:
        from .numerics import ModelRunner
        cost = None
        if engine.tp > 1:   # the ranks' collectives cost what the machine's links give
            from ..run.world_run import link_cost
            cost = link_cost(engine.topology)
        runner = ModelRunner(cfg, engine.build_spec(engine.num_blocks), weights, cost)
    model_id = flags["served_model_name"] or os.path.basename(os.path.normpath(model_dir))
    return Prepared(cfg, engine, requests, pricer, runner, model_id)


def _progress(line):
    """A progress writer on stderr, redrawn at most twice a second: show(*args) with args ending (done, total);
    line(*args) is the text."""
    state = {"t": 0.0}

    def show(*args) -> None:
        now = time.monotonic()
        done, total = args[-2:]
        if now - state["t"] < 0.5 and done < total:
            return
        state["t"] = now
        sys.stderr.write("\r[INFO] " + line(*args))
        sys.stderr.flush()
    return show


def _bar(what: str):
    return _progress(lambda done, total: f"{what}: {done}/{total} simulated" + ("\n" if done >= total else ""))


def simulate(prep: Prepared, requests: list[Request], max_concurrency, progress: bool = True) -> LoopResult:
    from .scheduler import make_scheduler
    eng = prep.engine
    scheduler = make_scheduler(eng.engine, eng.scheduler_settings, eng.num_blocks, eng.num_cpu_blocks)
    host = host_costs_for(eng.engine)
    prof = eng.profile or RuntimeProfile()
    block_bytes = eng.block_size * shard(prep.cfg, eng.tp).kv_bytes_per_token()   # each rank swaps its own

    frontend = V1Frontend(host) if eng.frontend_output else None

    def host_seconds(plan) -> float:
        engine = frontend.step_s(plan) if frontend is not None else host.step_seconds(plan)
        return engine + swap_seconds(plan, block_bytes, prof)
    show = _progress(lambda now_s, done, total: f"requests done {done}/{total}, simulated time {now_s:.2f} s")
    res = run_loop(requests, scheduler, prep.pricer.step, host_seconds,
                   sample=prep.runner.sample if prep.runner is not None else None,
                   max_concurrency=max_concurrency, progress=show if progress else None,
                   collectives=prep.pricer.collectives if eng.tp > 1 else None,
                   async_output=V0AsyncOutput(host) if eng.async_output else None,
                   delivery=frontend.delivery_s if frontend is not None else None)
    if progress:
        sys.stderr.write("\n")
    return res


def _result_flags(flags: dict):
    from .results import ResultFlags
    return ResultFlags(save_result=flags["save_result"], result_filename=flags["result_filename"],
                       result_dir=flags["result_dir"], save_detailed=flags["save_detailed"],
                       append_result=flags["append_result"], metadata=tuple(flags["metadata"]),
                       percentile_metrics=flags["percentile_metrics"], metric_percentiles=flags["metric_percentiles"],
                       goodput=tuple(flags["goodput"]), aisbench_output=flags["aisbench_output"],
                       requests_csv=flags["requests_csv"], steps_csv=flags["steps_csv"], trace=flags["trace_output"],
                       report=flags["report"])


def run_info(flags: dict, prep: Prepared, rate: float) -> dict:
    eng = prep.engine
    return {"model_id": prep.model_id, "tokenizer_id": prep.model_id, "backend": "vllm" if eng.engine == "vllm"
            else "mindie", "num_prompts": len(prep.requests), "dataset": flags["dataset_name"] if not
            flags["trace_file"] else "trace", "request_rate": rate, "burstiness": flags["burstiness"],
            "max_concurrency": flags["max_concurrency"], "engine": eng.engine, "settings": eng.settings_dict()}


def _make_parents(flags: dict) -> None:
    """The folders the result files go to, made before anything runs (a path that cannot be made is an error
    now, not after the simulation)."""
    paths = [flags[k] for k in ("requests_csv", "steps_csv", "trace_output", "report") if flags[k]]
    if flags["save_result"] and flags["result_filename"]:
        paths.append(os.path.join(flags["result_dir"] or "", flags["result_filename"]))
    dirs = [os.path.dirname(p) for p in paths] + [d for d in (flags["result_dir"], flags["aisbench_output"]) if d]
    for d in dirs:
        if d:
            try:
                os.makedirs(d, exist_ok=True)
            except OSError as exc:
                raise AtcError("E13004", file=d, errmsg=f"the folder cannot be made ({exc.strerror or exc})") from None


def run_serve(flags: dict) -> None:
    result_flags = _result_flags(flags)
    result_flags.check()
    _make_parents(flags)
    prep = prepare(flags)
    if flags["search_request_rate"]:
        from .capacity import search_rate
        search_rate(flags, prep, result_flags, simulate, run_info)
        return
    res = simulate(prep, prep.requests, flags["max_concurrency"], progress=not flags["no_progress"])
    from .results import write_results
    info = run_info(flags, prep, flags["request_rate"])
    results = write_results(res.records, res.steps, info, result_flags)
    for line in results.failures + results.summary:
        click.echo(line)
    for path in results.files:
        click.echo(f"[INFO] wrote {path}")
    if res.preemptions:
        click.echo(f"[INFO] {res.preemptions} preemptions (recompute): the KV cache ran out of blocks")
    if not math.isfinite(res.duration_s):
        raise AtcError("E19999", message="the simulated duration is not finite")
