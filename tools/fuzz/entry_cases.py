"""Modules planted in the working folder for the `python -m` entries: numpy.py, click.py, yaml.py, onnx.py and a
google/ package that each leave a marker and exit. `python -m atc_py` (om_run, om_run.ais_bench, om_run.msame,
om_sweep, and the job processes of an om-sweep run) run from that folder must import none of them."""
from __future__ import annotations

import pathlib

PLANTED = ("numpy", "click", "yaml", "onnx")
PLANT = ("import pathlib\n"
         "pathlib.Path(__file__).resolve().parent.joinpath('PLANTED_' + __name__.split('.')[0]).write_text('ran')\n"
         "raise SystemExit('a module planted in the working folder was imported')\n")
ENTRIES = [
    ["atc_py", "--mode=6", "--om=m.om"],
    ["atc_py", "--model=m.onnx", "--framework=5", "--output=out/m", "--soc_version=Ascend910B1"],
    ["om_run", "--model", "m.om", "--output", "out"],
    ["om_run.ais_bench", "--model", "m.om", "--output", "out"],
    ["om_run.msame", "--model", "m.om", "--output", "out"],
    ["om_sweep", "socs"],
    ["om_sweep", "run", "s.yaml", "-o", "out/r", "--workers", "1", "--no-report"],   # and its job processes
]


def prepare(d: pathlib.Path) -> None:
    (d / "s.yaml").write_text("models: [m.onnx]\ngrid: {soc_version: [Ascend910B1]}\nrun: {compute: false}\n")
    for name in PLANTED:
        (d / f"{name}.py").write_text(PLANT)
    (d / "google").mkdir()
    (d / "google" / "__init__.py").write_text(PLANT)


def check(case, d: pathlib.Path) -> list[str]:
    ran = sorted(p.name for p in d.glob("PLANTED_*"))
    problems = [f"imported modules planted in the working folder: {ran}"] if ran else []
    if case.kind != "ok":
        problems.append("the entry failed beside the planted modules")
    return problems
