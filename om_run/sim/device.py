"""One execution of a static model on the simulated device: a discrete-event task scheduler.

Streams are SQ FIFOs the model execute activates; a task starts when it is at its stream's head, its
stream's previous task has finished and its dependencies hold (EVENT_WAIT: the event is recorded and the
notify has arrived; SUPER_KERNEL: its sink members' tiling tasks have notified). While a head is blocked
the scheduler has already fetched the next `prefetch_num` SQEs: it keeps snapshots of them, and a kernel
later run from a snapshot taken before its UPDATE patched the live SQE runs with block_dim 0xFFFFFFFF — a
prefetch hazard. Kernels spread their blocks over the cores and share the L2 and DRAM bandwidth with every
other running kernel (machine.py); AICPU tasks take one AICPU core.
Numerics run in simulated order: a kernel reads its inputs when it starts and its outputs land when it
ends, so a missing event or a broken memory plan corrupts results — and is reported as a hazard.
What each task type does when it runs is its handler's (om_run/tasks/), handed this run; here are the
streams, the event queue, jumps, landing outputs, hazard checks and the kernels' launch machinery.
"""
from __future__ import annotations

import heapq
import os
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ir.formats import DEVICE_FORMATS, to_device
from atc_py.om import task_types as tt
from atc_py.ops import get_op
from atc_py.ops.core import host_pool
from atc_py.ops.core.base import OpError, TilingContext, TilingResult
from atc_py.ops.core.execute import launch

from ..load.model import desc_from_proto
from ..tasks.table import BLOCKING_KINDS, HANDLERS, KERNEL_KINDS
from .budget import BudgetExceeded, TaskBudget, default_task_budget
from .compute_lane import LaneFailure, lane
from .device_memory import DeviceMemory, MemoryFault
from .hazards import Hazard, check_start
from .machine import Job, Machine
from .overflow import OverflowCheck, original_names
from .profile import RuntimeProfile
from .program import Call, KernelPlan, Program, SimTask, Sqe, kernel_cost, op_tiling_context, plan_call
from .roofline import roofline

# what numpy and the kernels raise on values outside what an op supports (AxisError is a ValueError)
KERNEL_FAULTS = (ValueError, IndexError, KeyError, TypeError, ArithmeticError)


@dataclass
class TaskRecord:
    task: int
    stream: int
    type: str
    name: str
    op_type: str
    arrive: int       # when it reached the head of its stream (ns)
    start: int
    end: int
    block_dim: int = 0
    unit: str = ""
    # kernels: the launch work of each call and its L2/DRAM traffic (the figures below derive from them)
    soc: object = field(default=None, repr=False, compare=False)
    works: list = field(default_factory=list, repr=False, compare=False)
    traffics: list = field(default_factory=list, repr=False, compare=False)

    @cached_property
    def _figures(self) -> dict:
        """What the kernel did and what physics allows it (roofline.py), computed once the run is over."""
        f = dict(dtype="", flops=0, vector_ops=0, bytes=0, dram_bytes=0, compulsory_dram=0, compulsory=0,
                 roofline_ns=0.0, roof_cube_ns=0.0, roof_vector_ns=0.0, roof_memory_ns=0.0)
        for w, tr in zip(self.works, self.traffics):
            if w is None:
                continue
            flops = w.flops or w.fractals * 2 * 16 * 16 * 16
            r = roofline(self.soc, w.dtype, flops, w.vector_ops, tr.compulsory_dram, tr.compulsory)
            f["dtype"] = f["dtype"] or w.dtype
            for k, v in (("flops", flops), ("vector_ops", w.vector_ops), ("bytes", tr.total), ("dram_bytes", tr.dram),
                         ("compulsory_dram", tr.compulsory_dram), ("compulsory", tr.compulsory), ("roofline_ns", r.ns),
                         ("roof_cube_ns", r.cube_ns), ("roof_vector_ns", r.vector_ns),
                         ("roof_memory_ns", max(r.dram_ns, r.l2_ns))):
                f[k] += v
        terms = {"cube": f["roof_cube_ns"], "vector": f["roof_vector_ns"], "memory": f["roof_memory_ns"]}
        f["bound"] = max(terms, key=lambda k: terms[k]) if f["roofline_ns"] > 0 else ""
        return f

    dtype = property(lambda self: self._figures["dtype"])
    flops = property(lambda self: self._figures["flops"])
    vector_ops = property(lambda self: self._figures["vector_ops"])
    bytes = property(lambda self: self._figures["bytes"])                  # between global memory and the cores
    dram_bytes = property(lambda self: self._figures["dram_bytes"])        # of which across the DRAM interface
    compulsory_dram = property(lambda self: self._figures["compulsory_dram"])   # cold inputs + outputs the L2 can't keep
    compulsory = property(lambda self: self._figures["compulsory"])        # inputs + outputs
    roofline_ns = property(lambda self: self._figures["roofline_ns"])
    roof_cube_ns = property(lambda self: self._figures["roof_cube_ns"])
    roof_vector_ns = property(lambda self: self._figures["roof_vector_ns"])
    bound = property(lambda self: self._figures["bound"])


@dataclass
class Stream:
    tasks: list[SimTask]
    head: int = 0
    ready: int = 0
    busy: bool = False
    blocked: bool = False
    active: bool = True        # a stream some STREAM_ACTIVE / STREAM_SWITCH starts waits for it


class Landing(list):
    """A kernel's (destination, array) outputs to land at its end; on the compute lane, filled there. `shadows`:
    (address, desc, framework-layout array, shadow key) of its device-format outputs, kept for their readers once
    landed (DeviceMemory.shadow)."""

    def __init__(self):
        super().__init__()
        self.ranges: list = []       # (address, desc, shadow key) of the outputs: the bytes they land in
        self.shadows: list = []


class LoopLimit(Exception):
    """A label was jumped to, or a stream started, more often than --max-loop-iterations allows."""


@dataclass
class RunResult:
    start: int
    end: int
    records: list[TaskRecord] = field(default_factory=list)
    hazards: list[Hazard] = field(default_factory=list)
    flows: list[tuple[str, int, int]] = field(default_factory=list)   # (kind, from task, to task)


class DeviceRun:
    inline_kernels = True   # kick's inline path (off: every kernel through the event queue, as tests compare)
    use_lane = True         # numerics on the compute lane with two host threads (off: inline, as tests compare)
    shadow_outputs = True   # device-format outputs kept in the framework's layout (DeviceMemory.shadow); off: bytes now
    world = None            # a rank of several devices: its WorldBinding (world.py); None: one device

    def __init__(self, prog: Program, machine: Machine, prof: RuntimeProfile, mem: DeviceMemory | None,
                 allow_hazards: bool = False, id_offset: int = 0, max_loop_iterations: int | None = None,
                 budget: TaskBudget | None = None, overflow: OverflowCheck | None = None, dumper=None):
        self.p, self.machine, self.prof, self.mem = prog, machine, prof, mem
        self.known_values: dict = {}     # timing only: model input name -> its values (Simulation.known_values)
        self.soc = machine.soc
        self.allow = allow_hazards
        self.heap: list = []
        self.seq = 0
        self.waiting: dict = {}      # what a blocked head waits for (an event, ("notify", op)) -> its streams
        # what the task handlers (om_run/tasks/) keep between the tasks of this execution
        self.events: dict[int, int] = {}           # event -> when its notify arrives (EVENT_RECORD; a wait resets it)
        self.recorder_of_event: dict[int, int] = {}
        self.notify: dict[int, int] = {}           # sink op id -> time its device tiling notified
        self.sink_ctx: dict[int, TilingResult] = {}   # sink op id -> its device tiling's result
        self.sink_depend: dict[int, dict] = {}        # sink op id -> the values that tiling read
        self.task_state: dict[int, dict] = {}      # task type -> what a type added later keeps (no field here)
        self.live: dict[int, Sqe] = {}
        self.snap: dict[int, Sqe] = {}
        self.end: dict[int, int] = {}
        self.res: RunResult | None = None
        self.id_offset = id_offset
        self.live.update(prog.initial_sqes)   # Sqes are replaced (UPDATE), never changed: shared
        self.streams: dict[int, Stream] = {sid: Stream(tasks, active=sid not in prog.activated)
                                           for sid, tasks in prog.stream_tasks.items()}
        from ..load.limits import DEFAULT_MAX_LOOP_ITERATIONS
        self.max_loops = max_loop_iterations or DEFAULT_MAX_LOOP_ITERATIONS
        self.budget = budget or TaskBudget(default_task_budget(len(prog.tasks)))
        self.overflow = overflow      # --check-overflow: ops whose outputs turn inf/NaN from finite inputs
        self.dumper = dumper          # --dump / --acl_json (dump.py)
        self.entries: dict = {}                # ("label", id) / ("stream", id) -> times entered
        self.jump: dict[int, tuple[int, int]] = {}   # task id -> (stream, position) it moves to when it ends
        self.inline_tasks = 0   # kernels kick ran to their end without the event queue (tests: the path is taken)
        self.direct_outputs = 0   # outputs kernels wrote where they land (no copy at the end)
        # the kernels' numerics on the compute lane (compute_lane.py) when there is a second host thread for it
        # (not for a model whose control flow reads device memory: each label switch would wait for the lane, and
        # a loop of small kernels runs slower handed over every iteration than inline)
        self.lane = lane() if mem is not None and self.use_lane and host_pool.HOST_THREADS >= 2 \
            and not prog.control_reads else None

    # -- event loop ----------------------------------------------------------------------------------
    def at(self, time: int, fn, *args) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, self.seq, fn, args))

    def run(self, t0: int) -> RunResult:
        self.res = RunResult(t0, t0)
        for t, producer, name in self.p.clobbers:
            self.report(Hazard("output-overwritten", t, producer,
                               f"task {t} ({self.p.describe(t)}) overwrites model output {name} after its producer "
                               f"task {producer} ({self.p.describe(producer)}) wrote it"))
        self.machine.bind(self.at)
        for sid, s in self.streams.items():
            s.ready = t0
            self.at(t0, self.kick, sid)
        try:
            while True:
                world = self.world
                while self.heap:
                    if world is not None:   # another rank may act first (and post this one events)
                        world.turn(self.heap[0][0])
                    time, _, fn, args = heapq.heappop(self.heap)
                    fn(time, *args)
                if world is None or not world.idle_if_held(self):
                    break
        finally:
            self.drain()
        stuck = [(sid, s.tasks[s.head]) for sid, s in sorted(self.streams.items())
                 if s.active and s.head < len(s.tasks)]
        if stuck:
            heads = "; ".join(f"stream {sid} at task {t.id} ({self.p.describe(t.id)})" for sid, t in stuck)
            raise AtcError("E30004", task="-", reason=f"deadlock: {heads} can never start")
        self.res.end = max([t0] + list(self.end.values())) + self.prof.end_graph_ns
        return self.res

    # -- scheduling ----------------------------------------------------------------------------------
    def kick(self, t: int, sid: int) -> None:
        """Start the stream's head task if it can. A kernel kicked with no other event pending on an idle
        machine runs to its end inline (Machine.run_inline), and while that stays so the stream's next tasks
        follow in this loop: the events the queue would have popped one by one, with the same times, in the
        same order, without their round trips through it."""
        s = self.streams[sid]
        while True:
            if s.busy or not s.active or s.head >= len(s.tasks):
                return
            t = max(t, s.ready)
            task = s.tasks[s.head]
            wait = HANDLERS[task.type].blocked(self, task, t) if task.type in BLOCKING_KINDS else None
            if wait is not None:
                if not s.blocked:
                    s.blocked = True
                    self.prefetch(s)
                if wait >= 0:
                    self.at(wait, self.kick, sid)
                return
            s.blocked = False
            s.busy = True
            if task.type not in KERNEL_KINDS or self.heap or not self.inline_kernels or not self.machine.idle():
                self.execute(task, t)
                return
            end = self.execute(task, t, inline=True)
            if end is None:
                return          # it went through the event queue after all (more blocks than idle cores)
            if self.heap:       # (a kernel's finish posts nothing else; kept for exactness)
                self.at(end, self.kick, sid)
                return
            self.inline_tasks += 1
            t = end             # the kick its finish would have posted, popped at once: nothing else is pending

    def prefetch(self, s: Stream) -> None:
        """The next prefetch_num SQEs past the blocked head are fetched now: keep their snapshots."""
        for task in s.tasks[s.head + 1:s.head + 1 + self.soc.prefetch_num]:
            if task.id in self.live and task.id not in self.snap:
                cur = self.live[task.id]
                self.snap[task.id] = Sqe(cur.block_dim, cur.tiling_key)

    def wake(self, t: int, key) -> None:
        for sid in self.waiting.pop(key, []):
            self.at(t, self.kick, sid)

    def drain(self) -> None:
        """Wait for the compute lane before the scheduler reads device memory; a kernel that failed on it fails
        here, named as execute() names it."""
        if self.lane is None:
            return
        try:
            self.lane.drain()
        except LaneFailure as failed:
            self.fault(failed.task, failed.error)
            raise failed.error from None

    def finish(self, t: int, task: SimTask, writes: list, kick: bool = True) -> None:
        if writes or type(writes) is Landing:
            self.land(task, writes)
        self.end[task.id] = t
        alias = self.p.region_end_alias.get(task.id)
        if alias is not None:           # a StreamSwitch branch ended: so did its region
            self.end[alias] = t
        s = self.streams[task.stream]
        s.ready, s.busy = t, False
        s.head += 1
        target = self.jump.pop(task.id, None)
        if target is not None:
            self.move(t, task, *target)
        if kick:
            self.at(t, self.kick, task.stream)

    def land(self, task: SimTask, writes: list) -> None:
        """Outputs land (at once, or in turn on the compute lane: `writes` may still be filling there)."""
        if self.lane is None:
            self._land_all(writes)
            return
        self.lane.submit(task, lambda: self._land_all(writes))

    def _land_all(self, writes: list) -> None:
        mem = self.mem
        if mem is not None and mem.tracking:
            for address, desc, _ in getattr(writes, "ranges", ()):
                mem.shadow_drop(address, address + desc.nbytes)
        for dst, arr in writes:
            self._land(dst, arr)
        for address, desc, logical, key in getattr(writes, "shadows", ()):
            mem.shadow_put(address, desc, logical, pending=True, key=key)

    def _land(self, dst, arr) -> None:
        """An output lands: `dst` is an address, or a planned output view (same bytes as a write there)."""
        if isinstance(dst, int):
            self.mem.write(dst, arr)
        elif arr.shape == dst.shape:
            np.copyto(dst, arr, casting="no")
        else:   # a kernel whose result is not its desc's shape: its bytes, as DeviceMemory.write lays them
            raw = np.asarray(arr, order="C").reshape(-1).view(np.uint8)
            flat = dst.reshape(-1).view(np.uint8)
            if raw.size > flat.size:
                raise MemoryFault(f"an output of {raw.size} bytes lands in {flat.size}")
            flat[:raw.size] = raw

    # -- control flow ------------------------------------------------------------------------------------
    def enter(self, key, task: SimTask) -> None:
        n = self.entries[key] = self.entries.get(key, 0) + 1
        if n > self.max_loops:
            what = f"label {key[1]}" if key[0] == "label" else f"stream {key[1]}"
            raise LoopLimit(f"{what} was entered {n} times, more than --max-loop-iterations={self.max_loops} "
                            f"allows: the loop does not end (or needs a higher limit)")

    def move(self, t: int, task: SimTask, sid: int, pos: int) -> None:
        """A jump: the SQ pointer of stream `sid` moves to `pos` (a label there) and, if that is another stream,
        this one stops (aclrtSwitchLabelByIndex / aclrtSwitchStream). The prefetch window does what it does at
        any jump: the SQEs fetched past the jumping task are dropped (their snapshots), fetching resumes at the
        target, so a kernel re-run by the next iteration is read from its live SQE."""
        here = self.streams[task.stream]
        for other in here.tasks[here.head:here.head + self.soc.prefetch_num]:
            self.snap.pop(other.id, None)
        dst = self.streams[sid]
        if dst is not here:
            here.head = len(here.tasks)
            here.active = False
        dst.head, dst.active = pos, True
        if dst is not here:
            dst.ready = max(dst.ready, t)
            self.at(t, self.kick, sid)

    def label_target(self, task: SimTask, label: int) -> tuple[int, int]:
        if label not in self.p.label_at:
            raise OpError(f"label {label} is set on no stream")
        self.enter(("label", label), task)
        return self.p.label_at[label]

    def record(self, task: SimTask, arrive: int, start: int, end: int, block_dim: int = 0, unit: str = "") -> TaskRecord:
        rec = TaskRecord(task.id + self.id_offset, task.stream, task.type_name or
                         tt.TASK_TYPE_NAMES.get(task.type, str(task.type)), task.op_name, task.op_type, arrive, start,
                         end, block_dim, unit)
        self.res.records.append(rec)
        return rec

    def hazard_check(self, task: SimTask, start: int) -> None:
        deps = self.p.deps.get(task.id)
        if deps is not None:
            for h in check_start(task.id, start, deps, self.end, self.p.describe):
                self.report(h)

    def report(self, h: Hazard) -> None:
        self.res.hazards.append(h)
        if not self.allow:
            raise AtcError("E30005", detail=h.detail)

    def hazard(self, kind: str, task: int, other: int, detail: str) -> None:
        self.report(Hazard(kind, task, other, detail))

    def patch_sqe(self, task: int, block_dim: int, tiling_key: int) -> None:
        """UPDATE: the kernel task's live SQE replaced (a snapshot a prefetch took keeps what it had)."""
        self.live[task] = Sqe(block_dim, tiling_key)

    # -- running a task: its type's handler, and what the handlers run kernels with ---------------------
    def execute(self, task: SimTask, t: int, inline: bool = False) -> int | None:
        """Run one task; a kernel that fails on the values it was given (the file was validated, the numbers in
        memory were not) is an E30004 naming the task, like a device exception would be."""
        try:
            self.budget.spend()
            return self._execute(task, t, inline)
        except BaseException as exc:
            self.fault(task, exc)
            raise

    def fault(self, task: SimTask, exc: BaseException) -> None:
        """Raise what a task's failure means to the user (returns when it is not one of the kernels' faults)."""
        if isinstance(exc, (OpError, MemoryFault)):
            raise AtcError("E30004", task=f"{task.id} ({self.p.describe(task.id)})", reason=str(exc)) from None
        if isinstance(exc, LoopLimit):
            raise AtcError("E30007", task=f"{task.id} ({self.p.describe(task.id)})", reason=str(exc)) from None
        if isinstance(exc, BudgetExceeded):
            hot = max(self.entries.items(), key=lambda kv: kv[1], default=None)
            where = f"; the busiest loop is {hot[0][0]} {hot[0][1]}, entered {hot[1]} times" if hot else ""
            raise AtcError("E30007", task=f"{task.id} ({self.p.describe(task.id)})", reason=f"{exc}{where}") from None
        if isinstance(exc, KERNEL_FAULTS) and not os.environ.get("ATC_PY_DEBUG"):
            raise AtcError("E30004", task=f"{task.id} ({self.p.describe(task.id)})",
                           reason=f"the kernel failed: {type(exc).__name__}: {exc}") from None

    def _execute(self, task: SimTask, t: int, inline: bool = False) -> int | None:
        """Dispatch to the task type's handler (om_run/tasks/): one lookup on the type. inline (a kernel only): run
        it to its end now and return the end (kick's inline path)."""
        try:
            handler = HANDLERS[task.type]
        except KeyError:
            raise OpError(f"task type {tt.TASK_TYPE_NAMES.get(task.type, task.type)} is not supported") from None
        return handler.execute(self, task, t, t + self.prof.sqe_dispatch_ns, inline)

    def read_inputs(self, op) -> list:
        """An op's input values from device memory at its own input addresses (None where an input is absent)."""
        descs = [desc_from_proto(d) for d in op.input_desc]
        present = [i for i, s in enumerate(op.input) if s]
        values: list = [None] * len(op.input)
        for slot, i in enumerate(present):
            values[i] = self.mem.read(op.input_i[slot], descs[slot])
        return values

    def tiling_context(self, op) -> TilingContext:
        """An op's tiling context on this run's SoC (a device tiling computes on it)."""
        return op_tiling_context(op, get_op(op.type), self.soc)

    def job_of(self, call: Call, core_type: str, block_dim: int) -> Job:
        """The machine's view of one kernel call: its largest block's cost, its bytes and address ranges."""
        if call.sink:
            cost, work = kernel_cost(call.op, get_op(call.op.type), block_dim, self.soc, self.prof,
                                     self.sink_depend.get(call.op.id))
        else:
            cost, work = call.cost, call.work
        if cost is None:
            return Job(core_type, block_dim, block_ns=call.block_ns)
        reads, writes = call.ranges
        return Job(core_type, block_dim, cost, moved=work.bytes, reads=reads, writes=writes, work=work)

    def _plan(self, call: Call) -> KernelPlan:
        """The call decoded against this device memory once (the arenas outlive executions): its input views,
        the views its outputs land in, its kernel. Every later launch replays it."""
        plan = call.plan
        if plan is None or plan.mem is not self.mem:
            plan = call.plan = plan_call(call, self.mem)
        return plan

    def kernel_outputs(self, task: SimTask, call: Call, tiling: TilingResult, direct: bool = False,
                       start: int = 0) -> list:
        """The kernel's outputs to land when it ends. direct: nothing can run before it ends (kick's inline
        path), so a kernel may write its outputs where they land now (KernelArgs.out); those need no landing.
        On the compute lane the list is filled there, before anything queued after it runs."""
        if self.mem is None:
            return []
        writes = Landing()
        where = (task.id, task.stream, start)
        if self.lane is None:
            self._launch(call, tiling, direct, writes, where)
        else:
            self.lane.submit(task, lambda: self._launch(call, tiling, direct, writes, where))
        return writes

    def _launch(self, call: Call, tiling: TilingResult, direct: bool, writes: list,
                where: tuple = (-1, 0, 0)) -> None:
        task_id, stream, start = where
        plan = self._plan(call)
        values: list = [None] * plan.n_inputs
        for i, v in plan.reads:
            values[i] = v
        for i, make, v in plan.later:   # weights past the cache's budget: made ready for this launch only
            values[i] = make(v)
        in_descs, mem = plan.in_descs, self.mem
        if mem.tracking:   # device-format inputs a kernel computed: taken as they are
            for i, addr, desc, key, device in plan.fm_reads:
                logical = mem.shadow_get(addr, desc, key) if device else None
                if logical is not None:
                    if in_descs is plan.in_descs:
                        in_descs = list(in_descs)
                    values[i], in_descs[i] = logical, desc.logical
                elif mem.pending:          # read as bytes: a pending tensor there gets them first
                    mem.materialize(addr, addr + desc.nbytes)
        shadows = getattr(writes, "shadows", None) if self.shadow_outputs else None
        if direct and mem.tracking:   # outputs written where they land, now: what was there goes
            for addr, d, _ in plan.out_keys:
                mem.shadow_drop(addr, addr + d.nbytes)
        outs = launch(plan.spec, tiling, call.attrs, call.out_descs, values, plan.outs if direct else None,
                      in_descs, keep_logical=shadows is not None)
        if self.overflow is not None:
            self.overflow.check(task_id + self.id_offset, call.op.name, call.op.type, original_names(call.op),
                                values, outs)
        if self.dumper is not None and self.dumper.wants(call.op.name, original_names(call.op)):
            self.dumper.dump(call.op.type, call.op.name, task_id + self.id_offset, stream, start // 1000,
                             original_names(call.op), values, outs, call.out_descs, call.in_descs)
        # an output that is a view of device memory is copied now: memory may change before the kernel ends
        holds = mem.holds
        if shadows is not None:
            writes.ranges = plan.out_keys
        for dst, arr, (addr, d, key) in zip(plan.outs, outs, plan.out_keys):
            if arr is dst:
                self.direct_outputs += 1
                continue
            if shadows is not None and d.format in DEVICE_FORMATS:   # returned in the framework's layout
                if arr.dtype == d.dtype and tuple(arr.shape) == tuple(d.origin_shape or ()) and not holds(arr):
                    arr.flags.writeable = False       # its readers share it; its bytes wait until needed
                    shadows.append((addr, d, arr, key))
                    continue
                arr = to_device(np.asarray(arr), d.format, d.origin_format)
            writes.append((dst, arr.astype(d.dtype, copy=holds(arr))))
