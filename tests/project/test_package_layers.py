"""The packages of atc_py and om_run in layers: a package imports only from the layers below its own (function-local
imports count). The layers are the architecture a newcomer reads in docs/layout.md; a new package takes a layer
here, and an import that climbs a layer fails with the edge that does it."""
from __future__ import annotations

import pytest

from tools.import_graph import build

# lowest first; packages in one layer do not import each other
LAYERS = {
    "atc_py": [
        {"common", "proto", "version"},
        {"ir", "platform"},
        {"om", "options"},       # the .om container; every build option parsed into typed values
        {"ops"},                 # the operator library
        {"autofuse"},
        {"passes"},
        {"engines"},             # tiling, tasks, the ModelDef
        {"frontend"},            # ONNX and TensorFlow into the IR
        {"plugins"},             # custom operator packages (ops + ONNX adapters)
        {"pipeline"},            # the build
        {"cli"},                 # the command line
        {"__main__"},            # python -m atc_py
    ],
    "om_run": [
        {"errors"},
        {"hccl"},                # HCCL: rank tables, collective costs over a topology's links, hccl-test, calibration
        {"tasks"},               # one handler per task type: its checks, decoding and execution, handed their context
        {"load"},                # decode and check an .om
        {"sim"},                 # the simulated machine
        {"run"},                 # flags, inputs, outputs, gears, the executions
        {"generate", "compare"},
        {"serve"},               # om-run serve: LLM requests scheduled as vllm-ascend / MindIE do, steps priced by the sim
        {"cli"},
        {"__main__", "ais_bench", "msame"},   # python -m om_run, python -m om_run.ais_bench, python -m om_run.msame
    ],
}


def _child(module: str, package: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == package and len(parts) > 1 else None


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_packages_import_only_from_lower_layers(package):
    layer_of = {name: k for k, names in enumerate(LAYERS[package]) for name in names}
    modules, edges = build()
    children = {c for m in modules if (c := _child(m, package))}
    assert children <= set(layer_of), f"{package} has children without a layer: {sorted(children - set(layer_of))}"
    climbing = sorted((e.source, e.target) for e in edges
                      if (a := _child(e.source, package)) and (b := _child(e.target, package)) and a != b
                      and layer_of[b] >= layer_of[a])
    assert not climbing, f"imports that climb a layer (or cross one): {climbing[:10]}"


def test_a_climbing_import_is_found(tmp_path):
    """The check itself: a module of a lower layer importing a higher one is an edge the scan reports."""
    pkg = tmp_path / "atc_py"
    for name, text in {"__init__.py": "", "common/__init__.py": "", "common/x.py": "from ..cli import y\n",
                       "cli/__init__.py": "", "cli/y.py": ""}.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    _, edges = build(tmp_path, ("atc_py",))
    assert ("atc_py.common.x", "atc_py.cli.y") in {(e.source, e.target) for e in edges}
