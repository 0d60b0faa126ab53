"""What a collective costs over a topology's links: the algorithm HCCL picks, its steps in the alpha-beta model.

HCCL's own cost tables (hicann/hccl docs/en/user_guide/coll_algo_intro/*.md), with p ranks, n the bytes of the
whole buffer (hccl_test's data_size: the all-reduced tensor, the gathered output, the scattered input, the
broadcast tensor, one rank's all-to-all send buffer), alpha a step's latency, beta = 1 / bandwidth, gamma = 1 /
the reduction's rate:

* Mesh (a full HCCS mesh; each chip drives its p-1 links at once): ReduceScatter a + n/p b + (p-1)/p n g,
  AllGather a + n/p b, AllReduce = ReduceScatter + AllGather, Broadcast = Scatter (a + n/p b) + AllGather.
  AllToAll (no entry in Mesh.md; derived the same way: n/p to each peer at once): a + n/p b.
* Ring (PCIe, star or fat-tree): ReduceScatter (p-1)(a + n/p b + n/p g), AllGather (p-1)(a + n/p b),
  AllReduce both, Broadcast (p-1)(a + n b).
* Star (rooted, one step): a + n b per peer link; on PCIe the root's one link carries all p-1 copies (derived).
* Pairwise (AllToAll step by step): (p-1)(a + n/p b).
* Between servers (level 1, HCCL_ALGO): ring, RHD (H-D_R) and NHR as their tables; a collective across servers is
  HCCL's hierarchy (algo_intro.md): e.g. AllReduce = intra ReduceScatter, inter AllReduce of n/p_local, intra
  AllGather.
* Send/Recv: a + n b over the link between the two chips.
* Doubling (310P3's all-reduce; hicann/hccl all_reduce_doubling_direct.cc): log2 p steps, each reading the whole
  buffer from the step's partner with the SDMA engine's inline reduction: log2(p) (a + n b), no separate reduce.

Intra-server choice (HCCL: from the hardware topology, not configurable): Mesh on a full mesh, Ring on PCIe (Ring.md:
the algorithm for star / fat-tree interconnects) - but on the 310P3 an all-reduce the SDMA engine can reduce inline
(fp16, fp32, int16; sum: device_capacity.cc) runs as Doubling for a power-of-two group of at most 8 ranks when its
buffer is at most 256 KB, and always for two ranks on a Duo card (all_reduce_operator.cc SelectAlgfor310P3DUO /
SelectAlgfor310P3). `algo=` overrides the choice for what-if studies.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.platform.topology import LinkParams, Topology

from . import hccl_algo
from .op_names import canonical_op
from .rank_table import RankTable, dense_placement

INTRA_ALGOS = ("mesh", "ring", "star", "pairwise", "doubling")
DOUBLING_MAX_BYTES = 256 * 1024       # HCCL_SMALL_COUNT_256_KB
DOUBLING_MAX_RANKS = 8                # AllReduceDoublingDirect: rankSize <= 8, a power of two
INLINE_REDUCE_310P3 = ({"float16", "float32", "int16"}, {"sum"})     # IsDataTypeSupport / IsRedOpSupport, 310P3
DUO_PRESET = "atlas-300i-duo"


@dataclass(frozen=True)
class Phase:
    """One stage of a collective on one level: its steps, the bytes over the busiest link, the bytes reduced."""

    name: str
    level: int               # 0 inside a server, 1 between servers
    algorithm: str
    link: str
    steps: int
    link_bytes: float
    reduce_bytes: float
    ns: float


@dataclass(frozen=True)
class CollectiveCost:
    op: str
    nbytes: int
    ranks: int
    ns: float
    algorithm: str           # e.g. "mesh", "ring", "mesh + rhd (level1)"
    steps: int               # alpha terms on the critical path
    bytes_on_busiest_link: float
    reduce_bytes: float
    dtype: str
    phases: tuple[Phase, ...] = ()
    notes: tuple[str, ...] = field(default=())


def _fail(value, parameter: str, reason: str) -> AtcError:
    return AtcError("E10001", value=str(value), parameter=parameter, reason=reason)


# -- one primitive on p ranks of n bytes: [(steps, link_bytes, reduce_bytes)] ---------------------------------
def _mesh(prim: str, p: int, n: float):
    return {"rs": (1, n / p, (p - 1) / p * n), "ag": (1, n / p, 0.0), "scatter": (1, n / p, 0.0),
            "a2a": (1, n / p, 0.0)}[prim]


def _ring(prim: str, p: int, n: float):
    share = (p - 1) / p * n
    return {"rs": (p - 1, share, share), "ag": (p - 1, share, 0.0), "scatter": (p - 1, share, 0.0),
            "bc": (p - 1, (p - 1) * n, 0.0), "ar": (2 * (p - 1), 2 * share, share)}[prim]


def _rhd(prim: str, p: int, n: float):
    k = int(math.floor(math.log2(p)))
    if prim == "bc":
        depth = math.ceil(math.log2(p))
        return (depth, depth * n, 0.0)
    if 2 ** k == p:
        share = (p - 1) / p * n
        return {"rs": (k, share, share), "ag": (k, share, 0.0), "ar": (2 * k, 2 * share, share)}[prim]
    q = 2 ** k
    if prim == "ar":
        return (2 * k + 2, (2 * (q - 1) / q + 2) * n, ((q - 1) / q + 1) * n)
    halving = sum(math.ceil(p / 2 ** i) for i in range(1, k + 1)) / p * n
    reduce = n + halving if prim == "rs" else 0.0
    return (k + 2, n + halving + n / p, reduce)


def _nhr(prim: str, p: int, n: float):
    depth, share = math.ceil(math.log2(p)), (p - 1) / p * n
    return {"rs": (depth, share, share), "ag": (depth, share, 0.0), "ar": (2 * depth, 2 * share, share),
            "bc": (2 * depth, 2 * share, 0.0)}[prim]


def _doubling(prim: str, p: int, n: float):
    k = int(math.log2(p))
    return (k, k * n, 0.0)      # the SDMA engine reduces as it writes: no reduce term


def _pairwise(prim: str, p: int, n: float):
    return (p - 1, (p - 1) / p * n, 0.0)


def _star(prim: str, p: int, n: float, shared_root_link: bool):
    return (1, (p - 1) * n if shared_root_link else n, 0.0)


# -- the stages of each collective ------------------------------------------------------------------------------
def _intra_stages(op: str, algo: str) -> list[tuple[str, str]]:
    """(primitive, name) stages of a one-server collective under an intra-server algorithm."""
    if op == "all_reduce":
        return [("ar", "all-reduce")] if algo == "doubling" else [("rs", "reduce-scatter"), ("ag", "all-gather")]
    if op == "reduce_scatter":
        return [("rs", "reduce-scatter")]
    if op == "all_gather":
        return [("ag", "all-gather")]
    if op == "broadcast":
        return [("scatter", "scatter"), ("ag", "all-gather")] if algo == "mesh" else [("bc", "broadcast")]
    return [("a2a", "all-to-all")]


def _primitive(algo: str, prim: str, p: int, n: float, topology: Topology):
    if algo == "mesh":
        return _mesh(prim, p, n)
    if algo == "star":
        return _star(prim, p, n, shared_root_link=topology.interconnect != "full-mesh")
    if algo == "pairwise":
        return _pairwise(prim, p, n)
    if algo == "doubling":
        return _doubling(prim, p, n)
    return {"ring": _ring, "rhd": _rhd, "nhr": _nhr}[algo](prim, p, n)


def _default_intra(op: str, topology: Topology, p: int, nbytes: int, dtype: str, reduction: str) -> str:
    if _doubling_applies(op, p) and topology.soc_version == "Ascend310P3" \
            and dtype in INLINE_REDUCE_310P3[0] and reduction in INLINE_REDUCE_310P3[1] \
            and (nbytes <= DOUBLING_MAX_BYTES or (topology.name == DUO_PRESET and p == 2)):
        return "doubling"
    if topology.interconnect == "full-mesh":
        return "mesh"
    return "pairwise" if op == "all_to_all" else "ring"


def _doubling_applies(op: str, p: int) -> bool:
    return op == "all_reduce" and 2 <= p <= DOUBLING_MAX_RANKS and p & (p - 1) == 0


def _check_intra(op: str, algo: str, topology: Topology, p: int) -> str:
    if algo not in INTRA_ALGOS:
        raise _fail(algo, "algo", f"an intra-server algorithm is one of {', '.join(INTRA_ALGOS)}")
    if algo == "mesh" and topology.interconnect != "full-mesh":
        raise _fail(algo, "algo", f"Mesh needs every pair of chips joined; {topology.name}'s chips meet over "
                                  f"{topology.interconnect}")
    if algo == "star" and op != "broadcast":
        raise _fail(algo, "algo", "Star is HCCL's algorithm for rooted collectives (broadcast here)")
    if algo == "pairwise" and op != "all_to_all":
        raise _fail(algo, "algo", "Pairwise is HCCL's algorithm for all-to-all only")
    if op == "all_to_all" and algo == "ring":
        raise _fail(algo, "algo", "all-to-all runs as mesh or pairwise")
    if algo == "doubling" and not _doubling_applies(op, p):
        raise _fail(algo, "algo", f"Doubling is HCCL's all-reduce for a power-of-two group of 2..{DOUBLING_MAX_RANKS} "
                                  "ranks in one server")
    return algo


def _level1(op: str, servers: int, environ, notes: list[str]) -> str:
    asked = hccl_algo.level1_algorithm(op, environ)
    default = "pairwise" if op == "all_to_all" else ("rhd" if servers & (servers - 1) == 0 else "ring")
    if asked is None:
        return default
    algo = hccl_algo.MODELLED.get(asked)
    if algo is None or (algo == "pairwise") != (op == "all_to_all"):
        notes.append(f"HCCL_ALGO level1:{asked} is not priced for {op}: HCCL's default ({default}) used instead")
        return default
    notes.append(f"HCCL_ALGO: level1 {asked}")
    return algo


def _phase(name: str, level: int, algo: str, link: LinkParams, cost) -> Phase:
    steps, link_bytes, reduce_bytes = cost
    return Phase(name, level, algo, link.name, int(steps), float(link_bytes), float(reduce_bytes),
                 link.step_ns(steps, link_bytes, reduce_bytes))


def _hierarchy(op: str, p_local: int, servers: int, n: float, algo0: str, algo1: str, topology: Topology):
    """The phases of a collective across servers, in HCCL's hierarchy: (level, primitive, name, ranks, bytes)."""
    table = {
        "all_reduce": [(0, "rs", "intra reduce-scatter", p_local, n),
                       (1, "ar", "inter all-reduce", servers, n / p_local),
                       (0, "ag", "intra all-gather", p_local, n)],
        "reduce_scatter": [(1, "rs", "inter reduce-scatter", servers, n),
                           (0, "rs", "intra reduce-scatter", p_local, n / servers)],
        "all_gather": [(0, "ag", "intra all-gather", p_local, n / servers), (1, "ag", "inter all-gather", servers, n)],
        "broadcast": [(0, "scatter", "intra scatter", p_local, n), (1, "bc", "inter broadcast", servers, n / p_local),
                      (0, "ag", "intra all-gather", p_local, n)],
        "all_to_all": [(0, "a2a", "intra all-to-all", p_local, n), (1, "a2a", "inter all-to-all", servers, n)],
    }[op]
    out = []
    for level, prim, name, ranks, size in table:
        if ranks < 2:
            continue
        algo = algo1 if level else ("mesh" if algo0 == "star" and topology.interconnect == "full-mesh"
                                    else "ring" if algo0 == "star" else algo0)
        link = topology.inter_link if level else topology.intra_link
        out.append(_phase(name, level, algo, link, _primitive(algo, prim, ranks, size, topology)))
    return out


def collective_cost(op: str, nbytes: int, group, topology: Topology, algo: str | None = None,
                    dtype: str = "float16", placement: RankTable | None = None, environ=None,
                    reduction: str = "sum") -> CollectiveCost:
    """The simulated cost of one collective of `nbytes` (HCCL's n, hccl_test's data_size) over the ranks in `group`.

    placement: the rank table saying which server and device each rank is (default: ranks fill servers in order).
    algo: the intra-server algorithm instead of HCCL's choice (mesh, ring, star, pairwise, doubling); reduction: an
    all-reduce's (sum, prod, max, min: whether the SDMA engine can reduce it inline). HCCL_ALGO (environ,
    default os.environ) chooses the level1 algorithm of a group that spans servers, as HCCL does."""
    op = canonical_op(op)
    try:
        dtype = np.dtype(dtype).name
    except TypeError:
        raise _fail(dtype, "dtype", "not a numpy dtype") from None
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
        raise _fail(nbytes, "nbytes", "a collective's size is a non-negative number of bytes")
    group = [int(r) for r in group]
    if not group or len(set(group)) != len(group) or min(group) < 0:
        raise _fail(group, "group", "a group is a non-empty list of distinct rank ids")
    placement = placement or dense_placement(max(group) + 1, topology)
    if max(group) >= placement.size:
        raise _fail(group, "group", f"rank {max(group)} is not in the rank table ({placement.size} ranks)")
    if op in ("send", "recv") and len(group) != 2:
        raise _fail(group, "group", f"{op} is between two ranks: [source, destination]")
    notes: list[str] = []
    servers_of = [placement.ranks[r].server_index for r in group]
    servers = sorted(set(servers_of))
    p_local = max(servers_of.count(s) for s in servers)
    if len(servers) > 1 and topology.inter_link is None:
        raise _fail(group, "group", f"the group spans {len(servers)} servers, but HCCL on {topology.name} has no "
                                    "inter-server communication")
    if len(servers) > 1 and len({servers_of.count(s) for s in servers}) > 1:
        notes.append("ranks are spread unevenly over the servers: priced with the fullest server's count")
    one_server = len(servers) == 1
    algo0 = _check_intra(op, algo, topology, len(group) if one_server else 0) if algo else \
        _default_intra(op, topology, len(group) if one_server else 0, int(nbytes), dtype, reduction)
    n = float(nbytes)
    if len(group) == 1 or nbytes == 0:
        phases: list[Phase] = []
        label = "none (one rank or no data)"
    elif op in ("send", "recv"):
        link = topology.intra_link if len(servers) == 1 else topology.inter_link
        phases = [_phase(op, 0 if len(servers) == 1 else 1, "p2p", link, (1, n, 0.0))]
        label = "p2p"
    elif len(servers) == 1:
        p = len(group)
        phases = [_phase(name, 0, algo0, topology.intra_link, _primitive(algo0, prim, p, n, topology))
                  for prim, name in _intra_stages(op, algo0)]
        label = algo0
    else:
        algo1 = _level1(op, len(servers), environ, notes)
        phases = _hierarchy(op, p_local, len(servers), n, algo0, algo1, topology)
        label = f"{algo0} + {algo1} (level1)" if p_local > 1 else f"{algo1} (level1)"
    per_link: dict[str, float] = {}
    for ph in phases:
        per_link[ph.link] = per_link.get(ph.link, 0.0) + ph.link_bytes
    return CollectiveCost(op=op, nbytes=int(nbytes), ranks=len(group), ns=sum(ph.ns for ph in phases),
                          algorithm=label, steps=sum(ph.steps for ph in phases),
                          bytes_on_busiest_link=max(per_link.values(), default=0.0),
                          reduce_bytes=sum(ph.reduce_bytes for ph in phases), dtype=dtype, phases=tuple(phases),
                          notes=tuple(notes))
