"""Own error or inherited (msit compare's --locat question): the first divergent op is rerun with the
framework's values of its inputs. If its output then matches, the difference came in with its inputs (small
upstream errors this op amplifies); if it still differs, the op itself computes differently (an fp16 overflow,
a kernel's precision).

An input takes the framework tensor its producer's output holds. Where that holds none (a helper the compiler
added, a precision mode's Cast, a removed view), the framework tensor that is the same quantity: of the same size
and kind — an integer input only a tensor of its integer type (an int8 matmul's zero-point-centred int32 operand
is not the framework's uint8 one), a float input any float tensor (an fp16 build's too) — the nearest by cosine,
then by the largest element difference (a one-element scale has cosine 1 with every scale of its sign)."""
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
    held = held_tensors(matcher)
    sources = kernels.input_sources(h.op.name)
    for k, a in ins.items():
        if k in weights:
            continue
        t = held.get(sources[k]) if k < len(sources) else None
        if t is not None and golden.tensors[t].size == a.size:     # its producer's own framework tensor
            ins[k] = om_layout(golden.tensors[t], a.shape).astype(a.dtype)
            replaced.append(t)
            continue
        best = framework_value(a, candidates, golden)
        if best is not None:
            ins[k] = best[1].astype(a.dtype)
            replaced.append(best[0])
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


def held_tensors(matcher: Matcher) -> dict[tuple[str, int], str]:
    """(.om op, output) -> the first framework tensor (in the framework's order) that output holds."""
    held: dict[tuple[str, int], str] = {}
    for n in matcher.golden.nodes:
        for t in n.outputs:
            h = matcher.holders.get(t) if t else None
            if h is not None and h.stage < 0 and h.out_index >= 0:
                held.setdefault((h.op.name, h.out_index), t)
    return held


def same_kind(golden: np.ndarray, mine: np.ndarray) -> bool:
    """The framework tensor can hold the value of the .om input: both float, or one integer (bool) type."""
    if mine.dtype.kind == "f":
        return golden.dtype.kind == "f"
    return mine.dtype.kind in "biu" and golden.dtype == mine.dtype


def framework_value(mine: np.ndarray, candidates: list[str], golden: Golden) -> tuple[str, np.ndarray] | None:
    """(name, value in the input's layout) of the candidate that is this .om input's quantity, or None."""
    best, best_key = None, None
    for t in candidates:
        g = golden.tensors[t]
        if g.size != mine.size or not same_kind(g, mine):
            continue
        g = om_layout(g, mine.shape)
        m = compare(mine, g)
        key = (m.cosine if m.cosine == m.cosine else -2.0, -m.max_abs if m.max_abs == m.max_abs else -np.inf)
        if best_key is None or key > best_key:
            best, best_key = (t, g), key
    return best


def _rerun(h, kernels, ins: dict) -> np.ndarray:
    if h.stage >= 0 and h.value is not None:
        return np.asarray(h.value(ins))
    return np.asarray(kernels.run(h.op.name, ins)[h.out_index])
