"""Planned feature map over its live-bytes lower bound, per model and precision.

`measure()` returns one row per (model, precision): the onnx `light` models (random-weight copies, as the
speed table uses) and every real-model fixture (tests/data/real_models). `python -m bench.memory_bound`
prints them; the target is planned / bound <= 1.05 on every one. Printed, never asserted here (the tests
assert the bound on the graphs that were above it).
"""
from __future__ import annotations

import pathlib
import sys
import tempfile
import warnings

TARGET = 1.05
PRECISIONS = ("fp32", "fp16")


def _light(d: pathlib.Path) -> dict[str, pathlib.Path]:
    from bench.compile_vs_ort import light_model_files
    return light_model_files(d)


def _row(model: str, precision: str, summary: dict) -> dict:
    planned, bound = summary["memory_size"], summary["memory_lower_bound"]
    return {"model": model, "precision": precision, "planned": planned, "bound": bound,
            "ratio": planned / bound if bound else 1.0}


def measure(light: bool = True, fixtures: bool = True, names: tuple[str, ...] = ()) -> list[dict]:
    """Rows {model, precision, planned, bound, ratio}; `names` keeps only those models (empty: all)."""
    with warnings.catch_warnings():   # random weights overflow in some folded casts: not what is measured
        warnings.simplefilter("ignore", RuntimeWarning)
        return _measure(light, fixtures, names)


def _measure(light: bool, fixtures: bool, names: tuple[str, ...]) -> list[dict]:
    import atc_py
    from tools.real_models.report import FIXTURES, load, manifest, options
    from tools.real_models.report import PRECISIONS as OPTS
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if light:
            for name, path in _light(pathlib.Path(tmp)).items():
                if names and name not in names:
                    continue
                for p in PRECISIONS:
                    r = atc_py.build(str(path), {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": OPTS[p]})
                    rows.append(_row(f"light {name}", p, r.summary))
    if fixtures:
        for name, entry in manifest().items():
            if names and name not in names:
                continue
            inputs, _, _ = load(name, entry)
            for p in PRECISIONS:
                r = atc_py.build(str(FIXTURES / entry["file"]), options(entry, inputs, p))
                rows.append(_row(name, p, r.summary))
    return rows


def main(argv: list[str]) -> None:
    rows = measure(names=tuple(argv))
    print(f"{'model':<34} {'prec':<5} {'planned B':>11} {'bound B':>11} {'ratio':>6}")
    for r in rows:
        flag = "" if r["ratio"] <= TARGET else "  > target"
        print(f"{r['model']:<34} {r['precision']:<5} {r['planned']:>11} {r['bound']:>11} {r['ratio']:>6.3f}{flag}")
    print(f"target: planned / bound <= {TARGET} on every model; worst {max(r['ratio'] for r in rows):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
