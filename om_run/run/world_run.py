"""A model run on every rank of a world of simulated devices at once: what `om-run --world-size` and
tensor-parallel serving call. Each rank is its own Simulation in its own thread; the World (sim/world.py) makes
them take turns in simulated time and joins them at their collectives."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from atc_py.common.errors import AtcError

from ..hccl.algorithms import collective_cost
from ..sim.host import Simulation
from ..sim.profile import RuntimeProfile
from ..sim.warm import warm
from ..sim.world import World, WorldBinding


@dataclass
class WorldRun:
    """One execution on every rank: each rank's outputs and LoopStats, and the collectives as they ran."""
    outputs: list = field(default_factory=list)
    stats: list = field(default_factory=list)
    collectives: list[dict] = field(default_factory=list)

    @property
    def e2e_ns(self) -> int:
        """The world's execution time: until its slowest rank has its outputs."""
        return max(s.e2e_ns for s in self.stats)


def link_cost(topology, placement=None):
    """The World's cost of one collective: what HCCL's algorithm for the group on this topology costs over its links
    (om_run/hccl/algorithms.py), in whole ns."""
    def cost(kind: str, nbytes: int, ranks: list, dtype: str, reduction: str = "sum") -> int:
        return int(round(collective_cost(kind, nbytes, ranks, topology, dtype=dtype, placement=placement,
                                         reduction=reduction).ns))
    return cost


def world_simulations(models: list, prof: RuntimeProfile, compute: bool, **settings) -> list[Simulation]:
    """One loaded Simulation per rank (its own memory, L2 and programs), warmed like om-run's."""
    sims = []
    for m in models:
        sim = Simulation(m, prof, compute=compute, **settings)
        warm(sim)
        sims.append(sim)
    return sims


def run_world(sims: list[Simulation], cost, inputs: list | None = None, shapes=None) -> WorldRun:
    """One execution of every rank's model (inputs[r]: rank r's arrays, None for timing only) in one World."""
    world = World(len(sims), cost)
    results: list = [None] * len(sims)
    errors: list = [None] * len(sims)

    def body(rank: int) -> None:
        sim = sims[rank]
        sim.world = WorldBinding(world, rank)
        try:
            world.turn(rank, 0)
            results[rank] = sim.run(inputs[rank] if inputs is not None else None, shapes)
        except BaseException as exc:   # noqa: BLE001  (every rank stops with the first failure, named below)
            errors[rank] = exc
            world.fail(exc)
        finally:
            world.finish(rank)
            sim.world = None

    threads = [threading.Thread(target=body, args=(r,), name=f"rank-{r}", daemon=True) for r in range(len(sims))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if world.failure is not None:
        first = next((e for e in errors if e is not None and e is not world.failure
                      and not isinstance(e, AtcError)), None)
        if first is not None and not isinstance(world.failure, AtcError):
            raise first
        raise world.failure
    return WorldRun([r[0] for r in results], [r[1] for r in results], list(world.log))
