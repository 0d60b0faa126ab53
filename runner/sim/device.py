"""One execution of a static model on the simulated device: a discrete-event task scheduler.

Streams are SQ FIFOs the model execute activates; a task starts when it is at its stream's head, its
stream's previous task has finished and its dependencies hold (EVENT_WAIT: the event is recorded and the
notify has arrived; SUPER_KERNEL: its sink members' tiling tasks have notified). While a head is blocked
the scheduler has already fetched the next `prefetch_num` SQEs: it keeps snapshots of them, and a kernel
later run from a snapshot taken before its UPDATE patched the live SQE runs with block_dim 0xFFFFFFFF — a
prefetch hazard. Kernels spread their blocks over the cores (cores.py); AICPU tasks take one AICPU core.
Numerics run in simulated order: a kernel reads its inputs when it starts and its outputs land when it
ends, so a missing event or a broken memory plan corrupts results — and is reported as a hazard.
"""
from __future__ import annotations

import heapq
import os
from dataclasses import dataclass, field

from atc_py.engines import task_types as tt
from atc_py.engines.aicore import TILING_SINK_BLOCK_DIM
from atc_py.errors import AtcError
from atc_py.ops import get_op
from atc_py.ops.base import OpError, TilingResult
from atc_py.ops.execute import launch, tiling_context

from ..device.memory import DeviceMemory, MemoryFault
from ..loader import desc_from_proto
from .cores import Cores
from .hazards import Hazard, check_start
from .profile import RuntimeProfile
from .program import Call, Program, SimTask, Sqe, _in_descs, block_ns, op_attrs

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


@dataclass
class Stream:
    tasks: list[SimTask]
    head: int = 0
    ready: int = 0
    busy: bool = False
    blocked: bool = False


@dataclass
class RunResult:
    start: int
    end: int
    records: list[TaskRecord] = field(default_factory=list)
    hazards: list[Hazard] = field(default_factory=list)
    flows: list[tuple[str, int, int]] = field(default_factory=list)   # (kind, from task, to task)


class DeviceRun:
    def __init__(self, prog: Program, cores: Cores, prof: RuntimeProfile, mem: DeviceMemory | None,
                 allow_hazards: bool = False, id_offset: int = 0):
        self.p, self.cores, self.prof, self.mem = prog, cores, prof, mem
        self.soc = cores.soc
        self.allow = allow_hazards
        self.heap: list = []
        self.seq = 0
        self.events: dict[int, int] = {}
        self.recorder_of_event: dict[int, int] = {}
        self.waiting: dict[int, list[int]] = {}
        self.notify: dict[int, int] = {}           # sink op id -> time its device tiling notified
        self.sink_ctx: dict[int, TilingResult] = {}
        self.sink_depend: dict[int, dict] = {}
        self.live: dict[int, Sqe] = {}
        self.snap: dict[int, Sqe] = {}
        self.end: dict[int, int] = {}
        self.res: RunResult | None = None
        self.id_offset = id_offset
        self.live.update(prog.initial_sqes)   # Sqes are replaced (UPDATE), never changed: shared
        self.streams: dict[int, Stream] = {sid: Stream(tasks) for sid, tasks in prog.stream_tasks.items()}

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
        for sid, s in self.streams.items():
            s.ready = t0
            self.at(t0, self.kick, sid)
        while self.heap:
            time, _, fn, args = heapq.heappop(self.heap)
            fn(time, *args)
        stuck = [(sid, s.tasks[s.head]) for sid, s in sorted(self.streams.items()) if s.head < len(s.tasks)]
        if stuck:
            heads = "; ".join(f"stream {sid} at task {t.id} ({self.p.describe(t.id)})" for sid, t in stuck)
            raise AtcError("E30004", task="-", reason=f"deadlock: {heads} can never start")
        self.res.end = max([t0] + list(self.end.values())) + self.prof.end_graph_ns
        return self.res

    # -- scheduling ----------------------------------------------------------------------------------
    def blocked_reason(self, task: SimTask, t: int) -> int | None:
        """None if the task can start at t, else the time it may retry (or -1: wait for a wake-up)."""
        if task.type == tt.EVENT_WAIT:
            ev = self.events.get(task.event)
            if ev is None:
                self.waiting.setdefault(task.event, []).append(task.stream)
                return -1
            return None if ev <= t else ev
        if task.type == tt.SUPER_KERNEL:
            times = [self.notify.get(op) for op in task.sk_waits]
            if any(x is None for x in times):
                for op in task.sk_waits:
                    self.waiting.setdefault(("notify", op), []).append(task.stream)
                return -1
            latest = max(times, default=t)
            return None if latest <= t else latest
        return None

    def kick(self, t: int, sid: int) -> None:
        s = self.streams[sid]
        if s.busy or s.head >= len(s.tasks):
            return
        t = max(t, s.ready)
        task = s.tasks[s.head]
        wait = self.blocked_reason(task, t)
        if wait is not None:
            if not s.blocked:
                s.blocked = True
                self.prefetch(s)
            if wait >= 0:
                self.at(wait, self.kick, sid)
            return
        s.blocked = False
        s.busy = True
        self.execute(task, t)

    def prefetch(self, s: Stream) -> None:
        """The next prefetch_num SQEs past the blocked head are fetched now: keep their snapshots."""
        for task in s.tasks[s.head + 1:s.head + 1 + self.soc.prefetch_num]:
            if task.id in self.live and task.id not in self.snap:
                cur = self.live[task.id]
                self.snap[task.id] = Sqe(cur.block_dim, cur.tiling_key)

    def wake(self, t: int, key) -> None:
        for sid in self.waiting.pop(key, []):
            self.at(t, self.kick, sid)

    def finish(self, t: int, task: SimTask, writes: list) -> None:
        for addr, arr in writes:
            self.mem.write(addr, arr)
        self.end[task.id] = t
        s = self.streams[task.stream]
        s.ready, s.busy = t, False
        s.head += 1
        self.at(t, self.kick, task.stream)

    def record(self, task: SimTask, arrive: int, start: int, end: int, block_dim: int = 0, unit: str = "") -> None:
        self.res.records.append(TaskRecord(task.id + self.id_offset, task.stream, task.type_name or
                                           tt.TASK_TYPE_NAMES.get(task.type, str(task.type)), task.op_name,
                                           task.op_type, arrive, start, end, block_dim, unit))

    def hazard_check(self, task: SimTask, start: int) -> None:
        deps = self.p.deps.get(task.id)
        if deps is not None:
            for h in check_start(task.id, start, deps, self.end, self.p.describe):
                self.report(h)

    def report(self, h: Hazard) -> None:
        self.res.hazards.append(h)
        if not self.allow:
            raise AtcError("E30005", detail=h.detail)

    # -- task kinds ----------------------------------------------------------------------------------
    def execute(self, task: SimTask, t: int) -> None:
        """Run one task; a kernel that fails on the values it was given (the file was validated, the numbers in
        memory were not) is an E30004 naming the task, like a device exception would be."""
        try:
            self._execute(task, t)
        except (OpError, MemoryFault) as exc:
            raise AtcError("E30004", task=f"{task.id} ({self.p.describe(task.id)})", reason=str(exc)) from None
        except KERNEL_FAULTS as exc:
            if os.environ.get("ATC_PY_DEBUG"):
                raise
            raise AtcError("E30004", task=f"{task.id} ({self.p.describe(task.id)})",
                           reason=f"the kernel failed: {type(exc).__name__}: {exc}") from None

    def _execute(self, task: SimTask, t: int) -> None:
        prof = self.prof
        start = t + prof.sqe_dispatch_ns
        kind = task.type
        if kind == tt.EVENT_WAIT:
            self.events.pop(task.event, None)           # wait + reset
            self.res.flows.append(("event", self.recorder_of_event.get(task.event, -1), task.id))
            self.record(task, t, start, start)
            self.at(start, self.finish, task, [])
        elif kind == tt.EVENT_RECORD:
            end = start + prof.event_record_ns
            self.record(task, t, start, end)
            self.recorder_of_event[task.event] = task.id
            self.events[task.event] = end + prof.event_notify_ns
            self.at(end + prof.event_notify_ns, self.wake, task.event)
            self.at(end, self.finish, task, [])
        elif kind == tt.NOP:
            self.record(task, t, start, start + prof.nop_ns)
            self.at(start + prof.nop_ns, self.finish, task, [])
        elif kind == tt.UPDATE:
            end = start + prof.update_ns
            res = self.sink_ctx.get(task.target_op)
            if res is None:
                raise OpError(f"UPDATE before the tiling task of op {task.target_op} finished")
            target = self.p.kernel_task_of_op.get(task.target_op)
            if target is None:
                raise OpError(f"UPDATE finds no kernel task of op {task.target_op}")
            self.live[target] = Sqe(res.block_dim, res.tiling_key)
            self.res.flows.append(("update", task.id, target))
            self.record(task, t, start, end)
            self.at(end, self.finish, task, [])
        elif kind == tt.PREPROCESS_KERNEL:
            self.device_tiling(task, t, start)
        elif kind in (tt.KERNEL, tt.ALL_KERNEL, tt.FFTS_PLUS_TASK):
            self.kernel(task, t, start)
        elif kind == tt.SUPER_KERNEL:
            self.super_kernel(task, t, start)
        else:
            raise OpError(f"task type {tt.TASK_TYPE_NAMES.get(kind, kind)} is not supported")

    def _read_inputs(self, op, addrs: dict | None) -> list:
        descs = [desc_from_proto(d) for d in op.input_desc]
        present = [i for i, s in enumerate(op.input) if s]
        values: list = [None] * len(op.input)
        for slot, i in enumerate(present):
            addr = addrs.get(f"i{i}") if addrs is not None else op.input_i[slot]
            if addr is not None:
                values[i] = self.mem.read(addr, descs[slot])
        return values

    def device_tiling(self, task: SimTask, t: int, start: int) -> None:
        op, spec = task.op, get_op(task.op.type)
        s, e = self.cores.run_aicpu(start, self.prof.aicpu_launch_ns + self.prof.aicpu_tiling_ns)
        self.hazard_check(task, s)
        ctx = tiling_context(spec, _in_descs(op), [desc_from_proto(d) for d in op.output_desc], op_attrs(op), self.soc)
        if self.mem is not None:
            values = self._read_inputs(op, None)
            ctx.depend_values = {i: values[i] for i in spec.tiling_depend if i < len(values) and values[i] is not None}
        else:  # timing only: the values are not computed; tile for the op's compile-time worst case
            ctx.depend_values = spec.placeholder_values(ctx)
        res = spec.tiling(ctx)
        self.record(task, t, s, e, 1, "AICPU")

        def done(time):
            self.sink_ctx[op.id] = res
            self.sink_depend[op.id] = ctx.depend_values
            self.notify[op.id] = time
            self.wake(time, ("notify", op.id))
        self.at(e, lambda time: done(time))
        self.at(e, self.finish, task, [])

    def _sink_block_ns(self, call: Call, block_dim: int) -> int:
        spec = get_op(call.op.type)
        return block_ns(call.op, spec, block_dim, self.soc, self.prof, self.sink_depend.get(call.op.id))

    def _compute(self, call: Call, tiling: TilingResult) -> list:
        if self.mem is None:
            return []
        values: list = [None] * len(call.op.input)
        widen = call.widens_fp16_weights
        for i, addr, desc in call.reads:
            if addr is None:
                continue
            if widen and desc.dtype == "float16" and self.mem.is_weight(addr):
                values[i] = self.mem.widened_weight(addr, desc)   # exact; the cube kernel widens it anyway
            else:
                values[i] = self.mem.view(addr, desc)
        outs = launch(get_op(call.op.type), tiling, call.attrs, call.out_descs, values)
        # an output that is a view of device memory is copied now: memory may change before the kernel ends
        return [(addr, arr.astype(d.dtype, copy=self.mem.holds(arr)))
                for addr, arr, d in zip(call.out_addrs, outs, call.out_descs)]

    def kernel(self, task: SimTask, t: int, start: int) -> None:
        call = task.calls[0]
        sqe = self.snap.pop(task.id, None) or self.live[task.id]
        stale = sqe.block_dim == TILING_SINK_BLOCK_DIM
        if stale:
            upd = self.p.update_of_op.get(call.op.id, -1)
            self.report(Hazard("prefetch", task.id, upd,
                               f"task {task.id} ({self.p.describe(task.id)}) ran from an SQE prefetched before UPDATE "
                               f"task {upd} patched it: block_dim 0xFFFFFFFF (too few NOPs before the kernel?)"))
            sqe = self.live[task.id]  # --allow-hazards: time it as patched, but its outputs are not written
        bd = sqe.block_dim
        dur = self._sink_block_ns(call, bd) if call.sink else call.block_ns
        s, e = self.cores.run_kernel(start + self.prof.kernel_start_ns, task.core_type, bd, dur)
        self.hazard_check(task, s)
        writes = []
        if not stale:
            if call.sink and call.op.id not in self.sink_ctx:
                raise OpError(f"the device tiling of {call.op.name} has not run before its kernel")
            tiling_data = self.sink_ctx[call.op.id].tiling_data if call.sink else call.tiling_data
            writes = self._compute(call, TilingResult(bd, sqe.tiling_key, tiling_data))
        self.record(task, t, s, e, bd, task.core_type)
        self.at(e, self.finish, task, writes)

    def super_kernel(self, task: SimTask, t: int, start: int) -> None:
        cur = start + self.prof.kernel_start_ns
        first = None
        self.hazard_check(task, cur)
        for call in task.calls:
            if call.sink:
                if call.op.id not in self.sink_ctx:
                    raise OpError(f"the device tiling of {call.op.name} has not run before the SUPER_KERNEL")
                res = self.sink_ctx[call.op.id]
                tiling, bd = res, res.block_dim
                dur = self._sink_block_ns(call, bd)
            else:
                tiling, bd, dur = TilingResult(call.block_dim, call.tiling_key, call.tiling_data), call.block_dim, call.block_ns
            s, cur = self.cores.run_kernel(cur, get_op(call.op.type).core_type, bd, dur)
            first = s if first is None else first
            for addr, arr in self._compute(call, tiling):  # members run back to back inside the kernel
                self.mem.write(addr, arr)
        self.record(task, t, first, cur, max(c.block_dim for c in task.calls), task.core_type)
        self.at(cur, self.finish, task, [])

