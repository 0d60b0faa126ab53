"""--save-result: the JSON file vllm bench serve writes, with its keys, their order and their units, so the tools
that read vllm's result files (and a diff against one from the device) read the simulated run's file too.

Source: vllm-project/vllm, vllm/benchmarks/serve.py on main at 009e6d4a: main_async() (the setup keys, --metadata,
the traffic keys, the --save-detailed filter, --append-result), benchmark() (the result dict and
process_one_metric's mean_/median_/std_/p{N}_<metric>_ms keys) and compute_result_filename(). Units as vllm's: the
aggregate latencies in ms; duration, ttfts, itls, latencies, start_times and queue_times in seconds (start_times
from the run's start, where vllm's are perf_counter readings). Without
--save-detailed vllm drops input_lens, output_lens, start_times, ttfts, itls, generated_texts and errors (it keeps
latencies and queue_times). The simulation has no text: generated_texts are empty strings. Not written: vllm's
.pytorch.json twin (only with SAVE_TO_PYTORCH_BENCHMARK_FORMAT set) and the keys of features the simulation
lacks (ramp-up, probes, speculative and diffusion decoding).
"""
from __future__ import annotations

import datetime
import json
import math
import os
import pathlib
from typing import Any, Iterable, Sequence

from atc_py.common.atomic_write import make_output_dir, write_atomic
from atc_py.common.errors import AtcError

from ..request import RequestRecord
from .metrics import ServeMetrics, percentile_word, reported

DETAILED_KEYS = ("input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors")


def run_date(run_info: dict) -> str:
    """vllm's current_dt ("%Y%m%d-%H%M%S", local time); run_info["date"] pins it (tests, reruns)."""
    return run_info.get("date") or datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def parse_metadata(items: Iterable[str] | None) -> list[tuple[str, str]]:
    """--metadata KEY=VALUE ...: split at the first '=', both sides stripped."""
    pairs = []
    for item in items or ():
        if "=" not in item:
            raise AtcError("E10001", value=repr(item), parameter="--metadata",
                           reason="Invalid metadata format. Please use KEY=VALUE format.")
        key, value = item.split("=", 1)
        pairs.append((key.strip(), value.strip()))
    return pairs


def default_filename(run_info: dict, date: str) -> str:
    """{label or backend}-{request_rate}qps[-concurrency{N}]-{last part of the model id}-{date}.json"""
    label = run_info.get("label") or run_info.get("backend", "openai")
    rate = float(run_info.get("request_rate", math.inf))
    mc = run_info.get("max_concurrency")
    concurrency = f"-concurrency{mc}" if mc is not None else ""
    model = str(run_info.get("model_id", "model")).split("/")[-1]
    return f"{label}-{rate}qps{concurrency}-{model}-{date}.json"


def result_path(run_info: dict, date: str, result_filename: str | None = None,
                result_dir: str | os.PathLike | None = None) -> pathlib.Path:
    """--result-filename or the default name, inside --result-dir (created) when one is given."""
    name = result_filename or default_filename(run_info, date)
    if result_dir:
        return make_output_dir(result_dir, "result") / name
    return pathlib.Path(name)


def _stats_keys(m: ServeMetrics) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, _, _ in reported(m):
        s = m.stats[key]
        out[f"mean_{key}_ms"] = s.mean_ms
        out[f"median_{key}_ms"] = s.median_ms
        out[f"std_{key}_ms"] = s.std_ms
        for p, v in s.percentiles_ms:
            out[f"p{percentile_word(p)}_{key}_ms"] = v
    return out


def result_json(records: Sequence[RequestRecord], m: ServeMetrics, run_info: dict,
                metadata: Iterable[str] | None = None, detailed: bool = False) -> dict[str, Any]:
    """The dict vllm dumps: setup, metadata, traffic, the benchmark's results, the per-metric statistics."""
    model_id = run_info.get("model_id", "")
    backend = run_info.get("backend", "openai")
    rate = float(run_info.get("request_rate", math.inf))
    out: dict[str, Any] = {
        "date": run_date(run_info),
        "endpoint_type": backend,
        "backend": backend,
        "label": run_info.get("label"),
        "model_id": model_id,
        "tokenizer_id": run_info.get("tokenizer_id") or model_id,
        "num_prompts": run_info.get("num_prompts", len(records)),
    }
    out.update(parse_metadata(metadata))
    out["request_rate"] = rate if rate < math.inf else "inf"
    out["burstiness"] = float(run_info.get("burstiness", 1.0))
    out["max_concurrency"] = run_info.get("max_concurrency")
    out.update({
        "duration": m.duration_s,
        "completed": m.completed,
        "failed": m.failed,
        "total_input_tokens": m.total_input,
        "total_output_tokens": m.total_output,
        "request_throughput": m.request_throughput,
        "request_goodput": m.request_goodput,
        "output_throughput": m.output_throughput,
        "total_token_throughput": m.total_token_throughput,
        "input_lens": [r.prompt_len for r in records],
        "output_lens": list(m.output_lens),
        "ttfts": [r.ttft_s if r.token_s else 0.0 for r in records],
        "itls": [r.itl_s for r in records],
        "latencies": [r.e2el_s if r.success else 0.0 for r in records],
        "start_times": [r.arrival_s for r in records],
        "queue_times": [r.queued_s for r in records],
        "generated_texts": ["" for _ in records],
        "errors": [r.error for r in records],
        "max_output_tokens_per_s": m.max_output_tokens_per_s,
        "max_concurrent_requests": m.max_concurrent_requests,
        "rtfx": 0.0,
    })
    out.update(_stats_keys(m))
    if not detailed:
        for key in DETAILED_KEYS:
            out.pop(key, None)
    return out


def write_result(path: str | os.PathLike, result: dict[str, Any], append: bool = False) -> pathlib.Path:
    """json.dump's default layout on one line; --append-result adds it after a newline to what the file holds."""
    path = pathlib.Path(path)
    text = json.dumps(result)
    if append and path.exists():
        try:
            old = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise AtcError("E13003", file=str(path), errmsg=exc.strerror or str(exc)) from None
        text = old + ("\n" if old else "") + text
    write_atomic(path, text.encode("utf-8"))
    return path
