"""Node names: unique_name gives the first free suffix, as a search from suffix 0 would, also after names are
freed; and it does so at once for a base used thousands of times (an unrolled loop, a tree of branches)."""
from __future__ import annotations

import random
import time

from atc_py.ir.graph import Graph


def _first_free(taken: set[str], base: str) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def test_unique_names_match_a_search_from_zero_through_adds_and_frees():
    rng = random.Random(3)
    g = Graph("g")
    sub = Graph("sub", namespace=g)          # a subgraph shares the namespace
    taken: set[str] = set()
    bases = ["a", "a_1", "b", "Add", "x_2"]
    for _ in range(5000):
        r = rng.random()
        graph = rng.choice([g, sub])
        if r < 0.6:
            base = rng.choice(bases)
            name = graph.unique_name(base)
            assert name == _first_free(taken, base)
            graph.add_node(name, "Relu")
            taken.add(name)
        elif taken:
            name = rng.choice(sorted(taken))
            node = next((n for n in graph.nodes if n.name == name), None)
            if node is not None:
                graph.remove_nodes([node])
                taken.discard(name)
    assert taken == {n.name for n in g.nodes} | {n.name for n in sub.nodes}


def test_a_base_used_50000_times_names_in_linear_time():
    g = Graph("g")
    t0 = time.perf_counter()
    for _ in range(50_000):
        g.add_node(g.unique_name("Add"), "Add")
    assert time.perf_counter() - t0 < 2
    assert g.nodes[-1].name == "Add_49999"
