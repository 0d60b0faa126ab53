"""Several simulated devices (ranks) in one simulated time, joined by their collectives.

Each rank is a whole Simulation (its own streams, memory, L2, machine) run in its own thread. The threads take
turns: only one runs at a time, the rank whose next event is earliest ((time, rank) order), so an execution is
the same every time and a rank never runs past a moment another rank's collective could still change. A rank
hands the turn on when its next event is later than another's (`turn`) and waits, without a clock, while every
stream it has is held by a collective (`idle`). A collective is a rendezvous: the k-th collective a rank issues
on a group meets the k-th of every other rank of the group (send / receive: the k-th between a pair with one
tag); when the last rank arrives the result is computed over every rank's inputs (atc_py/ops/collective_math.py)
and the transfer costs what the link model says from the latest arrival (`cost`). If every rank that has not
finished waits, nothing can ever arrive: a deadlock, reported with the waiting ranks and what they wait for.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ir.graph import TensorDesc
from atc_py.ops import collective_math as cm
from atc_py.ops.core.base import OpError
from atc_py.ops.hccl import WORLD_GROUP

from ..load.model import desc_from_proto
from ..tasks.base import ran

INF = math.inf

# GE op type -> (the collective's kind, the attribute naming its root / peer)
KINDS = {"HcomAllReduce": "all_reduce", "HcomAllGather": "all_gather", "HcomReduceScatter": "reduce_scatter",
         "HcomBroadcast": "broadcast", "HcomAllToAll": "all_to_all", "HcomSend": "send", "HcomReceive": "receive"}


def op_attr(op, name: str, default=None):
    """An attribute of an .om OpDef (str, int or list of ints) — what the rendezvous needs to match ranks."""
    if name not in op.attr:
        return default
    a = op.attr[name]
    kind = a.WhichOneof("value")
    if kind == "s":
        return a.s.decode("utf-8", "replace")
    if kind == "i":
        return int(a.i)
    if kind == "list":
        return [int(x) for x in a.list.i]
    return default


@dataclass
class Arrival:
    rank: int
    time: int                       # when the collective reached the head of its stream (or the host launched it)
    op_type: str
    op_name: str
    inputs: list                    # arrays (numerics) or None (timing only)
    in_descs: list[TensorDesc]
    out_descs: list[TensorDesc]
    reduction: str = "sum"
    root: int = 0                   # broadcast: the root's rank in the group
    done: Callable | None = None    # called with (start, end, outputs) when the collective completes


@dataclass
class Rendezvous:
    key: tuple
    ranks: list[int]                # the group, in its rank order
    kind: str
    arrivals: dict[int, Arrival] = field(default_factory=dict)


class Deadlock(AtcError):
    pass


class World:
    """The ranks of one multi-device run, the turn they take and their collectives' rendezvous.
    `cost(kind, nbytes, ranks, dtype, reduction) -> ns`: the link model's time for one collective (om_run/hccl)."""

    def __init__(self, size: int, cost: Callable[..., int]):
        if size < 1:
            raise AtcError("E30002", reason=f"a world needs at least one rank, got {size}")
        self.size = size
        self.cost = cost
        self.lock = threading.Condition()
        self.clock: list[float] = [0] * size      # the earliest a rank can do anything next (INF: waits / done)
        self.waiting: list[bool] = [False] * size
        self.finished: list[bool] = [False] * size
        self.running = 0                          # the rank whose turn it is
        self.failure: AtcError | None = None
        self.issued: dict[tuple, int] = {}        # (rank, group key) -> collectives issued on it
        self.open: dict[tuple, Rendezvous] = {}
        self.log: list[dict] = []                 # one row per completed collective (the trace, reports)

    # -- taking turns -----------------------------------------------------------------------------------
    def _next(self) -> int | None:
        live = [(c, r) for r, c in enumerate(self.clock) if c < INF]
        return min(live)[1] if live else None

    def _hand_on(self) -> None:
        """Give the turn to the rank with the earliest next event; none: every live rank waits — a deadlock."""
        nxt = self._next()
        if nxt is None and not all(self.finished) and self.failure is None:
            self.failure = self._deadlock()
        self.running = nxt if nxt is not None else -1
        self.lock.notify_all()

    def _wait_turn(self, rank: int) -> None:
        while self.running != rank and self.failure is None:
            self.lock.wait()
        if self.failure is not None:
            raise self.failure

    def turn(self, rank: int, t: float) -> None:
        """Rank `rank` is about to act at time t: it waits until no rank can act earlier."""
        with self.lock:
            if self.failure is not None:
                raise self.failure
            self.clock[rank] = t
            if (t, rank) > min((c, r) for r, c in enumerate(self.clock)):
                self._hand_on()
                self._wait_turn(rank)

    def idle(self, rank: int) -> None:
        """Every stream of the rank waits for a collective: sleep until one completes (it posts the rank's next
        events and its time) or a deadlock is found."""
        with self.lock:
            self.clock[rank] = INF
            self.waiting[rank] = True
            self._hand_on()
            self._wait_turn(rank)
            self.waiting[rank] = False

    def finish(self, rank: int) -> None:
        with self.lock:
            self.clock[rank] = INF
            self.finished[rank] = True
            self.waiting[rank] = False
            self._hand_on()

    def fail(self, error: BaseException) -> None:
        """A rank failed: every other rank stops with it (one error for the run)."""
        with self.lock:
            if self.failure is None:
                self.failure = error if isinstance(error, AtcError) else \
                    AtcError("E30004", task="-", reason=f"a rank failed: {type(error).__name__}: {error}")
            self.lock.notify_all()

    def _deadlock(self) -> AtcError:
        lines = []
        for rz in self.open.values():
            here = sorted(rz.arrivals)
            missing = [r for r in rz.ranks if r not in rz.arrivals]
            a = rz.arrivals[here[0]]
            gone = [r for r in missing if self.finished[r]]
            lines.append(f"{a.op_type} '{a.op_name}' ({rz.kind}, ranks {rz.ranks}): rank(s) {here} wait, rank(s) "
                         f"{missing} never reach it" + (f" (rank(s) {gone} finished)" if gone else ""))
        what = "; ".join(lines) or f"rank(s) {[r for r, w in enumerate(self.waiting) if w]} wait"
        return Deadlock("E30004", task="-", reason=f"deadlock: {what}")

    # -- the rendezvous -----------------------------------------------------------------------------------
    def group_of(self, op, rank: int, p2p: bool = False) -> list[int]:
        """The ranks of an op's group in order: `rank_ids`, else every rank of the world for the world group."""
        ids = op_attr(op, "rank_ids")
        if ids:
            if len(set(ids)) != len(ids):
                twice = sorted({r for r in ids if ids.count(r) > 1})
                raise OpError(f"{op.type} '{op.name}': its group names rank(s) {twice} twice")
            bad = [r for r in ids if not 0 <= r < self.size]
            if bad:
                raise OpError(f"{op.type} '{op.name}': its group names rank(s) {bad}, the world has ranks "
                              f"0..{self.size - 1}")
            if rank not in ids:
                raise OpError(f"{op.type} '{op.name}' runs on rank {rank}, which is not in its group {ids}")
            return list(ids)
        group = op_attr(op, "group", WORLD_GROUP)
        if group != WORLD_GROUP:
            raise OpError(f"{op.type} '{op.name}': group '{group}' is not defined (give its ranks as the op's "
                          f"rank_ids, or use {WORLD_GROUP})")
        size = op_attr(op, "rank_size")
        if size not in (None, 0, self.size) and not p2p:
            raise OpError(f"{op.type} '{op.name}' has rank_size {size} but runs in a world of {self.size} ranks")
        return list(range(self.size))

    def arrive(self, rank: int, op, arrival: Arrival) -> Rendezvous:
        """Register a rank at its next collective (called in the rank's turn); completes it if it is the last."""
        kind = KINDS.get(op.type)
        if kind is None:
            raise OpError(f"{op.type} is not a collective")
        if kind in ("send", "receive"):
            group = self.group_of(op, rank, p2p=True)
            at = op_attr(op, "dest_rank" if kind == "send" else "src_rank", -1)    # a rank of the group
            peer = group[at] if 0 <= at < len(group) else -1
            if peer < 0 or peer == rank:
                raise OpError(f"{op.type} '{op.name}' on rank {rank} names peer rank {at} of a group of "
                              f"{len(group)}{' (itself)' if peer == rank else ''}")
            pair = (rank, peer) if kind == "send" else (peer, rank)
            gkey = ("p2p", pair, op_attr(op, "sr_tag", 0))
            ranks = list(pair)
        else:
            ranks = self.group_of(op, rank)
            gkey = ("group", tuple(ranks))
        with self.lock:
            n = self.issued.get((rank, gkey), 0)
            self.issued[(rank, gkey)] = n + 1
            key = gkey + (n,)
            rz = self.open.get(key)
            if rz is None:
                rz = self.open[key] = Rendezvous(key, ranks, "send/receive" if gkey[0] == "p2p" else kind)
            rz.arrivals[rank] = arrival
            if len(rz.arrivals) == len(rz.ranks):
                del self.open[key]
                self._complete(rz)
        return rz

    def _check_alike(self, rz: Rendezvous) -> None:
        """Every rank of a collective runs the same op on the same shapes and dtypes (send: the receiver's
        declared tensor is the sender's)."""
        arr = [rz.arrivals[r] for r in rz.ranks]
        if rz.kind == "send/receive":
            s, r = arr
            if s.op_type != "HcomSend" or r.op_type != "HcomReceive":
                raise OpError(f"ranks {rz.ranks} pair {s.op_type} '{s.op_name}' with {r.op_type} '{r.op_name}'")
            a, b = s.in_descs[0], r.out_descs[0]
            if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
                raise OpError(f"HcomSend '{s.op_name}' on rank {rz.ranks[0]} sends {a.dtype}{list(a.shape)}, "
                              f"HcomReceive '{r.op_name}' on rank {rz.ranks[1]} expects {b.dtype}{list(b.shape)}")
            return
        ref = arr[0]
        for a in arr[1:]:
            if a.op_type != ref.op_type:
                raise OpError(f"collective mismatch: rank {rz.ranks[0]} runs {ref.op_type} '{ref.op_name}' where rank "
                              f"{a.rank} runs {a.op_type} '{a.op_name}'")
            for x, y in zip(ref.in_descs, a.in_descs):
                if tuple(x.shape) != tuple(y.shape) or x.dtype != y.dtype:
                    raise OpError(f"{ref.op_type} '{ref.op_name}': rank {rz.ranks[0]} gives {x.dtype}{list(x.shape)}, "
                                  f"rank {a.rank} gives {y.dtype}{list(y.shape)}")

    def _complete(self, rz: Rendezvous) -> None:
        """The last rank arrived (the lock is held): the result, the time, and every rank's completion."""
        self._check_alike(rz)
        arr = [rz.arrivals[r] for r in rz.ranks]
        first = arr[0]
        outs = self._compute(rz, arr)
        d = first.in_descs[0] if first.in_descs else first.out_descs[0]
        nbytes = collective_bytes(rz.kind, d, len(rz.ranks))
        start = max(a.time for a in arr)
        dur = int(self.cost(rz.kind, nbytes, rz.ranks, d.dtype, first.reduction))
        end = start + dur
        self.log.append(dict(op=first.op_name, op_type=first.op_type, kind=rz.kind, ranks=list(rz.ranks),
                             bytes=nbytes, dtype=d.dtype, arrive={a.rank: a.time for a in arr}, start=start, end=end))
        for a in arr:
            if a.done is not None:
                a.done(start, end, outs.get(a.rank) if outs is not None else None)

    def _compute(self, rz: Rendezvous, arr: list[Arrival]) -> dict | None:
        if any(a.inputs is None for a in arr if a.op_type != "HcomReceive"):
            return None
        try:
            if rz.kind == "send/receive":
                return {rz.ranks[0]: [], rz.ranks[1]: [np.array(arr[0].inputs[0], copy=True)]}
            red = arr[0].reduction
            per_tensor = []      # a broadcast moves each of its tensors; the other collectives have one
            for k in range(len(arr[0].inputs)):
                xs = [np.asarray(a.inputs[k]) for a in arr]
                if rz.kind == "all_reduce":
                    per_tensor.append(cm.all_reduce(xs, red))
                elif rz.kind == "reduce_scatter":
                    per_tensor.append(cm.reduce_scatter(xs, red))
                elif rz.kind == "all_gather":
                    per_tensor.append(cm.all_gather(xs))
                elif rz.kind == "all_to_all":
                    per_tensor.append(cm.all_to_all(xs))
                else:   # root_rank: a rank of the group, as HCCL's root is
                    per_tensor.append(cm.broadcast(xs, arr[0].root))
        except cm.CollectiveError as exc:
            raise OpError(f"{arr[0].op_type} '{arr[0].op_name}' on ranks {rz.ranks}: {exc}") from None

        def shaped(o, d):
            return o.reshape(d.shape) if d is not None and d.known else o
        return {r: [shaped(res[i], d) for res, d in zip(per_tensor, list(a.out_descs) + [None] * len(per_tensor))]
                for i, (r, a) in enumerate(zip(rz.ranks, arr))}

def collective_bytes(kind: str, desc: TensorDesc, ranks: int) -> int:
    """HCCL's n (hccl_test's data_size) from one rank's input: the tensor reduced, broadcast, sent or exchanged,
    and for an all-gather the gathered output (ranks x the input)."""
    return int(desc.nbytes) * (ranks if kind == "all_gather" else 1)


def arrival_of(rank: int, op, time: int, inputs, in_descs=None, out_descs=None) -> Arrival:
    """An Arrival from an .om OpDef (its descs from the file unless the host executor knows this run's)."""
    ins = in_descs or [desc_from_proto(d) for d in op.input_desc]
    outs = out_descs or [desc_from_proto(d) for d in op.output_desc]
    return Arrival(rank, time, op.type, op.name, inputs, ins, outs, op_attr(op, "reduction", "sum"),
                   op_attr(op, "root_rank", 0))




RANK_TASKS = "world"   # the key of a device run's task_state under which its collectives wait (RankTasks)


class RankTasks:
    """What one rank's device run keeps for its HCCL tasks between arriving and running: task id -> state."""

    def __init__(self):
        self.state: dict[int, dict] = {}

    def pending(self) -> bool:
        return any(e["result"] is None for e in self.state.values())


def _tasks(run) -> RankTasks:
    rt = run.task_state.get(RANK_TASKS)
    if rt is None:
        rt = run.task_state[RANK_TASKS] = RankTasks()
    return rt


def _read_inputs(run, op) -> list | None:
    if run.mem is None:
        return None
    run.drain()     # the kernels before it have written its inputs
    descs = [desc_from_proto(d) for d in op.input_desc]
    return [run.mem.read(a, d) for a, d in zip(op.input_i, descs)]


class WorldBinding:
    """A rank's Simulation and device runs reach the world through this (sim.world / run.world)."""

    def __init__(self, world: World, rank: int):
        self.world, self.rank = world, rank

    # the device run's event loop
    def turn(self, t: int) -> None:
        self.world.turn(self.rank, t)

    def idle_if_held(self, run) -> bool:
        """The run's heap is empty: if a collective holds a stream, wait for it (True: events were posted)."""
        rt = run.task_state.get(RANK_TASKS)
        if rt is None or not rt.pending():
            return False
        self.world.idle(self.rank)
        return True

    # the HCCL task handler (om_run/tasks/hccl.py): a task at its stream's head arrives at its rendezvous and
    # holds the stream until the collective completes; it then runs from the latest arrival to the end the link
    # model gives, its outputs landing at the end
    def blocked(self, run, task, t: int) -> int | None:
        world = self.world
        rt = _tasks(run)
        entry = rt.state.get(task.id)
        if entry is None:
            entry = rt.state[task.id] = {"result": None, "arrive": t}
            arrival = arrival_of(self.rank, task.op, t, _read_inputs(run, task.op))

            def done(start, end, outs, entry=entry, stream=task.stream):
                entry["result"] = (start, end, outs)
                run.at(start, run.kick, stream)       # the rank's thread waits (or is this one): its heap is free
                world.clock[self.rank] = min(world.clock[self.rank], start)
            arrival.done = done
            world.arrive(self.rank, task.op, arrival)
        if entry["result"] is None:
            return -1
        start = entry["result"][0]
        return None if t >= start else start

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        entry = _tasks(run).state.pop(task.id)
        begin, end, outs = entry["result"]
        begin = max(begin, start)
        run.hazard_check(task, begin)
        writes = []
        if outs is not None and run.mem is not None:
            descs = [desc_from_proto(d) for d in task.op.output_desc]
            writes = [(a, np.asarray(o).astype(d.dtype, copy=False).reshape(d.shape))
                      for a, o, d in zip(task.op.output_i, outs, descs)]
        ran(run, task, entry["arrive"], begin, max(end, begin), writes)
        return None

    # the host executor (a dynamic-shape model, op by op)
    def host_collective(self, sim, op, args: list, in_descs: list, out_descs: list, start: int):
        """(start, end, outputs) of a collective the host launched at `start`; blocks the rank until it completes."""
        world = self.world
        world.turn(self.rank, start)
        box: dict = {}

        def done(s, e, outs):
            box["result"] = (s, e, outs)
            world.clock[self.rank] = min(world.clock[self.rank], s)
        inputs = None if any(a is None for a in args) or not sim.compute else [np.asarray(a) for a in args]
        arrival = arrival_of(self.rank, op, start, inputs, in_descs, out_descs)
        arrival.done = done
        world.arrive(self.rank, op, arrival)
        if "result" not in box:
            world.idle(self.rank)
        return box["result"]


class MirrorBinding(WorldBinding):
    """A rank of `size` identical ranks, timing only: every rank runs this one's program on the same shapes, so
    each reaches each collective when this one does and the collective starts at once, costing what the link model
    says for the whole group. Exact for a tensor-parallel decoder's ranks (same graph, same step); it prices a step
    with one simulated device instead of `size`."""

    def __init__(self, size: int, cost: Callable[..., int]):
        self.size, self.cost, self.rank = size, cost, 0
        self.log: list[dict] = []

    def _complete(self, op, t: int, in_descs, out_descs) -> tuple[int, int]:
        kind = KINDS.get(op.type)
        if kind is None:
            raise OpError(f"{op.type} is not a collective")
        d = (in_descs or out_descs)[0]
        ranks = [0, 1] if kind in ("send", "receive") else list(range(self.size))
        nbytes = collective_bytes(kind, d, len(ranks))
        end = t + int(self.cost(kind, nbytes, ranks, d.dtype, op_attr(op, "reduction", "sum")))
        self.log.append(dict(op=op.name, op_type=op.type, kind=kind, ranks=ranks, bytes=nbytes, dtype=d.dtype,
                             arrive={0: t}, start=t, end=end))
        return t, end

    def turn(self, t: int) -> None:
        return None

    def idle_if_held(self, run) -> bool:
        return False

    def blocked(self, run, task, t: int) -> int | None:
        return None

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        op = task.op
        s, e = self._complete(op, start, [desc_from_proto(d) for d in op.input_desc],
                              [desc_from_proto(d) for d in op.output_desc])
        run.hazard_check(task, s)
        ran(run, task, t, s, e, [])
        return None

    def host_collective(self, sim, op, args: list, in_descs: list, out_descs: list, start: int):
        s, e = self._complete(op, start, in_descs, out_descs)
        return s, e, None
