"""The `serve:` section of a sweep file and the serving keys of its grid: om-run serve points (a Hugging Face model
folder, a workload, SLOs), checked field by field as spec.py checks the rest, every value written as the text a
results column holds.

Only types and plain ranges are checked here; what vLLM (or MindIE's config.json) refuses is a failed row of the
point, as om-run serve would refuse it, so the rest of the sweep runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

SERVE_KEYS = ("model", "load_format", "settings", "workload", "goodput", "slo_percentile", "mindie_config",
              "time_limit_s", "memory_limit_mb")
WORKLOAD_KEYS = ("dataset_name", "dataset_path", "num_prompts", "random_input_len", "random_output_len",
                 "random_range_ratio", "random_prefix_len", "sharegpt_output_len", "burstiness", "seed", "trace")
WORKLOAD_FILES = ("dataset_path", "trace")          # paths, relative to the sweep file: files of the job
GOODPUT_KEYS = ("ttft", "tpot", "e2el")
SHARED_KEYS = ("soc_version", "tiling_schedule_optimize")    # atc-py flags om-run serve takes as well
VLLM_KEYS = ("scheduler_version", "max_num_seqs", "max_num_batched_tokens", "block_size", "enable_chunked_prefill",
             "enable_prefix_caching", "max_model_len", "enforce_eager", "gpu_memory_utilization")
LOAD_KEYS = ("request_rate", "max_concurrency")     # the load offered: the report's series run along them
SERVE_ONLY_KEYS = ("engine", *VLLM_KEYS, *LOAD_KEYS)
SERVE_GRID_KEYS = (*SHARED_KEYS, *SERVE_ONLY_KEYS)
DEFAULT_SLO_PERCENTILE = 90.0

_CHOICES = {"engine": ("vllm", "mindie"), "scheduler_version": ("v0", "v1"), "load_format": ("dummy", "auto"),
            "dataset_name": ("random", "sharegpt")}
_POSITIVE_INTS = ("max_num_seqs", "max_num_batched_tokens", "block_size", "max_model_len", "max_concurrency",
                  "num_prompts", "random_input_len", "random_output_len", "sharegpt_output_len")
_BOOLEANS = ("enable_chunked_prefill", "enable_prefix_caching", "enforce_eager")


@dataclass(frozen=True)
class ServeEntry:
    field: str                      # "serve[0]", for messages
    model: str                      # the model folder as written, relative to the sweep file's folder
    load_format: str                # dummy (timing only) | auto (the folder's safetensors: numerics too)
    settings: dict[str, str]        # serving keys fixed for this entry (never also grid keys)
    workload: dict[str, str]        # vllm bench serve's workload flags; file flags as written
    goodput: dict[str, float]       # SLO metric -> ms
    slo_percentile: float
    mindie_config: str | None
    time_limit_s: float
    memory_limit_mb: float | None


def number_text(value) -> str:
    """4 and 4.0 are one grid value: integral numbers without a fraction, the rest as Python writes them."""
    if math.isinf(value):
        return "inf"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def serve_value(c, where: str, name: str, value) -> str:
    """A serving key's value, checked, as text (c: spec.py's checker)."""
    if name in SHARED_KEYS:
        return c.flag_value(where, value)
    if name in _CHOICES:
        return c.choice(where, value, _CHOICES[name])
    if name in _POSITIVE_INTS:
        return str(c.number(where, value, 1, integer=True))
    if name in _BOOLEANS:
        return "true" if c.boolean(where, value) else "false"
    if name == "request_rate":
        if isinstance(value, str) and value.strip().lower() == "inf":
            return "inf"
        return number_text(c.number(where, value, positive=True))
    if name == "gpu_memory_utilization":
        v = c.number(where, value, positive=True)
        if v > 1:
            raise c.fail(where, f"must be > 0 and <= 1, got {v}")
        return number_text(v)
    raise c.fail(where, f"unknown serving setting (allowed: {', '.join(SERVE_GRID_KEYS)})")


def _workload_value(c, where: str, name: str, value) -> str:
    if name in WORKLOAD_FILES:
        return c.string(where, value)
    if name in _CHOICES or name in _POSITIVE_INTS:
        return serve_value(c, where, name, value)
    if name == "burstiness":
        return number_text(c.number(where, value, positive=True))
    if name == "random_range_ratio":
        return number_text(c.number(where, value))
    return str(c.number(where, value, 0, integer=True))       # random_prefix_len, seed


def _mapping(c, where: str, doc, allowed: tuple[str, ...], hint: str) -> dict:
    """A mapping whose keys are checked; a serving setting given where it does not belong says where it goes."""
    if isinstance(doc, dict):
        for key in doc:
            if key in SERVE_GRID_KEYS and key not in allowed:
                raise c.fail(f"{where}.{key}", f"is a serving setting: {hint}")
    return c.mapping(where, doc, allowed)


def parse_serve(c, doc, grid: dict[str, list[str]], run) -> list["ServeEntry"]:
    if not isinstance(doc, list) or not doc:
        raise c.fail("serve", f"must be a non-empty list of models to serve, got {c.kind(doc)}")
    return [_entry(c, f"serve[{i}]", e, grid, run) for i, e in enumerate(doc)]


def _entry(c, where: str, doc, grid: dict, run) -> ServeEntry:
    if isinstance(doc, str):
        doc = {"model": doc}
    d = _mapping(c, where, doc, SERVE_KEYS, f"give it in grid or in {where}.settings")
    if "model" not in d:
        raise c.fail(f"{where}.model", "is required: a Hugging Face model folder (holding config.json)")
    model = c.string(f"{where}.model", d["model"])
    load_format = c.choice(f"{where}.load_format", d["load_format"], _CHOICES["load_format"]) \
        if "load_format" in d else "dummy"
    settings = {}
    for name, value in c.mapping(f"{where}.settings", d.get("settings", {}), SERVE_GRID_KEYS).items():
        if name in grid:
            raise c.fail(f"{where}.settings.{name}", "is also a grid key; give it in one place")
        settings[name] = serve_value(c, f"{where}.settings.{name}", name, value)
    workload = {name: _workload_value(c, f"{where}.workload.{name}", name, value) for name, value in
                _mapping(c, f"{where}.workload", d.get("workload", {}), WORKLOAD_KEYS,
                         f"give it in grid or in {where}.settings").items()}
    if "dataset_path" in workload and workload.get("dataset_name") != "sharegpt":
        raise c.fail(f"{where}.workload.dataset_path", "applies to dataset_name: sharegpt only")
    goodput = {name: float(c.number(f"{where}.goodput.{name}", value)) for name, value in
               c.mapping(f"{where}.goodput", d.get("goodput", {}), GOODPUT_KEYS).items()}
    pct = DEFAULT_SLO_PERCENTILE
    if "slo_percentile" in d:
        pct = float(c.number(f"{where}.slo_percentile", d["slo_percentile"], positive=True))
        if pct > 100:
            raise c.fail(f"{where}.slo_percentile", f"must be in (0, 100], got {pct:g}")
    mindie = c.string(f"{where}.mindie_config", d["mindie_config"]) if "mindie_config" in d else None
    _check_engine(c, where, grid, settings, mindie)
    if "soc_version" not in grid and "soc_version" not in settings:
        raise c.fail("grid.soc_version", f"no SoC for {where}: give soc_version in grid or in {where}.settings")
    limits = c.limits(where, d)
    return ServeEntry(field=where, model=model, load_format=load_format, settings=settings, workload=workload,
                      goodput=goodput, slo_percentile=pct, mindie_config=mindie,
                      time_limit_s=limits.get("time_limit_s", run.time_limit_s),
                      memory_limit_mb=limits.get("memory_limit_mb", run.memory_limit_mb))


def _check_engine(c, where: str, grid: dict, settings: dict, mindie: str | None) -> None:
    """MindIE reads its config.json, vLLM its flags: a config where no point runs MindIE is a mistake too."""
    engines = [settings["engine"]] if "engine" in settings else grid.get("engine", ["vllm"])
    if "mindie" in engines and mindie is None:
        raise c.fail(f"{where}.mindie_config", "is required for engine mindie: MindIE's config.json (its path)")
    if mindie is not None and "mindie" not in engines:
        raise c.fail(f"{where}.mindie_config", "applies to engine mindie only, and no point of this entry runs it")


def count_serve_points(grid: dict[str, list[str]], entries: int) -> int:
    return entries * math.prod(len(v) for k, v in grid.items() if k in SERVE_GRID_KEYS)
