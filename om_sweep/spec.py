"""The sweep file (YAML or TOML): read it, check every field, and give back a typed SweepSpec.

Nothing in the file is trusted: each field is checked for its type and range and an error names the
field (`models[1].flags.soc_versoin: unknown atc-py flag`). Files the models refer to are not opened
here: a missing one is a failed point in the results (plan.py), not a reason to refuse the sweep.

Grid keys are atc-py flags or ATB's environment variables (om_run/sim/atb.py): the latter are run-time settings of
the simulated host, checked here with ATB's own ranges and given to each job's Simulation, never to atc-py. With a
`serve:` section (serve_spec.py) they may also be om-run serve's settings; each point takes the keys of its kind.
"""
from __future__ import annotations

import math
import os
import pathlib
import stat
from collections import Counter
from dataclasses import dataclass, field, replace

from atc_py.cli import flags as cmdline
from atc_py.common.errors import AtcError
from om_run.sim.atb import ALIASES as ATB_ALIASES
from om_run.sim.atb import VARIABLES as ATB_VARIABLES
from om_run.sim.atb import AtbSettings

from .serve_spec import SERVE_GRID_KEYS, SERVE_ONLY_KEYS, ServeEntry, count_serve_points, parse_serve, serve_value
from .yaml_doc import load_yaml

# atc-py flags om-sweep sets itself or that make no sense in a sweep
RESERVED_FLAGS = {"mode": "om-sweep always builds (mode 0)", "model": "give it as models[].path",
                  "output": "om-sweep chooses the output", "om": "mode 1/6 only", "json": "mode 1/6 only",
                  "help": "not a build flag", "log": "om-sweep records errors, not logs",
                  "display_model_info": "not recorded", "framework": "give it as models[].framework"}
SWEEP_FLAGS = tuple(name for name in cmdline.FLAGS if name not in RESERVED_FLAGS)
PATH_FLAGS = ("op_plugin", "op_attr_config")      # paths, resolved against the sweep file's folder
FRAMEWORK_BY_SUFFIX = {".onnx": "5", ".pb": "3"}
ATB_KEYS = (*ATB_VARIABLES, *ATB_ALIASES)        # grid keys that set ATB's host mechanisms, not atc-py flags

MODEL_KEYS = ("path", "framework", "flags", "inputs", "expected", "rtol", "atol", "compute", "time_limit_s",
              "memory_limit_mb", "generate")
RUN_KEYS = ("compute", "loop", "seed", "rtol", "atol", "time_limit_s", "memory_limit_mb", "retries", "sim_config",
            "generate", "max_points")
TOP_KEYS = ("models", "serve", "grid", "run")
MAX_SWEEP_FILE_BYTES = 16 << 20     # a sweep file is a few KiB; a zoo of thousands of entries stays far below
DEFAULT_MAX_POINTS = 100_000        # points of a sweep (models x grid); run.max_points / --max-points raise it


@dataclass(frozen=True)
class RunSettings:
    """Defaults for every point (`run:` in the file); a model entry may override compute, tolerances, limits."""
    compute: bool = True            # numeric simulation (om-run's default); false = --no-compute
    loop: int = 1
    seed: int = 0                   # random inputs of models without `inputs`
    rtol: float = 1e-4
    atol: float = 1e-4
    time_limit_s: float = 600.0
    memory_limit_mb: float | None = None
    retries: int = 2                # re-runs of a job whose process crashed
    sim_config: str | None = None   # om-run --sim-config, resolved path
    generate: int | None = None     # om-run --generate N for every model (a model entry's value wins)
    max_points: int = DEFAULT_MAX_POINTS   # refuse a sweep of more points before expanding its grid


@dataclass(frozen=True)
class ModelEntry:
    field: str                      # "models[2]", for messages
    path: str                       # as written: a file or a glob, relative to the sweep file's folder
    framework: str | None           # "3" / "5"; None = from the suffix of each matched file
    flags: dict[str, str]
    inputs: str | None
    expected: str | None
    rtol: float
    atol: float
    compute: bool
    time_limit_s: float
    memory_limit_mb: float | None
    generate: int | None = None     # new tokens of a greedy decode loop (inputs = the prompt); None: one execution


@dataclass(frozen=True)
class SweepSpec:
    path: pathlib.Path
    base: pathlib.Path              # the folder relative paths are resolved against
    models: list[ModelEntry]
    grid: dict[str, list[str]]      # flag, ATB variable or serving setting -> values, in the file's order
    run: RunSettings = field(default_factory=RunSettings)
    serve: list[ServeEntry] = field(default_factory=list)


def applies_to_build(name: str) -> bool:
    """A grid key of the models' points (atc-py flags and ATB variables; soc_version and tiling sink: both kinds)."""
    return name not in SERVE_ONLY_KEYS


def applies_to_serve(name: str) -> bool:
    return name in SERVE_GRID_KEYS


def is_atb(name: str) -> bool:
    """A grid key that is one of ATB's environment variables (a run-time setting, not an atc-py flag)."""
    return name in ATB_KEYS


class _Checker:
    def __init__(self, path: pathlib.Path):
        self.path = path

    def fail(self, where: str, reason: str) -> AtcError:
        return AtcError("E40001", path=str(self.path), field=where, reason=reason)

    def mapping(self, where: str, value, allowed: tuple[str, ...]) -> dict:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be a mapping, got {_kind(value)}")
        for key in value:
            if not isinstance(key, str) or key not in allowed:
                raise self.fail(f"{where}.{key}" if where else str(key),
                                f"unknown key (allowed: {', '.join(allowed)})")
        return value

    def string(self, where: str, value) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, f"must be a non-empty string, got {_kind(value)}")
        return value

    def choice(self, where: str, value, allowed: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(where, f"must be one of {', '.join(allowed)}, got {_kind(value)}")
        return value

    @staticmethod
    def kind(value) -> str:
        return _kind(value)

    def limits(self, where: str, d: dict) -> dict:
        return _limits(self, where, d)

    def boolean(self, where: str, value) -> bool:
        if not isinstance(value, bool):
            raise self.fail(where, f"must be true or false, got {_kind(value)}")
        return value

    def number(self, where: str, value, minimum: float = 0.0, integer: bool = False, positive: bool = False):
        ok = isinstance(value, int) if integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok:
            raise self.fail(where, f"must be {'an integer' if integer else 'a number'}, got {_kind(value)}")
        if value < minimum or (positive and value <= 0) or value != value:
            raise self.fail(where, f"must be {'> ' if positive else '>= '}{minimum:g}, got {value}")
        return value

    def flag_value(self, where: str, value) -> str:
        """atc-py flags are strings on the command line; YAML scalars become the text one would type."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, str):
            return value
        raise self.fail(where, f"must be a string, integer or boolean (an atc-py flag value), got {_kind(value)}")

    def flag_name(self, where: str, name, in_grid: bool = False) -> str:
        if name in RESERVED_FLAGS:
            raise self.fail(where, f"--{name} cannot be set in a sweep: {RESERVED_FLAGS[name]}")
        if is_atb(name):
            raise self.fail(where, "is an ATB environment variable, a run-time setting: give it as a grid key")
        if name not in SWEEP_FLAGS:
            more = f"; or ATB's environment variables: {', '.join(ATB_KEYS)}; or serving settings (serve: points): " \
                   f"{', '.join(SERVE_ONLY_KEYS)}" if in_grid else ""
            raise self.fail(where, f"unknown atc-py flag (flags: {', '.join(SWEEP_FLAGS)}{more})")
        return name

    def atb_value(self, where: str, name: str, value) -> str:
        """An ATB variable's value, checked as ATB reads it (AtbSettings.from_env), written as the integer it is."""
        text = self.flag_value(where, value)
        if not text.strip():
            raise self.fail(where, f"must be an integer (ATB's value), got {_kind(value)}")
        try:
            settings = AtbSettings.from_env({name: text})
        except AtcError as exc:
            reason = str(exc.fields.get("reason", exc.message)).split(": ", 1)[-1]
            raise self.fail(where, f"{reason}, got {_kind(value)}") from None
        return str(getattr(settings, ATB_VARIABLES[ATB_ALIASES.get(name, name)][0]))


def _kind(value) -> str:
    if value is None:
        return "nothing (null)"
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "a mapping"}
    return f"{names.get(type(value), type(value).__name__)} {value!r}"[:80]


def load_document(path: pathlib.Path):
    """The parsed file: YAML (yaml_doc.py: plain data, unique keys) or TOML (whose keys are unique too) by
    suffix."""
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise AtcError("E40001", path=str(path), field="(file)", reason="the sweep file must be .yaml, .yml or .toml")
    text = read_sweep_text(path)
    if suffix == ".toml":
        try:
            import tomllib
        except ImportError:
            raise AtcError("E40008", package="tomllib (Python 3.11+) for TOML sweep files") from None
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise AtcError("E40002", path=str(path), reason=f"TOML syntax error: {exc}") from None
    return load_yaml(text, str(path))


def _unreadable(path: pathlib.Path, reason: str) -> AtcError:
    return AtcError("E40002", path=str(path), reason=reason)


def _regular_size(path: pathlib.Path, st: os.stat_result) -> int:
    """A FIFO would block the read, /dev/zero never ends, a huge file fills memory: only a regular file of sane size."""
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else \
            "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a special file"
        raise _unreadable(path, f"it is {kind}, not a regular file")
    if st.st_size > MAX_SWEEP_FILE_BYTES:
        raise _unreadable(path, f"it holds {st.st_size} bytes; a sweep file may hold at most "
                                f"{MAX_SWEEP_FILE_BYTES >> 20} MiB")
    return st.st_size


def read_sweep_text(path: pathlib.Path) -> str:
    """The file's text, checked by stat before it is opened and by fstat after (it may be swapped in between)."""
    try:
        _regular_size(path, os.stat(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise _unreadable(path, exc.strerror or str(exc)) from None
    try:
        with os.fdopen(fd, "rb") as f:
            _regular_size(path, os.fstat(f.fileno()))
            data = f.read(MAX_SWEEP_FILE_BYTES + 1)
    except OSError as exc:
        raise _unreadable(path, exc.strerror or str(exc)) from None
    if len(data) > MAX_SWEEP_FILE_BYTES:
        raise _unreadable(path, f"it grew past {MAX_SWEEP_FILE_BYTES >> 20} MiB while read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _unreadable(path, str(exc)) from None


def load_spec(path, max_points: int | None = None) -> SweepSpec:
    """max_points: the command line's --max-points, over the file's run.max_points."""
    path = pathlib.Path(path)
    return parse_spec(load_document(path), path, max_points)


def count_points(grid: dict[str, list[str]], models: int, serve: int = 0) -> int:
    """Points of `models` model files x the grid's build keys, and of `serve` serving entries x its serving keys,
    counted without expanding the grid."""
    build = models * math.prod(len(v) for k, v in grid.items() if applies_to_build(k)) if models else 0
    return build + count_serve_points(grid, serve)


def check_points(path: pathlib.Path, grid: dict[str, list[str]], limit: int, models: int, what: str,
                 serve: int = 0) -> None:
    """Refuse a sweep of more than `limit` points before its grid is expanded (a grid of 7 keys of 25 values is
    6e9 points: gigabytes of plan before the first job)."""
    points = count_points(grid, models, serve)
    if points > limit:
        parts = []
        for n, kind, keep in ((models, what, applies_to_build), (serve, "serve entries", applies_to_serve)):
            if n:
                sizes = " x ".join(str(len(v)) for k, v in grid.items() if keep(k)) or "1"
                parts.append(f"{n} {kind} x {sizes} grid values")
        raise AtcError("E40001", path=str(path), field="grid",
                       reason=f"{' + '.join(parts)} = {points:,} points, more than the limit of "
                              f"{limit:,} (raise it with run.max_points or om-sweep run --max-points)")


def parse_spec(doc, path: pathlib.Path, max_points: int | None = None) -> SweepSpec:
    c = _Checker(path)
    base = path.resolve().parent
    if doc is None:
        raise c.fail("(file)", "the file is empty; it needs at least `models:` (or `serve:`)")
    top = c.mapping("", doc, TOP_KEYS)
    run = _run_settings(c, top.get("run", {}), base)
    if max_points is not None:
        run = replace(run, max_points=max_points)
    grid = _grid(c, top.get("grid", {}))
    if "models" not in top and "serve" not in top:
        raise c.fail("models", "is required: a list of models (path, framework, ...); or serve: models to serve")
    models_doc = top.get("models", [])
    if "models" in top and (not isinstance(models_doc, list) or not models_doc):
        raise c.fail("models", f"must be a non-empty list, got {_kind(models_doc)}")
    serve_doc = top.get("serve")
    _grid_applies(c, grid, bool(models_doc), serve_doc is not None)
    check_points(path, grid, run.max_points, len(models_doc), "model entries",
                 len(serve_doc) if isinstance(serve_doc, list) else 0)      # each entry gives >= 1 file
    models = [_model(c, f"models[{i}]", m, grid, run) for i, m in enumerate(models_doc)]
    for m in models:
        if "soc_version" not in grid and "soc_version" not in m.flags:
            raise c.fail("grid.soc_version", f"no SoC for {m.field}: give soc_version in grid or in {m.field}.flags")
    serve = parse_serve(c, serve_doc, grid, run) if serve_doc is not None else []
    return SweepSpec(path=path, base=base, models=models, grid=grid, run=run, serve=serve)


def _grid_applies(c: _Checker, grid: dict, models: bool, serve: bool) -> None:
    """Every grid key sets something in some point: a serving setting needs serve:, an atc-py flag models:."""
    for name in grid:
        if not models and not applies_to_serve(name):
            raise c.fail(f"grid.{name}", "applies to models: points (atc-py flags, ATB variables), and this file has "
                                         f"none; serving settings: {', '.join(SERVE_GRID_KEYS)}")
        if not serve and not applies_to_build(name):
            raise c.fail(f"grid.{name}", "is a serving setting: it applies to serve: points, and this file has none")


def _run_settings(c: _Checker, doc, base: pathlib.Path) -> RunSettings:
    d = c.mapping("run", doc, RUN_KEYS)
    kw = {}
    if "compute" in d:
        kw["compute"] = c.boolean("run.compute", d["compute"])
    if "loop" in d:
        kw["loop"] = c.number("run.loop", d["loop"], 1, integer=True)
    if "seed" in d:
        kw["seed"] = c.number("run.seed", d["seed"], 0, integer=True)
    if "retries" in d:
        kw["retries"] = c.number("run.retries", d["retries"], 0, integer=True)
    for key in ("rtol", "atol"):
        if key in d:
            kw[key] = float(c.number(f"run.{key}", d[key]))
    kw.update(_limits(c, "run", d))
    if "sim_config" in d:
        sim = base / c.string("run.sim_config", d["sim_config"])
        if not sim.is_file():
            raise c.fail("run.sim_config", f"file not found: {sim}")
        kw["sim_config"] = str(sim)
    if "generate" in d:
        kw["generate"] = c.number("run.generate", d["generate"], 1, integer=True)
    if "max_points" in d:
        kw["max_points"] = c.number("run.max_points", d["max_points"], 1, integer=True)
    return RunSettings(**kw)


def _limits(c: _Checker, where: str, d: dict) -> dict:
    kw = {}
    if "time_limit_s" in d:
        kw["time_limit_s"] = float(c.number(f"{where}.time_limit_s", d["time_limit_s"], positive=True))
    if "memory_limit_mb" in d and d["memory_limit_mb"] is not None:
        kw["memory_limit_mb"] = float(c.number(f"{where}.memory_limit_mb", d["memory_limit_mb"], positive=True))
    return kw


def _grid(c: _Checker, doc) -> dict[str, list[str]]:
    if not isinstance(doc, dict):
        raise c.fail("grid", f"must be a mapping of atc-py flag (or ATB variable, or serving setting) -> list of "
                             f"values, got {_kind(doc)}")
    grid: dict[str, list[str]] = {}
    for name, values in doc.items():
        where = f"grid.{name}"
        atb = is_atb(name)
        serving = name in SERVE_ONLY_KEYS
        if not atb and not serving:
            c.flag_name(where, name, in_grid=True)
        if not isinstance(values, list):
            values = [values]
        if not values:
            raise c.fail(where, "must list at least one value")
        vals = [c.atb_value(f"{where}[{i}]", name, v) if atb else
                serve_value(c, f"{where}[{i}]", name, v) if serving else c.flag_value(f"{where}[{i}]", v)
                for i, v in enumerate(values)]
        dup = sorted(v for v, n in Counter(vals).items() if n > 1)     # linear: a grid key may list many values
        if dup:
            raise c.fail(where, f"value {dup[0]!r} is listed twice")
        grid[name] = vals
    for alias, canonical in ATB_ALIASES.items():
        if alias in grid and canonical in grid:
            raise c.fail(f"grid.{alias}", f"is ATB's other spelling of {canonical}, also a grid key; give it once")
    return grid


def _model(c: _Checker, where: str, doc, grid: dict, run: RunSettings) -> ModelEntry:
    if isinstance(doc, str):
        doc = {"path": doc}
    d = c.mapping(where, doc, MODEL_KEYS)
    if "path" not in d:
        raise c.fail(f"{where}.path", "is required: the model file (or a glob)")
    path = c.string(f"{where}.path", d["path"])
    framework = None
    if "framework" in d:
        fw = d["framework"]
        fw = str(fw) if isinstance(fw, int) and not isinstance(fw, bool) else fw
        if fw not in ("3", "5"):
            raise c.fail(f"{where}.framework", f"must be 3 (TensorFlow) or 5 (ONNX), got {_kind(d['framework'])}")
        framework = fw
    elif not any(ch in path for ch in "*?[") and pathlib.Path(path).suffix.lower() not in FRAMEWORK_BY_SUFFIX:
        raise c.fail(f"{where}.framework", "is required when the file is not .onnx (5) or .pb (3)")
    flags: dict[str, str] = {}
    flags_doc = d.get("flags", {})
    if not isinstance(flags_doc, dict):
        raise c.fail(f"{where}.flags", f"must be a mapping of atc-py flag -> value, got {_kind(flags_doc)}")
    for name, value in flags_doc.items():
        fwhere = f"{where}.flags.{name}"
        c.flag_name(fwhere, name)
        if name in grid:
            raise c.fail(fwhere, f"--{name} is also a grid key; give it in one place")
        flags[name] = c.flag_value(fwhere, value)
        if name in PATH_FLAGS and not flags[name].strip():
            raise c.fail(fwhere, "must name a file")
    inputs = c.string(f"{where}.inputs", d["inputs"]) if "inputs" in d else None
    expected = c.string(f"{where}.expected", d["expected"]) if "expected" in d else None
    compute = c.boolean(f"{where}.compute", d["compute"]) if "compute" in d else run.compute
    if expected and not compute:
        raise c.fail(f"{where}.expected", "needs a numeric run (compute: true)")
    rtol = float(c.number(f"{where}.rtol", d["rtol"])) if "rtol" in d else run.rtol
    atol = float(c.number(f"{where}.atol", d["atol"])) if "atol" in d else run.atol
    limits = _limits(c, where, d)
    generate = _generate(c, where, d, run, inputs, expected, compute)
    return ModelEntry(field=where, path=path, framework=framework, flags=flags, inputs=inputs, expected=expected,
                      rtol=rtol, atol=atol, compute=compute,
                      time_limit_s=limits.get("time_limit_s", run.time_limit_s),
                      memory_limit_mb=limits.get("memory_limit_mb", run.memory_limit_mb), generate=generate)


def _generate(c: _Checker, where: str, d: dict, run: RunSettings, inputs: str | None, expected: str | None,
              compute: bool) -> int | None:
    """The entry's new tokens (its own or run.generate): a decode loop needs numerics and a prompt, and has no
    single output to compare with `expected` (om-run --generate refuses --expected and --no-compute too)."""
    own = "generate" in d
    generate = c.number(f"{where}.generate", d["generate"], 1, integer=True) if own else run.generate
    if generate is None:
        return None
    at = f"{where}.generate" if own else "run.generate"
    for_entry = "" if own else f" for {where}"
    if not compute:
        raise c.fail(at, f"needs a numeric run (compute: true){for_entry}")
    if expected:
        raise c.fail(f"{where}.expected", "does not apply with generate: each step's inputs come from the prompt "
                                          "and the tokens so far")
    if not inputs:
        raise c.fail(f"{where}.inputs", f"is required with generate{for_entry}: the prompt (.npz holding input_ids "
                                        "[1, P], or one .npy of them)")
    suffix = inputs.lower()
    if not (suffix.endswith(".npz") or (suffix.endswith(".npy") and "," not in inputs)):
        raise c.fail(f"{where}.inputs", f"the prompt of generate is one .npz holding input_ids or one .npy, got "
                                        f"{inputs!r}")
    return generate
