"""Compiles every real-model fixture with atc-py, runs it in om-run and compares with the framework's outputs;
`python -m tools.real_models.report` prints the table of docs/real-models.md (needs only atc-py's own dependencies).
tests/test_real_models.py asserts the same numbers against the tolerances below."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "data" / "real_models"
FP32_TOL = 1e-3            # max |got - ref| / max |ref| of an fp32 (must_keep_origin_dtype) build
FP16_FACTOR = 4.0          # an fp16 build may cost this many times what fp16 storage alone costs ...
FP16_FLOOR = 2.0 ** -11    # ... measured as at least fp16's own rounding unit (half an ulp at 1.0)
PRECISIONS = {"fp32": "must_keep_origin_dtype", "fp16": "force_fp16"}


def manifest() -> dict:
    return json.loads((FIXTURES / "manifest.json").read_text())


def rel_err(got, ref) -> float:
    ref = np.asarray(ref, np.float64)
    return float(np.abs(np.asarray(got, np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))


def load(name: str, entry: dict):
    """(inputs, the framework's outputs, the fp16-rounded emulation's outputs)."""
    z = np.load(FIXTURES / f"{name}.npz")
    n_in, n_out = len(entry["inputs"]), len(entry["outputs"])
    return ([z[f"in_{k}"] for k in range(n_in)], [z[f"out_{k}"] for k in range(n_out)],
            [z[f"emu16_{k}"] for k in range(n_out)])


def options(entry: dict, inputs, precision: str) -> dict:
    """The ATC options a user would give: the inputs' shapes (the exports keep batch/sequence symbolic)."""
    opts = {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": PRECISIONS[precision],
            "input_shape": ";".join(f"{n}:{','.join(map(str, x.shape))}" for n, x in zip(entry["inputs"], inputs))}
    if entry["framework"] == "tf":
        opts["ge.frameworkType"] = "3"
    return opts


def fp16_tolerance(emu16, ref) -> float:
    return FP16_FACTOR * max(FP16_FLOOR, max(rel_err(e, r) for e, r in zip(emu16, ref)))


def compile_and_run(name: str, entry: dict, precision: str):
    """(outputs, the simulation's stats, the build result)."""
    import atc_py
    from runner.loader import load_model
    from runner.sim.host import Simulation
    inputs, _, _ = load(name, entry)
    result = atc_py.build(str(FIXTURES / entry["file"]), options(entry, inputs, precision))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"{name}.om"
        path.write_bytes(result.om)
        outs, stats = Simulation(load_model(str(path))).run(inputs)
    return outs, stats, result


def main() -> None:
    from atc_py.errors import AtcError
    print("| fixture | source | exporter | compiles | max error fp32 | max error fp16 (tolerance) |")
    print("|---|---|---|---|---|---|")
    for name, entry in manifest().items():
        _, ref, emu = load(name, entry)
        cells = []
        try:
            for precision in PRECISIONS:
                outs, _, _ = compile_and_run(name, entry, precision)
                err = max(rel_err(g, r) for g, r in zip(outs, ref))
                cells.append(f"{err:.1e}" if precision == "fp32" else f"{err:.1e} ({fp16_tolerance(emu, ref):.1e})")
            ok = "yes"
        except AtcError as e:
            ok, cells = f"no: {e.code} ({str(e).split(':', 2)[-1].strip()[:60]}...)", ["-", "-"]
        print(f"| `{name}` | {entry['source'].split(' (')[0]} | {entry['exporter']} | {ok} | {' | '.join(cells)} |",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
