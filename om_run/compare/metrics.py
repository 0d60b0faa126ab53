"""The accuracy analyzer's metrics between a tensor of the .om (`my`) and the framework's (`golden`), in float64.

Definitions as CANN's accuracy comparison documents them: CosineSimilarity, MaxAbsoluteError,
AccumulatedRelativeError (sum |my - gt| / sum |gt|), RelativeEuclideanDistance (||my - gt|| / ||gt||),
KullbackLeiblerDivergence (of the two tensors as distributions: defined for non-negative data only), the
StandardDeviation pair ("mean;std" of each side), MeanAbsoluteError, RootMeanSquareError, MaxRelativeError and
MeanRelativeError (|my - gt| / |gt|, over the elements whose golden value is not 0)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

NAMES = ("CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError", "RelativeEuclideanDistance",
         "KullbackLeiblerDivergence", "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError",
         "MeanRelativeError")
KL_EPS = 1e-12


@dataclass(frozen=True)
class Metrics:
    cosine: float
    max_abs: float
    accumulated_rel: float
    rel_euclidean: float
    kl: float             # NaN when a side holds negative values (not a distribution)
    mean_abs: float
    rmse: float
    max_rel: float
    mean_rel: float
    my_mean_std: tuple[float, float]
    golden_mean_std: tuple[float, float]
    nonfinite: bool       # my holds inf/NaN where golden is finite

    def row(self) -> list[str]:
        vals = (self.cosine, self.max_abs, self.accumulated_rel, self.rel_euclidean, self.kl, self.mean_abs,
                self.rmse, self.max_rel, self.mean_rel)
        return [fmt(v) for v in vals]

    @property
    def std_column(self) -> str:
        (a, b), (c, d) = self.my_mean_std, self.golden_mean_std
        return f"{fmt(a)};{fmt(b)}|{fmt(c)};{fmt(d)}"

    def as_dict(self) -> dict:
        return {k: _json(v) for k, v in zip(NAMES, (self.cosine, self.max_abs, self.accumulated_rel,
                                                     self.rel_euclidean, self.kl, self.mean_abs, self.rmse,
                                                     self.max_rel, self.mean_rel))}


def fmt(v: float) -> str:
    return "NaN" if math.isnan(v) else ("inf" if math.isinf(v) else f"{v:.6f}" if abs(v) >= 1e-4 or v == 0
                                        else f"{v:.6e}")


def _json(v: float):
    return None if not math.isfinite(v) else v


def _ratio(num: float, den: float) -> float:
    if den == 0:
        return 0.0 if num == 0 else math.inf
    return num / den


def compare(my: np.ndarray, golden: np.ndarray) -> Metrics:
    """Both flattened, same element count (the caller checks)."""
    m = np.asarray(my, dtype=np.float64).reshape(-1)
    g = np.asarray(golden, dtype=np.float64).reshape(-1)
    same = ~np.isfinite(g) & ((m == g) | (np.isnan(m) & np.isnan(g)))   # the same inf/NaN on both sides
    if same.any():
        m, g = np.where(same, 0.0, m), np.where(same, 0.0, g)
    nonfinite = bool((~np.isfinite(m) & np.isfinite(g)).any())
    with np.errstate(all="ignore"):
        diff = np.abs(m - g)
        nm, ng = float(np.linalg.norm(m)), float(np.linalg.norm(g))
        if nm == 0 and ng == 0:
            cosine = 1.0
        elif nm == 0 or ng == 0 or not (math.isfinite(nm) and math.isfinite(ng)):
            cosine = math.nan if not (math.isfinite(nm) and math.isfinite(ng)) else 0.0
        else:
            cosine = float(np.dot(m / nm, g / ng))
        size = max(m.size, 1)
        nz = g != 0
        rel = diff[nz] / np.abs(g[nz])
        return Metrics(
            cosine=cosine,
            max_abs=float(diff.max(initial=0.0)),
            accumulated_rel=_ratio(float(diff.sum()), float(np.abs(g).sum())),
            rel_euclidean=_ratio(float(np.linalg.norm(m - g)), ng),
            kl=_kl(m, g),
            mean_abs=float(diff.sum() / size),
            rmse=float(math.sqrt(float((diff * diff).sum()) / size)),
            max_rel=float(rel.max(initial=0.0)),
            mean_rel=float(rel.mean()) if rel.size else 0.0,
            my_mean_std=(float(m.mean()) if m.size else 0.0, float(m.std()) if m.size else 0.0),
            golden_mean_std=(float(g.mean()) if g.size else 0.0, float(g.std()) if g.size else 0.0),
            nonfinite=nonfinite)


def _kl(m: np.ndarray, g: np.ndarray) -> float:
    """KL(golden || my) of the tensors normalised to sum 1; NaN unless both are non-negative with a positive sum."""
    if not m.size or (m < 0).any() or (g < 0).any() or not (np.isfinite(m).all() and np.isfinite(g).all()):
        return math.nan
    sm, sg = float(m.sum()), float(g.sum())
    if sm <= 0 or sg <= 0:
        return math.nan
    p, q = g / sg, m / sm
    return float(np.sum(p * np.log((p + KL_EPS) / (q + KL_EPS))))
