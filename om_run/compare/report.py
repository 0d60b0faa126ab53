"""The comparison's outputs: result_<timestamp>.csv with the accuracy analyzer's columns (msit reads and writes
them; `DataType` twice, NPU side then ground truth) plus Status / FrameworkOpType / Detail / Locate, a summary
JSON, and the terminal table."""
from __future__ import annotations

import csv
import io

from .match import STATUSES, Row
from .metrics import NAMES, fmt

HEADER = ["Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "TensorIndex", "Shape",
          "OverFlow", "CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError",
          "RelativeEuclideanDistance", "KullbackLeiblerDivergence", "StandardDeviation", "MeanAbsoluteError",
          "RootMeanSquareError", "MaxRelativeError", "MeanRelativeError", "CompareFailReason", "Status",
          "FrameworkOpType", "Detail", "Locate"]


def _om_op(row: Row):
    return row.holder.op if row.holder is not None else row.fused_into


def _tensor_index(row: Row) -> str:
    h = row.holder
    if h is None:
        return "NaN"
    return h.label or f"{h.op.name}:output:{h.out_index}"


def csv_bytes(rows: list[Row]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(HEADER)
    for k, r in enumerate(rows):
        op = _om_op(r)
        m = r.metrics
        metric_cols = m.row() if m is not None else ["NaN"] * len(NAMES)
        # the analyzer's column order: cosine, max abs, accumulated rel, rel euclidean, KL, std, MAE, RMSE, ...
        cols = metric_cols[:5] + [m.std_column if m is not None else "NaN"] + metric_cols[5:]
        w.writerow([k, op.op_type if op else "NaN", op.name if op else "NaN", r.om_dtype or "NaN", "NaN",
                    r.node.name, r.golden_dtype, _tensor_index(r), "[" + ",".join(map(str, r.golden_shape)) + "]",
                    ("YES" if m.nonfinite else "NO") if m is not None else "NaN", *cols,
                    r.detail if not r.matched else "", r.status, r.node.op_type,
                    r.detail if r.matched else "", r.locate])
    return buf.getvalue().encode()


def counts(rows: list[Row]) -> dict[str, int]:
    c = {s: 0 for s in STATUSES}
    for r in rows:
        c[r.status] += 1
    return c


def summary(rows: list[Row], engine: str, model: str, golden_path: str, threshold: float) -> dict:
    c = counts(rows)
    matched = c["ok"] + c["divergent"] + c["first_divergent"]
    first = next((r for r in rows if r.status == "first_divergent"), None)
    doc = {"om_model": model, "golden_model": golden_path, "golden_engine": engine, "cosine_threshold": threshold,
           "tensors": len(rows), "counts": c, "matched": matched,
           "matched_ratio": round(matched / len(rows), 6) if rows else 0.0,
           "min_cosine": min((r.metrics.cosine for r in rows if r.metrics is not None
                              and r.metrics.cosine == r.metrics.cosine), default=None)}
    if first is not None:
        op = _om_op(first)
        doc["first_divergent"] = {"node": first.node.name, "op_type": first.node.op_type, "tensor": first.tensor,
                                  "om_op": op.name if op else None, "om_op_type": op.op_type if op else None,
                                  "metrics": first.metrics.as_dict() if first.metrics else None,
                                  "nonfinite": bool(first.metrics and first.metrics.nonfinite),
                                  "locate": first.locate}
    return doc


def table(rows: list[Row], limit: int) -> list[str]:
    """The divergent tensors, then the lowest cosines, up to `limit` rows in topological order."""
    index = {id(r): k for k, r in enumerate(rows)}
    bad = [r for r in rows if r.status in ("first_divergent", "divergent")][:limit]
    rest = sorted((r for r in rows if r.status == "ok"), key=lambda r: r.metrics.cosine)[:max(0, limit - len(bad))]
    chosen = sorted(bad + rest, key=lambda r: index[id(r)])
    if not chosen:
        return []
    head = ["Index", "GroundTruth", "Type", "NPUDump", "Cosine", "MaxAbsErr", "RelEuclid", "Status"]
    body = []
    for r in chosen:
        op = _om_op(r)
        m = r.metrics
        body.append([str(index[id(r)]), _short(r.node.name), r.node.op_type, _short(op.name if op else "-"),
                     fmt(m.cosine), fmt(m.max_abs), fmt(m.rel_euclidean), r.status])
    widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [line(head)] + [line(b) for b in body]


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else "..." + name[-(width - 3):]
