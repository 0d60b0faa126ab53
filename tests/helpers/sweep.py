"""Helpers of the om-sweep tests: sweep files over the samples, running the command in-process."""
from __future__ import annotations

import os
import pathlib
import traceback

import yaml
from click.testing import CliRunner

from om_sweep.cli import main
from om_sweep.job import WALL_CLOCK_FIELDS
from om_sweep.table import read_results

from . import MODELS, PLUGIN, ROOT  # noqa: F401  (the sweep tests take them from here)


def sample_models() -> list[dict]:
    """Every sample (ONNX + TF), with its inputs and plugin: models/*.onnx and models/tf_lenet.pb."""
    entries = []
    for path in sorted(MODELS.glob("*.onnx")) + [MODELS / "tf_lenet.pb"]:
        entry = {"path": str(path)}
        inputs = MODELS / f"{path.stem}.inputs.npz"
        if inputs.exists():
            entry["inputs"] = str(inputs)
        if path.stem == "custom_op":
            entry["flags"] = {"op_plugin": str(PLUGIN)}
        entries.append(entry)
    return entries


def write_sweep(folder: pathlib.Path, doc: dict, name: str = "sweep.yaml") -> pathlib.Path:
    path = folder / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def om_sweep(*argv: str):
    """(exit code, stdout, stderr) of `om-sweep ARGV` run in-process (OM_SWEEP_DEBUG=1: print a crash)."""
    res = CliRunner().invoke(main, [str(a) for a in argv])
    if os.environ.get("OM_SWEEP_DEBUG") and res.exc_info and not isinstance(res.exception, SystemExit):
        traceback.print_exception(*res.exc_info)
    return res.exit_code, res.stdout, res.stderr


def table(out_dir: pathlib.Path, drop_wall_clock: bool = True) -> list[dict]:
    rows, _ = read_results(out_dir / "results.parquet")
    if drop_wall_clock:
        rows = [{k: v for k, v in r.items() if k not in WALL_CLOCK_FIELDS} for r in rows]
    return rows
