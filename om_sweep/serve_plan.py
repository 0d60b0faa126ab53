"""The serving points of a sweep: each `serve:` entry x the grid's serving keys, as om-run serve command lines.

A point's job key hashes its command line and the bytes of every file it reads (config.json, the safetensors
with load_format auto, MindIE's config, the dataset or trace), so two machines with the same files share results.
Under MindIE the vLLM settings do not apply (its config.json holds them): they are left out of the point, and the
grid's vLLM values give one MindIE point, not several equal ones.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import pathlib
import shlex

from atc_py.common.errors import AtcError

from .plan import FileRef, Job, Point, ServeJob, _Digests, _display
from .serve_spec import SERVE_GRID_KEYS, VLLM_KEYS, WORKLOAD_FILES, ServeEntry
from .spec import SweepSpec

# sweep-file names whose om-run serve flag is not the name with dashes
FLAG_NAMES = {"soc_version": "--soc_version", "tiling_schedule_optimize": "--tiling_schedule_optimize",
              "trace": "--trace"}
SWITCHES = {"enable_chunked_prefill": True, "enable_prefix_caching": True, "enforce_eager": False}   # --no-X?


def flag_args(name: str, value: str) -> list[str]:
    """One setting as om-run serve's arguments: booleans are switches (`--enforce-eager` has no `--no-` form)."""
    flag = FLAG_NAMES.get(name, "--" + name.replace("_", "-"))
    if name in SWITCHES:
        if value == "true":
            return [flag]
        return [f"--no-{flag[2:]}"] if SWITCHES[name] else []
    return [f"{flag}={value}"]


def weight_files(folder: pathlib.Path) -> list[pathlib.Path]:
    """What --load-format auto reads beside config.json: model.safetensors, or the index and the shards it lists
    (missing ones are om-run's error in the job, named as it names them)."""
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        return [p for p in [folder / "model.safetensors"] if p.is_file()]
    try:
        shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return [index]
    return [index] + [folder / s for s in shards if isinstance(s, str) and (folder / s).is_file()]


def serve_points(spec: SweepSpec, digests: _Digests, tool_version: str, compute: bool | None) -> list[Point]:
    grid = {k: v for k, v in spec.grid.items() if k in SERVE_GRID_KEYS}
    combos = [tuple(zip(grid, values)) for values in itertools.product(*grid.values())]
    points = []
    for entry in spec.serve:
        load_format = "dummy" if compute is False else entry.load_format
        folder = (spec.base / entry.model).resolve()
        shown = _display(folder, spec.base)
        for combo in combos:
            settings = {**entry.settings, **dict(combo)}
            if settings.get("engine") == "mindie":
                settings = {k: v for k, v in settings.items() if k not in VLLM_KEYS}
                combo = tuple((k, v) for k, v in combo if k not in VLLM_KEYS)
            shown_argv, argv, files = _command_line(spec, entry, load_format, settings, folder, digests)
            options = " ".join(shlex.quote(a) for a in shown_argv)
            numeric = load_format == "auto"
            try:
                files = [digests.ref("config", _existing(folder / "config.json", f"{entry.field}.model"))] + files
                job = _job(spec, entry, shown, shown_argv, argv, files, numeric, tool_version)
                points.append(Point(shown, combo, options, numeric, job, kind="serve"))
            except AtcError as exc:
                points.append(Point(shown, combo, options, numeric, None, exc, kind="serve"))
            except OSError as exc:
                failure = AtcError("E40003", field=f"{entry.field}.model", path=f"{folder} ({exc.strerror or exc})")
                points.append(Point(shown, combo, options, numeric, None, failure, kind="serve"))
    return points


def _existing(path: pathlib.Path, field: str) -> pathlib.Path:
    if not path.is_file():
        raise AtcError("E40003", field=field, path=str(path))
    return path


def _command_line(spec: SweepSpec, entry: ServeEntry, load_format: str, settings: dict, folder: pathlib.Path,
                  digests: _Digests) -> tuple[list[str], list[str], list[FileRef]]:
    """(the arguments as shown, as run, the files they read): shown with paths as the sweep file gives them, run
    with absolute ones. Sorted by flag, so one point has one command line."""
    shown = [f"--load-format={load_format}"]
    for name, value in {**entry.workload, **settings}.items():
        if name not in WORKLOAD_FILES:
            shown += flag_args(name, value)
    shown += [f"--goodput={k}:{v:g}" for k, v in entry.goodput.items()]
    shown.append(f"--slo-percentile={entry.slo_percentile:g}")
    run, refs = list(shown), []
    paths = {name: entry.workload[name] for name in WORKLOAD_FILES if name in entry.workload}
    if entry.mindie_config is not None and settings.get("engine") == "mindie":
        paths["mindie_config"] = entry.mindie_config
    for name, value in paths.items():
        path = (spec.base / value).resolve()
        shown += flag_args(name, value)
        run += flag_args(name, str(path))
        if path.is_file():                     # a missing one is om-run's error in the job, as it words it
            refs.append(digests.ref(name, path))
    if load_format == "auto":
        refs += [digests.ref("weights", p) for p in weight_files(folder)]
    return sorted(shown), sorted(run), refs


def _job(spec: SweepSpec, entry: ServeEntry, shown: str, shown_argv: list[str], argv: list[str],
         files: list[FileRef], numeric: bool, tool_version: str) -> Job:
    identity = {"tool": tool_version, "kind": "serve", "model": shown, "argv": shown_argv,
                "files": [[f.role, f.sha256] for f in files]}
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    serve = ServeJob(tuple(argv), tuple(sorted(entry.goodput.items())), entry.slo_percentile)
    return Job(key=key, model=shown, flags={}, files=tuple(files), inputs=None, expected=None, sim_config=None,
               compute=numeric, loop=1, seed=0, rtol=0.0, atol=0.0, time_limit_s=entry.time_limit_s,
               memory_limit_mb=entry.memory_limit_mb, retries=spec.run.retries,
               tool_version=tool_version, serve=serve)
