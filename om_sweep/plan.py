"""From a checked sweep file to the points of the table: models (globs expanded) x the grid, and the serving
entries x the grid's serving keys (serve_plan.py).

Each point that can run becomes a Job keyed by the hash of what decides its result: the bytes of every
file it reads (model, inputs, expected values, plugins, configs), its flags, ATB settings and run settings, and the
tool version. A point whose files are missing is a failed row straight away, so the rest of the sweep runs.
"""
from __future__ import annotations

import glob
import hashlib
import itertools
import json
import pathlib
import shlex
from dataclasses import dataclass

from atc_py.common.errors import AtcError
from atc_py.plugins import plugin_paths

from .spec import FRAMEWORK_BY_SUFFIX, ModelEntry, SweepSpec, applies_to_build, check_points, is_atb


@dataclass(frozen=True)
class FileRef:
    """A file a job reads: its path on the machine that planned the sweep and the digest of its bytes."""
    role: str
    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class ServeJob:
    """What a serving point runs: om-run serve's flags but the model folder (file flags hold absolute paths, each
    one of job.files), and the SLOs its feasibility is judged by."""
    argv: tuple[str, ...]
    goodput: tuple[tuple[str, float], ...]
    slo_percentile: float

    @property
    def slos(self) -> str:
        """As om-run serve's --goodput takes them: "ttft:200 tpot:50"."""
        return " ".join(f"{k}:{v:g}" for k, v in self.goodput)


@dataclass(frozen=True)
class Job:
    key: str
    model: str                         # as shown in the table (relative to the sweep file's folder)
    flags: dict[str, str]              # atc-py flags but model/output; path flags hold absolute paths
    files: tuple[FileRef, ...]         # files[0] is the model
    inputs: str | None                 # absolute paths
    expected: str | None
    sim_config: str | None
    compute: bool
    loop: int
    seed: int
    rtol: float
    atol: float
    time_limit_s: float
    memory_limit_mb: float | None
    retries: int
    tool_version: str
    atb: tuple[tuple[str, str], ...] = ()   # ATB variable -> value of the point (the grid's); unset: ATB's default
    generate: int | None = None             # new tokens of a greedy decode loop (inputs = the prompt)
    serve: ServeJob | None = None           # a serving point: files[0] is the model's config.json


@dataclass(frozen=True)
class Point:
    """One row of the results table: what was asked, and either the job that answers it or why none can."""
    model: str
    grid: tuple[tuple[str, str], ...]
    options: str                       # the atc-py flags, as a command line
    numeric: bool
    job: Job | None
    failure: AtcError | None = None
    kind: str = "build"                # build (atc-py + om-run) | serve (om-run serve)

    def sort_key(self, grid_keys: list[str]) -> tuple:
        values = dict(self.grid)
        return (self.model, tuple(values.get(k, "") for k in grid_keys), self.options, self.numeric)

    @property
    def ident(self) -> tuple:
        """What tells two rows apart: overlapping globs, or vLLM's values under MindIE, give one point twice."""
        return self.kind, self.model, self.options, self.atb, self.numeric

    @property
    def atb(self) -> tuple[tuple[str, str], ...]:
        """The point's ATB settings: not atc-py flags, so not in `options`, yet they tell two points apart."""
        return tuple((k, v) for k, v in self.grid if is_atb(k))


@dataclass
class Plan:
    grid_keys: list[str]
    points: list[Point]

    @property
    def jobs(self) -> list[Job]:
        """Distinct jobs (two points with the same key share one run)."""
        seen: dict[str, Job] = {}
        for p in self.points:
            if p.job is not None:
                seen.setdefault(p.job.key, p.job)
        return list(seen.values())


class _Digests:
    """sha256 per path, each file read once per plan."""

    def __init__(self):
        self.cache: dict[str, tuple[str, int]] = {}

    def ref(self, role: str, path: pathlib.Path) -> FileRef:
        key = str(path)
        if key not in self.cache:
            h = hashlib.sha256()
            size = 0
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 22), b""):
                    h.update(chunk)
                    size += len(chunk)
            self.cache[key] = (h.hexdigest(), size)
        sha, size = self.cache[key]
        return FileRef(role, key, sha, size)


def _has_glob(path: str) -> bool:
    return any(ch in path for ch in "*?[")


def _display(path: pathlib.Path, base: pathlib.Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def _model_files(spec: SweepSpec, entry: ModelEntry) -> list[pathlib.Path]:
    pattern = spec.base / entry.path
    if not _has_glob(entry.path):
        return [pattern.resolve() if pattern.exists() else pattern]
    found = sorted({pathlib.Path(p).resolve() for p in glob.glob(str(pattern), recursive=True)
                    if pathlib.Path(p).is_file()})
    if not found:
        raise AtcError("E40001", path=str(spec.path), field=f"{entry.field}.path",
                       reason=f"the pattern {entry.path!r} matches no file (under {spec.base})")
    return found


def command_line(flags: dict[str, str]) -> str:
    """Flags as one would type them for atc-py, sorted by name: the `options` column."""
    return " ".join(shlex.quote(f"--{name}={value}") for name, value in sorted(flags.items()))


def parse_command_line(options: str) -> dict[str, str]:
    out = {}
    for arg in shlex.split(options or ""):
        name, _, value = arg[2:].partition("=")
        out[name] = value
    return out


def make_plan(spec: SweepSpec, tool_version: str, compute: bool | None = None) -> Plan:
    """compute=False forces --no-compute on every point (the command line's --no-compute)."""
    from .serve_plan import serve_points
    grid_keys = list(spec.grid)
    build_grid = {k: v for k, v in spec.grid.items() if applies_to_build(k)}
    files = [_model_files(spec, entry) for entry in spec.models]
    check_points(spec.path, spec.grid, spec.run.max_points, sum(len(f) for f in files), "model files",
                 len(spec.serve))
    combos = [tuple(zip(build_grid, values)) for values in itertools.product(*build_grid.values())]
    digests = _Digests()
    points: list[Point] = []
    for entry, model_files in zip(spec.models, files):
        numeric = entry.compute if compute is None else (compute and entry.compute)
        for model_path in model_files:
            framework = entry.framework or FRAMEWORK_BY_SUFFIX.get(model_path.suffix.lower())
            if framework is None:
                raise AtcError("E40001", path=str(spec.path), field=f"{entry.field}.framework",
                               reason=f"is required for {model_path.name} (not .onnx or .pb)")
            shown = _display(model_path, spec.base)
            for combo in combos:
                flags = {"framework": framework, **entry.flags, **{k: v for k, v in combo if not is_atb(k)}}
                atb = tuple(sorted((k, v) for k, v in combo if is_atb(k)))
                options = command_line(flags)
                try:
                    job = _job(spec, entry, model_path, shown, flags, atb, numeric, digests, tool_version)
                    points.append(Point(shown, combo, options, numeric, job))
                except AtcError as exc:
                    points.append(Point(shown, combo, options, numeric, None, exc))
    points.sort(key=lambda p: p.sort_key(grid_keys))
    points += serve_points(spec, digests, tool_version, compute)     # in the grid's order: rates rise along a row
    unique, seen = [], set()
    for p in points:
        if p.ident not in seen:
            seen.add(p.ident)
            unique.append(p)
    return Plan(grid_keys, unique)


def _existing(spec: SweepSpec, field: str, value: str) -> pathlib.Path:
    path = (spec.base / value)
    if not path.is_file():
        raise AtcError("E40003", field=field, path=str(path.resolve()))
    return path.resolve()


def _job(spec: SweepSpec, entry: ModelEntry, model_path: pathlib.Path, shown: str, flags: dict[str, str],
         atb: tuple[tuple[str, str], ...], numeric: bool, digests: _Digests, tool_version: str) -> Job:
    if not model_path.is_file():
        raise AtcError("E40003", field=f"{entry.field}.path", path=str(model_path))
    if entry.generate and not numeric:     # `om-sweep run --no-compute`: om-run --generate refuses it the same way
        raise AtcError("E30002", reason="--generate: --no-compute does not apply: each step's inputs come from the "
                                        "prompt and the tokens so far")
    files = [digests.ref("model", model_path)]
    job_flags = dict(flags)
    if job_flags.get("op_plugin"):
        parts = [str((spec.base / p).resolve()) for p in job_flags["op_plugin"].split(":") if p]
        plugins = plugin_paths(":".join(parts), include_env=False)
        files += [digests.ref("op_plugin", p.resolve()) for p in plugins]
        job_flags["op_plugin"] = ":".join(str(p.resolve()) for p in plugins)
    if job_flags.get("op_attr_config"):
        path = _existing(spec, f"{entry.field}.flags.op_attr_config", job_flags["op_attr_config"])
        files.append(digests.ref("op_attr_config", path))
        job_flags["op_attr_config"] = str(path)
    inputs = expected = None
    if numeric and entry.inputs:
        if entry.inputs.endswith(".npz"):
            inputs_files = [_existing(spec, f"{entry.field}.inputs", entry.inputs)]
        else:
            inputs_files = [_existing(spec, f"{entry.field}.inputs", p) for p in entry.inputs.split(",")]
        files += [digests.ref("inputs", p) for p in inputs_files]
        inputs = ",".join(str(p) for p in inputs_files)
    if numeric and entry.expected:
        path = _existing(spec, f"{entry.field}.expected", entry.expected)
        files.append(digests.ref("expected", path))
        expected = str(path)
    sim_config = spec.run.sim_config
    if sim_config:
        files.append(digests.ref("sim_config", pathlib.Path(sim_config)))
    run = spec.run
    identity = {
        "tool": tool_version, "model": shown, "flags": flags, "atb": dict(atb),
        "files": [[f.role, f.sha256] for f in files],
        "compute": numeric, "loop": None if entry.generate else run.loop,
        "seed": run.seed if numeric and not inputs else None,
        "tolerance": [entry.rtol, entry.atol] if expected else None, "generate": entry.generate,
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return Job(key=key, model=shown, flags=job_flags, files=tuple(files), inputs=inputs, expected=expected,
               sim_config=sim_config, compute=numeric, loop=run.loop, seed=run.seed, rtol=entry.rtol,
               atol=entry.atol, time_limit_s=entry.time_limit_s, memory_limit_mb=entry.memory_limit_mb,
               retries=run.retries, tool_version=tool_version, atb=atb, generate=entry.generate)
