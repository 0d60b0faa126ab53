"""A lowered control-flow region is checked for hazards as one task (program.py): its reads of bytes it writes
itself are dropped. That check is a bisection per read, not a scan of the region's writes: a tree of If
branches puts tens of thousands of tasks in one region."""
from __future__ import annotations

import random
import time
from types import SimpleNamespace

from om_run.sim.hazards import Access
from om_run.sim.program import _collapse_regions, _Cover


def test_cover_answers_as_the_pairwise_check():
    rng = random.Random(5)
    for _ in range(200):
        spans = [SimpleNamespace(lo=a, hi=a + rng.randrange(1, 40)) for a in (rng.randrange(100) for _ in range(8))]
        cover = _Cover(spans)
        for _ in range(30):
            lo = rng.randrange(120)
            hi = lo + rng.randrange(1, 30)
            assert cover(lo, hi) == any(w.lo <= lo and hi <= w.hi for w in spans)
    assert not _Cover([])(0, 1)


def test_a_region_of_20000_tasks_is_collapsed_in_moments():
    """Each task of an If's branch reads the outer input (a read no write of the region covers) and writes a
    buffer of its own, which the next task reads: 20,000 x 20,000 comparisons before."""
    n = 20_000
    owner = SimpleNamespace(id=0, name="if", type="If", subgraph_name=["branch"], attr={})
    ops = {0: owner, **{k: SimpleNamespace(id=k, name=f"op{k}", type="Relu", subgraph_name=[], attr={})
                        for k in range(1, n + 1)}}
    model = SimpleNamespace(ops=ops, root_graph="root", graph_of={0: "root", **{k: "branch" for k in range(1, n + 1)}})
    tasks = [SimpleNamespace(id=k, op=ops[k + 1], stream=0) for k in range(n)]
    accesses = {k: [Access(k, 0, 64, False), Access(k, 4096 + 64 * k, 4096 + 64 * (k + 1), True)]
                + ([Access(k, 4096 + 64 * (k - 1), 4096 + 64 * k, False)] if k else []) for k in range(n)}
    t0 = time.perf_counter()
    region_last, _ = _collapse_regions(model, tasks, accesses)
    assert time.perf_counter() - t0 < 3
    assert region_last == {0: n - 1} and list(accesses) == [0]
    reads = [a for a in accesses[0] if not a.write]
    assert len(reads) == n and all((a.lo, a.hi) == (0, 64) for a in reads)   # only the outer input's
    assert sum(a.write for a in accesses[0]) == n
