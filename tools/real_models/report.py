"""Compiles every model fixture of tests/data with atc-py, runs it in om-run and compares with the framework's
outputs, a table per fixture directory (tools/real_models/sections.py); `python -m tools.real_models.report
[--docs]` prints the tables of docs/real-models.md (or rewrites them there). Needs only atc-py's own dependencies.
The tests assert the same measures: tests/models/test_real_models.py these tolerances, the other directories' tests
theirs."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from .checks import rel_err  # noqa: F401  (tests/models/test_real_models.py imports it from here)

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "data" / "real_models"
FP32_TOL = 1e-3            # max |got - ref| / max |ref| of an fp32 (must_keep_origin_dtype) build
FP16_FACTOR = 4.0          # an fp16 build may cost this many times what fp16 storage alone costs ...
FP16_FLOOR = 2.0 ** -11    # ... measured as at least fp16's own rounding unit (half an ulp at 1.0)
PRECISIONS = {"fp32": "must_keep_origin_dtype", "fp16": "force_fp16"}


def manifest() -> dict:
    return json.loads((FIXTURES / "manifest.json").read_text())


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
    from om_run.load.loader import load_model
    from om_run.sim.host import Simulation
    inputs, _, _ = load(name, entry)
    result = atc_py.build(str(FIXTURES / entry["file"]), options(entry, inputs, precision))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"{name}.om"
        path.write_bytes(result.om)
        outs, stats = Simulation(load_model(str(path))).run(inputs)
    return outs, stats, result


BEGIN = "<!-- BEGIN fixture tables: python -m tools.real_models.report --docs -->"
END = "<!-- END fixture tables -->"
DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "real-models.md"


def section_table(section) -> list[str]:
    """A section's markdown: a heading, then a row per fixture (compile failures reported in the row)."""
    from atc_py.common.errors import AtcError
    lines = [f"### `tests/data/{section.directory}`: {section.title}", "",
             "| fixture | compiles | " + " | ".join(section.columns) + " |",
             "|---|---|" + "---|" * len(section.columns)]
    for name in section.fixtures():
        try:
            cells, ok = section.row(name), "yes"
        except AtcError as e:
            cells, ok = ["-"] * len(section.columns), f"no: {e.code} ({str(e).split(':', 2)[-1].strip()[:60]}...)"
        lines.append(f"| `{name}` | {ok} | " + " | ".join(cells) + " |")
        print(lines[-1], file=sys.stderr, flush=True)
    return lines + [""]


def rewrite_docs(text: str) -> bool:
    """Replace the marked tables of docs/real-models.md; False when its markers are missing."""
    page = DOCS_PAGE.read_text(encoding="utf-8")
    if BEGIN not in page or END not in page.split(BEGIN, 1)[1]:
        return False
    head, rest = page.split(BEGIN, 1)
    DOCS_PAGE.write_text(head + BEGIN + "\n" + text + END + rest.split(END, 1)[1], encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    import argparse

    from .sections import SECTIONS, uncovered
    ap = argparse.ArgumentParser(prog="python -m tools.real_models.report")
    ap.add_argument("--docs", action="store_true", help=f"rewrite the tables of {DOCS_PAGE.name}")
    ap.add_argument("--only", nargs="*", help="these fixture directories only (with --docs: not allowed)")
    args = ap.parse_args(argv)
    if uncovered():
        print(f"fixture directories without a table: {', '.join(uncovered())} (tools/real_models/sections.py)")
        return 1
    if args.docs and args.only:
        ap.error("--docs rewrites every table: give no --only")
    lines = []
    for directory, section in SECTIONS.items():
        if not args.only or directory in args.only:
            lines += section_table(section)
    text = "\n".join(lines)
    print(text)
    if args.docs and not rewrite_docs(text):
        print(f"{DOCS_PAGE} has no {BEGIN} ... {END} section", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
