"""Sets the profile's calibrated parameters from the anchors that name them (anchors.py: `calibrates`): each is
the value at which the simulated figure equals the published one, found by bisection (the figure is monotonic
in it), clipped to what physics allows (a share of a peak is at most 1; fp32_cube_rate at most
roofline.FP32_CUBE_PEAK_SHARE). The result is a --sim-config JSON (calibration.json); the profile's defaults
must equal it (tests/om_run/sim/test_fidelity.py)."""
from __future__ import annotations

import json
import pathlib
from dataclasses import replace

from om_run.sim.profile import RuntimeProfile
from om_run.sim.roofline import FP32_CUBE_PEAK_SHARE

from .anchors import ANCHORS

CALIBRATION = pathlib.Path(__file__).resolve().parent / "calibration.json"
LIMITS = {"cube_efficiency": (0.3, 1.0), "fp32_cube_rate": (0.05, FP32_CUBE_PEAK_SHARE)}
DIGITS = 4


def fit(anchor, prof: RuntimeProfile) -> float:
    """The parameter value at which the anchor's prediction meets its published figure (within the limits)."""
    name = anchor.calibrates
    lo, hi = LIMITS[name]
    at = lambda v: anchor.predict(replace(prof, **{name: v}))   # noqa: E731  (higher value, faster)
    if at(hi) <= anchor.published:
        return hi
    if at(lo) >= anchor.published:
        return lo
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if at(mid) < anchor.published else (lo, mid)
    return round((lo + hi) / 2, DIGITS)


def calibrate(prof: RuntimeProfile | None = None) -> dict:
    """Fit every calibrated parameter in anchor order (each fit sees the ones before it)."""
    prof = prof or RuntimeProfile()
    values = {}
    for anchor in ANCHORS:
        if anchor.calibrates:
            values[anchor.calibrates] = fit(anchor, prof)
            prof = replace(prof, **{anchor.calibrates: values[anchor.calibrates]})
    return values


def write(values: dict, path: pathlib.Path = CALIBRATION) -> None:
    path.write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")


def load(path: pathlib.Path = CALIBRATION) -> dict:
    return json.loads(path.read_text())
