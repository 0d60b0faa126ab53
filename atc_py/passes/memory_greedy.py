"""Greedy-by-size re-plan of the feature map and the concurrency-aware lower bound.

Both need "may these two buffers be live together?" for every pair. That is computed once as an n x n
boolean matrix with numpy (conflict_matrix) instead of pair by pair in Python: with several streams a pair
test walks the users' vector clocks, and the planner asks it O(n^2) times, which dominated compile time
on real models (light ResNet-50: 0.65 s of 1.1 s).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.graph import Graph
from .memory_buffers import OUTPUT_MARK, align, collect_buffers
from .streams import StreamPlan

# the matrix is n^2 bytes (144 MB at the limit, planned in ~2 s); bigger graphs keep the free-list plan
GREEDY_MAX_BUFFERS = 12000
CLIQUE_SEEDS = 16
EXTRA_ORDERS_MAX_BUFFERS = 4000   # the crowd-ordered placements (each O(n^2)) only below this many buffers
_NEVER = np.iinfo(np.int64).max


def conflict_matrix(items, streams: StreamPlan | None) -> np.ndarray:
    """C[i, j]: buffers i and j may be live together. One stream: their topological intervals overlap.
    Several streams: also unless every user of one happens strictly before every user of the other.

    With vector clocks (count of tasks seen per stream), user a on stream s happens strictly before user b
    iff a != b and clock[a][s] <= clock[b][s]; on one stream counts are unique, so for b on a's stream that
    is clock[a][s] < clock[b][s]. Per buffer keep last[s] = max clock[a][s] over its users a on stream s,
    and first[s] = min over its users b of clock[b][s] (minus 1 if b is on s): i is apart before j iff
    last_i <= first_j on every stream. A graph output (OUTPUT_MARK) is read by the host after the model,
    so no buffer is apart after it."""
    f = np.fromiter((it[1] for it in items), np.int64, len(items))
    last_use = np.fromiter((it[2] for it in items), np.int64, len(items))
    conflict = (f[:, None] <= last_use[None, :]) & (last_use[:, None] >= f[None, :])
    if streams is None or streams.num_streams <= 1:
        return conflict
    width = max(len(c) for c in streams.clock.values())   # clocks may carry trailing zero entries
    last = np.zeros((len(items), width), np.int64)
    first = np.full((len(items), width), _NEVER, np.int64)
    read_after = np.zeros(len(items), bool)
    for i, it in enumerate(items):
        for u in it[4]:
            clock = streams.clock.get(u)
            if u == OUTPUT_MARK:        # read after the model: nothing is apart after it
                read_after[i] = True
                continue
            if clock is None:           # not a task of the stream plan: never apart either way
                read_after[i] = True
                first[i] = -1
                continue
            s = streams.stream_of[u]
            adjusted = np.zeros(width, np.int64)
            adjusted[:len(clock)] = clock
            adjusted[s] -= 1
            np.minimum(first[i], adjusted, out=first[i])
            last[i, s] = max(last[i, s], clock[s])
    apart = ~read_after[:, None] & np.ones((1, len(items)), bool)
    for s in range(width):
        apart &= last[:, s][:, None] <= first[:, s][None, :]
    return conflict | ~(apart | apart.T)


def _place(order: np.ndarray, sizes: np.ndarray, conflict: np.ndarray, base: int) -> tuple[int, np.ndarray]:
    """Each buffer in `order` at the lowest offset >= base clear of the placed buffers it conflicts with."""
    c = conflict[np.ix_(order, order)]
    sz = sizes[order]
    offs = np.zeros(len(order), np.int64)
    for k in range(len(order)):
        m = c[k, :k]
        lo = offs[:k][m]
        if len(lo) == 0:
            offs[k] = base
            continue
        hi = lo + sz[:k][m]
        by_lo = np.argsort(lo, kind="stable")
        lo, hi = lo[by_lo], hi[by_lo]
        reach = np.maximum.accumulate(np.concatenate(([base], hi)))   # end of the busy bytes before each
        gap = np.flatnonzero(lo - reach[:-1] >= sz[k])
        offs[k] = reach[gap[0]] if len(gap) else reach[-1]
    where = np.empty(len(order), np.int64)
    where[order] = offs
    return int(max(base, (offs + sz).max(initial=base))), where


@dataclass
class Buffers:
    """The reusable buffers once for both users below (the free-list plan's in-place choices fix them):
    collect_buffers' items, sizes and topological first/last use as arrays, and the conflict matrix."""
    items: list
    bufs: dict
    order: dict
    sizes: np.ndarray
    first: np.ndarray
    last: np.ndarray
    conflict: np.ndarray
    inputs_bytes: int      # the dedicated graph-input ranges at the bottom of the feature map


def reusable_buffers(graph: Graph, plan, workspaces: dict[str, list[int]],
                     streams: StreamPlan | None) -> Buffers | None:
    """None when there is nothing to re-plan or too much for an n x n matrix (GREEDY_MAX_BUFFERS)."""
    items, bufs, order = collect_buffers(graph, plan, workspaces)
    if not items or len(items) > GREEDY_MAX_BUFFERS:
        return None
    column = lambda k: np.fromiter((it[k] for it in items), np.int64, len(items))   # noqa: E731
    return Buffers(items, bufs, order, column(0), column(1), column(2), conflict_matrix(items, streams),
                   sum(align(max(n.outputs[0].desc.nbytes, 1)) for n in graph.data_nodes))


def _orders(b: Buffers):
    """Orders to place the buffers in, tried one after the other (lexsort keys, last key first). Biggest
    first in each; ties by first use, by the longest lifetime, by the latest last use, then by the bytes of
    the buffers each may be live together with (the most constrained first: the order that closes the gap
    on attention graphs, where many equal-sized score/probability buffers overlap in chains)."""
    yield (b.first, -b.sizes)
    yield (b.first, b.first - b.last, -b.sizes)
    yield (-b.last, -b.sizes)
    if len(b.sizes) > EXTRA_ORDERS_MAX_BUFFERS:
        return
    crowd = np.concatenate([b.conflict[i:i + 512].astype(np.int64) @ b.sizes    # rows in blocks: no n^2 int64
                            for i in range(0, len(b.sizes), 512)])
    yield (-crowd, -b.sizes)
    yield (-crowd,)


def greedy_by_size(plan, workspaces: dict[str, list[int]], b: Buffers, floor: int = 0) -> bool:
    """Re-plan of the reusable buffers (TFLite's greedy-by-size): biggest first, each at the lowest offset
    not used by a buffer it may be live together with. Keeps the free-list plan's in-place choices and the
    dedicated input ranges. Several orders are tried (_orders) and the smallest layout kept, stopping at the
    first that reaches `floor` (the lower bound: nothing is smaller). Returns False (and changes nothing) if
    it would not be smaller than the free-list plan."""
    top, where = None, None
    for keys in _orders(b):
        t, w = _place(np.lexsort(keys), b.sizes, b.conflict, b.inputs_bytes)
        if top is None or t < top:
            top, where = t, w
        if top <= floor:
            break
    if top >= plan.memory_size:
        return False
    index = {it[3]: k for k, it in enumerate(b.items)}
    for k, buf in b.bufs.items():
        for v in buf[3]:
            plan.fm_offset[id(v)] = int(where[index[("t", k)]])
    for name, sizes in workspaces.items():
        if name in b.order and sizes:
            plan.workspace[name] = [(int(where[index[("w", name, j)]]), sz) for j, sz in enumerate(sizes)]
    plan.memory_size = top
    return True


def concurrent_lower_bound(steps: int, b: Buffers) -> int:
    """With several streams, buffers that may be live together must not share bytes, so the size of any set
    of pairwise-conflicting buffers is a lower bound. Start from the buffers live at a topological step
    (pairwise conflicting) and grow the set greedily, biggest first, with buffers that conflict with all."""
    delta = np.zeros(steps + 2, np.int64)
    np.add.at(delta, b.first, b.sizes)
    np.add.at(delta, np.minimum(b.last, steps) + 1, -b.sizes)
    live = np.cumsum(delta)[:steps]
    by_size = np.argsort(-b.sizes, kind="stable").tolist()
    best = 0
    # seed cliques at the steps with the most live bytes (any clique is a valid bound; the best seeds suffice)
    for _, step in sorted(zip(live.tolist(), range(steps)), reverse=True)[:CLIQUE_SEEDS]:
        members = (b.first <= step) & (step <= b.last)
        mask = b.conflict[members].all(axis=0)
        for j in by_size:
            if mask[j] and not members[j]:
                members[j] = True
                mask &= b.conflict[j]
        best = max(best, b.inputs_bytes + int(b.sizes[members].sum()))
    return best
