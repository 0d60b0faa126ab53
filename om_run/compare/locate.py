"""Own error or inherited (msit compare's --locat question): the first divergent op is rerun with the
framework's values of its inputs. If its output then matches, the difference came in with its inputs (small
upstream errors this op amplifies); if it still differs, the op itself computes differently (an fp16 overflow,
a kernel's precision)."""
from __future__ import annotations

import numpy as np

from .golden import Golden
from .match import Matcher, Row, framework_layout, om_layout
from .metrics import compare


def framework_inputs(matcher: Matcher, row: Row) -> list[str]:
    """The non-constant tensors the op's group of framework nodes reads from outside the group."""
    group = matcher.group(row.holder.op)
    inside = {t for n in group for t in n.outputs}
    seen: list[str] = []
    for n in group:
        for t in n.inputs:
            if t and t not in inside and t not in matcher.golden.constants and t in matcher.golden.tensors \
                    and t not in seen:
                seen.append(t)
    return seen


def locate(matcher: Matcher, row: Row, kernels) -> tuple[str, float | None]:
    """(verdict text, the cosine of the rerun) for a matched divergent row."""
    h = row.holder
    golden: Golden = matcher.golden
    if h is None or h.op.name not in kernels.ops or not h.op.inputs:
        return "not located: the op's inputs were not dumped", None
    candidates = framework_inputs(matcher, row)
    ins = {k: matcher.load(e) for k, e in h.op.inputs.items()}
    replaced = []
    weights = kernels.constant_inputs(h.op.name)
    for k, a in ins.items():
        if k in weights:
            continue
        best = None
        for t in candidates:
            g = golden.tensors[t]
            if g.size != a.size or g.dtype.kind not in "biuf" or a.dtype.kind not in "biuf":
                continue
            g = om_layout(g, a.shape)
            c = compare(a, g).cosine
            if best is None or (c == c and c > best[0]):
                best = (c, t, g)
        if best is not None:
            ins[k] = best[2].astype(a.dtype)
            replaced.append(best[1])
    if not replaced:
        return "not located: no framework tensor matches the op's inputs", None
    g = golden.tensors[row.tensor]
    out = framework_layout(_rerun(h, kernels, ins), h, tuple(g.shape), golden.layout)
    got = compare(out, g)
    named = ", ".join(replaced[:4]) + (" ..." if len(replaced) > 4 else "")
    if matcher.divergent(got):
        return (f"own error: rerun with the framework's inputs ({named}), {h.op.name} still differs "
                f"(cosine {got.cosine:.6f})"), got.cosine
    return (f"inherited: rerun with the framework's inputs ({named}), {h.op.name} matches (cosine "
            f"{got.cosine:.6f}): the difference comes from its inputs"), got.cosine


def _rerun(h, kernels, ins: dict) -> np.ndarray:
    if h.stage >= 0 and h.value is not None:
        return np.asarray(h.value(ins))
    return np.asarray(kernels.run(h.op.name, ins)[h.out_index])
