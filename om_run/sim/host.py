"""The host runtime around the device: H2D input copies, model execute, stream sync, D2H outputs; and for
multi-model oms the dynamic-shape executor — per node InferShape → Tiling → Alloc → Launch as
host costs on one thread or three pipeline threads, a stream sync + D2H copy before a tiling that needs a
value produced on the device, and a tiling cache keyed by the tiling inputs."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ir.graph import Node, TensorDesc, Value
from atc_py.om.attrs import from_attr
from atc_py.ops import get_op
from atc_py.ops.core.base import HCCL, OpError
from atc_py.ops.core.execute import launch, tiling_context
from atc_py.ops.hccl import collective_bytes, local_refusal
from atc_py.platform import load_soc

from ..load.limits import DEFAULT_DEVICE_MEMORY, DEFAULT_MAX_LOOP_ITERATIONS
from ..load.model import DeviceModel, HostModel, ModelBase, RootModel, desc_from_proto, op_attrs
from .atb import VARIABLES as ATB_VARIABLES
from .atb import AtbHost, AtbSettings
from .budget import BudgetExceeded, TaskBudget, default_task_budget
from .device import KERNEL_FAULTS, DeviceRun, TaskRecord
from .device_memory import WIDEN_CACHE_BYTES, DeviceMemory, MemoryFault, WidenBudget, load_weights
from .hazards import Hazard
from .l2 import L2Cache
from .machine import Job, Machine
from .overflow import OverflowCheck, original_names
from .profile import RuntimeProfile
from .program import Program, build_program, context_cost, plan_call

STAGES = ("InferShape+Tiling", "Alloc", "Launch")
# the host thread each stage runs on: one thread, om-run --host-threads 3's pipeline, and torch_npu's task queue
# (TASK_QUEUE_ENABLE=1: the launches on a second thread; 2: the workspace allocations too)
THREAD_LAYOUTS = {1: (0, 0, 0), 3: (0, 1, 2)}
HOST_CONTROL = ("If", "Case", "While")


@dataclass
class HostEvent:
    thread: str
    name: str
    start: int
    end: int


@dataclass
class LoopStats:
    e2e_ns: int = 0
    host_ns: int = 0
    issued_ns: int = 0    # the host's last launch: a framework's forward call returns here while the device may run on
    device_ns: int = 0
    h2d_ns: int = 0
    d2h_ns: int = 0
    syncs: int = 0
    tiling_cache_hits: int = 0
    setup_cache_hits: int = 0
    overflow: list = field(default_factory=list)     # OverflowOp, in execution order (--check-overflow)
    records: list[TaskRecord] = field(default_factory=list)
    host_events: list[HostEvent] = field(default_factory=list)
    flows: list = field(default_factory=list)
    hazards: list[Hazard] = field(default_factory=list)
    unit_busy: dict[str, tuple[float, int]] = field(default_factory=dict)   # name -> (busy core-ns, cores)
    unit_active: dict[str, int] = field(default_factory=dict)   # name -> ns with at least one of its cores busy
    dram_bytes_per_ns: float = 0.0   # the SoC's DRAM bandwidth (utilisation)

    @property
    def tasks(self) -> int:
        return len(self.records)

    def utilisation(self) -> dict[str, float]:
        """Shares of the loop's e2e time. "<unit> busy": the time the unit (AI Core, Vector Core, AICPU) ran at
        least one task — how long the engine worked, whatever its size. Then useful work over what the SoC could
        do in that time (roofline.py's peaks): cube = useful FLOPs / cube peak, vector = vector ops / vector
        peak, DRAM = bytes across the DRAM interface / its bandwidth — a small model on a large chip uses a
        sliver of these peaks even when its engines are busy."""
        e2e = self.e2e_ns or 1
        busy = {f"{name} busy": ns / e2e for name, ns in self.unit_active.items()}
        return {**busy, "cube": sum(r.roof_cube_ns for r in self.records) / e2e,
                "vector": sum(r.roof_vector_ns for r in self.records) / e2e,
                "DRAM": sum(r.dram_bytes for r in self.records) / (self.dram_bytes_per_ns or 1) / e2e}


def _copy_ns(nbytes: int, latency: int, gbps: float) -> int:
    return latency + int(nbytes / gbps)  # GB/s == bytes/ns


def _union_ns(records: list[TaskRecord]) -> int:
    total, cur_lo, cur_hi = 0, None, None
    for r in sorted(records, key=lambda r: r.start):
        if cur_hi is None or r.start > cur_hi:
            if cur_hi is not None:
                total += cur_hi - cur_lo
            cur_lo, cur_hi = r.start, r.end
        else:
            cur_hi = max(cur_hi, r.end)
    return total + (cur_hi - cur_lo if cur_hi is not None else 0)


def buffer_optimize(model: ModelBase) -> str:
    """The build's --buffer_optimize (recorded in the .om's model attributes when not l2_optimize)."""
    value = getattr(model, "attrs", {}).get("buffer_optimize", "l2_optimize")
    return value if value in ("l2_optimize", "l1_optimize", "off_optimize") else "l2_optimize"


class Simulation:
    """Runs a loaded model (static or multi-model) once per call, in simulated time, with or without numerics."""
    world = None    # one rank of several devices: its WorldBinding (world.py, set by world_run.py); None: one device

    def __init__(self, model: ModelBase, prof: RuntimeProfile | None = None, compute: bool = True,
                 allow_hazards: bool = False, tiling_cache: bool = True, host_threads: int = 1,
                 max_loop_iterations: int | None = None, widen_cache_bytes: int = WIDEN_CACHE_BYTES,
                 atb: AtbSettings | None = None, max_tasks: int | None = None, check_overflow: bool | None = None,
                 dumper=None):
        """Loads the model as a device would (load()): its programs, and with compute its device memory and
        kernel plans (fp16 weights of cube kernels widened, misaligned ones copied, within widen_cache_bytes:
        device_memory.WIDEN_CACHE_BYTES), so that the first execution costs what the later ones do. `atb`: ATB's
        host mechanisms (atb.py; None: as ATB's environment variables set them)."""
        if host_threads not in THREAD_LAYOUTS and not (isinstance(host_threads, tuple) and len(host_threads) == 3):
            raise AtcError("E30002", reason=f"--host-threads must be 1 or 3, got {host_threads}")
        self.model = model
        self.prof = prof or RuntimeProfile()
        self.compute = compute
        self.allow = allow_hazards
        self.use_cache = tiling_cache
        self.threads = host_threads
        # stage k runs on thread layout[k]; a thread is named by its stages (one thread: "host thread")
        self.layout = THREAD_LAYOUTS[host_threads] if host_threads in THREAD_LAYOUTS else tuple(host_threads)
        self.thread_names = {th: "host thread" if len(set(self.layout)) == 1 else
                             " / ".join(STAGES[k] for k in range(3) if self.layout[k] == th) for th in self.layout}
        self.soc = load_soc(model.soc_version)
        self.programs: dict[str, Program] = {}
        self.weights: dict[str, np.ndarray] = {}   # per device model, loaded once (--loop reuses them)
        self.widened: dict[str, dict] = {}         # per device model: weights made ready for kernels (fp16 widened)
        self.widen_budget = WidenBudget(widen_cache_bytes)   # ...at most this many bytes of them, all models
        self.memories: dict[str, DeviceMemory] = {}   # per device model: its arenas (kernels' plans view into them)
        self.used: set[str] = set()                   # ...those an execution has written
        self.atb = AtbHost(atb or AtbSettings.from_env())   # ATB's caches and pools, kept across executions
        # what the L2 holds outlives one execution (--loop); --buffer_optimize=off_optimize keeps nothing in it
        self.l2 = L2Cache(self.soc.l2_size, across_kernels=buffer_optimize(model) != "off_optimize")
        # bytes each input / output copy moves, when not its buffer's (a gear model: the gear's tensors, om_run/run/gears.py)
        self.transfer_bytes: tuple[list[int], list[int]] | None = None
        # inputs / outputs that stay in device memory between executions (a decode loop's KV cache): never copied
        self.resident: tuple[set[str], set[str]] = (set(), set())
        # timing only: input name -> the values a run is told though it computes nothing (a server's sequence
        # lengths: the tiling of the ops that read them depends on them, the step's cost with it)
        self.known_values: dict[str, np.ndarray] = {}
        # inputs held in device buffers only (the static input buffers of a captured graph, refilled before each
        # replay): a host tiling that reads one waits for the device and copies it back
        self.device_inputs: set[str] = set()
        self.max_loops = max_loop_iterations or DEFAULT_MAX_LOOP_ITERATIONS
        # executed tasks per execution (budget.py): the file's own tasks and ops set the default
        subs = list(getattr(model, "subs", {}).values())
        static = len(model.tasks) + len(model.ops) + sum(len(s_.ops) for s_ in subs)
        self.max_tasks = max_tasks or default_task_budget(static)
        self.dumper = dumper if compute else None    # --dump / --acl_json (dump.py)
        # overflow location: asked for (--check-overflow), or recorded by the build (atc-py --status_check=1)
        self.check_overflow = check_overflow if check_overflow is not None else \
            getattr(model, "attrs", {}).get("status_check") == "1"
        self.attrs_keys: dict[int, str] = {}     # id(OpDef) -> its attributes as the tiling cache key spells them
        self.load()

    def load(self) -> None:
        """The one-time work of a model load, done before the first execution: each static model's program and
        its calls' decoded ranges and attributes, and when computing its device memory (the weights mapped, not
        copied: om_run/load/mapped.py) and every kernel's plan (its views, its prepared weights: program.plan_call).
        What cannot be prepared (a model the program builder or a plan rejects) is left to the execution, which
        reports it as it always did."""
        m = self.model
        subs = [m] if isinstance(m, DeviceModel) else list(getattr(m, "subs", {}).values())
        for sub in subs:
            if not isinstance(sub, DeviceModel):
                continue
            try:
                prog = self.program(sub)
            except AtcError:
                continue
            mem = self.memory(sub) if self.compute else None
            for call in (c for task in prog.tasks for c in task.calls):
                try:
                    call.ranges, call.attrs   # noqa: B018  (cached properties, decoded now)
                    if mem is not None and call.plan is None:
                        call.plan = plan_call(call, mem)
                except (AtcError, MemoryFault, OpError, ValueError, KeyError, IndexError, TypeError):
                    pass

    def atb_counters(self) -> dict:
        """ATB's cache hits over every execution of this simulation, and the settings that gave them."""
        return {"setup_cache_hits": self.atb.setup_hits, "kernel_cache_hits": self.atb.kernel_hits,
                "atb_settings": {name: getattr(self.atb.settings, fld) for name, (fld, *_) in ATB_VARIABLES.items()}}

    def memory(self, m: DeviceModel) -> DeviceMemory:
        """The model's device memory, made once per simulation (kept across executions like a loaded model's):
        the feature map zeroed (its pages touched when written), the weights as load_weights gives them."""
        mem = self.memories.get(m.name)
        if mem is None:
            if m.name not in self.weights:
                try:
                    self.weights[m.name] = load_weights(m.weights, getattr(m, "weights_file", None))
                except (OSError, ValueError) as exc:   # mapping the weights: no address space, no memory
                    raise AtcError("E30001", path=m.name, reason=f"cannot map the weights "
                                                                 f"({getattr(exc, 'strerror', None) or exc})") from None
            mem = self.memories[m.name] = DeviceMemory(m.fm_base, m.memory_size, m.weight_base, self.weights[m.name],
                                                       self.widened.setdefault(m.name, {}), self.widen_budget)
        return mem

    def program(self, m: DeviceModel) -> Program:
        if m.name not in self.programs:
            try:
                self.programs[m.name] = build_program(m, self.soc, self.prof)
            except (OpError, ValueError, KeyError, IndexError, TypeError) as exc:
                raise AtcError("E30001", path=m.name, reason=f"{type(exc).__name__}: {exc}") from None
        return self.programs[m.name]

    # -- one execution -----------------------------------------------------------------------------
    def run(self, inputs: list[np.ndarray] | None, shapes: list[tuple] | None = None
            ) -> tuple[list[np.ndarray] | None, LoopStats]:
        """One execution. A dynamic-shape model (inputs with -1 dims) runs with the shapes of `inputs`, or, timing
        only, with `shapes` (om-run --dymShape)."""
        self.stats = LoopStats(dram_bytes_per_ns=self.soc.dram_bytes_per_ns)
        self.budget = TaskBudget(self.max_tasks)
        self.overflow = OverflowCheck() if self.check_overflow and self.compute else None
        self.machine = Machine(self.soc, self.prof, self.l2)
        self.device_free = 0
        self.stage_free = [0, 0, 0]
        self.host_resident: set[str] = set()
        m = self.model
        self.in_descs = self._input_descs(m, inputs, shapes)
        self.out_descs = [io.desc for io in m.outputs]
        t = self.h2d(m, inputs)
        if isinstance(m, DeviceModel):
            t = self.host("main", "ModelExecute", t, self.prof.model_execute_launch_ns)
            outs, _ = self.run_static(m, inputs, t)
        elif isinstance(m, HostModel):
            outs = self.run_dynamic(m, inputs, {i: True for i in range(len(m.inputs))}, self.in_descs)
            self.out_descs = self.last_out_descs
        else:
            outs = self.run_root(m, inputs, t)
        self.stats.issued_ns = max(self.stage_free + [t])
        t = max(self.stage_free + [self.device_free, t])
        t = self.host("main", "StreamSync", t, self.prof.stream_sync_ns, wait_from=max(self.stage_free + [0]))
        sizes = self.transfer_bytes[1] if self.transfer_bytes else [d.nbytes for d in self.out_descs]
        for io, nbytes in zip(m.outputs, sizes):
            if io.name in self.resident[1]:
                continue
            dur = _copy_ns(nbytes, self.prof.d2h_latency_ns, self.prof.d2h_gbps)
            t = self.host("main", f"D2H {io.name}", t, dur)
            self.stats.d2h_ns += dur
        s = self.stats
        s.overflow = list(self.overflow.ops) if self.overflow is not None else []
        s.e2e_ns = t
        s.device_ns = _union_ns(s.records)
        s.host_ns = sum(e.end - e.start for e in s.host_events if e.name != "wait")
        s.unit_busy = {name: (busy, n) for name, busy, n in self.machine.pools()}
        s.unit_active = self.machine.active()
        return outs, s

    def host(self, thread: str, name: str, t: int, dur: int, wait_from: int | None = None) -> int:
        if wait_from is not None and wait_from < t:
            self.stats.host_events.append(HostEvent(thread, "wait", wait_from, t))
        self.stats.host_events.append(HostEvent(thread, name, t, t + dur))
        return t + dur

    @staticmethod
    def _input_descs(m: ModelBase, inputs, shapes) -> list[TensorDesc]:
        """The inputs' descs for this execution: the arrays' shapes, the given shapes, or the model's."""
        out = []
        for k, io in enumerate(m.inputs):
            shape = np.shape(inputs[k]) if inputs is not None else shapes[k] if shapes else io.desc.shape
            if any(d < 0 for d in shape):
                raise AtcError("E30002", reason=f"input '{io.name}' has dynamic dims {list(io.desc.shape)}: give the "
                                                "inputs, or their shapes with --dymShape, to simulate it")
            out.append(TensorDesc(tuple(shape), io.desc.dtype, io.desc.format, io.desc.origin_format))
        return out

    def h2d(self, m: ModelBase, inputs) -> int:
        t = 0
        sizes = self.transfer_bytes[0] if self.transfer_bytes else [d.nbytes for d in self.in_descs]
        for io, nbytes in zip(m.inputs, sizes):
            if io.name in self.resident[0]:
                continue
            dur = _copy_ns(nbytes, self.prof.h2d_latency_ns, self.prof.h2d_gbps)
            t = self.host("main", f"H2D {io.name}", t, dur)
            self.stats.h2d_ns += dur
        self.stage_free = [t, t, t]
        return t

    def run_static(self, m: DeviceModel, inputs, launch_done: int, id_offset: int = 0):
        mem = None
        prog = self.program(m)
        if self.compute or (prog.needs_values and inputs is not None):
            # a model whose label / stream switches read device memory computes even for timing: the values
            # decide which tasks run
            mem = self.memory(m)
            if m.name in self.used:   # a later execution: the feature map zeroed again
                mem.reset()
            self.used.add(m.name)
            for io, arr in zip(m.inputs, inputs):
                mem.write(io.address, arr)
        for io in m.inputs:   # the inputs were copied into DRAM behind the L2 (ASSUMED: H2D copies bypass it)
            if io.address is not None:
                self.l2.invalidate(io.address, io.address + max(io.desc.nbytes, 1))
        run = DeviceRun(prog, self.machine, self.prof, mem, self.allow, id_offset=len(self.stats.records),
                        max_loop_iterations=self.max_loops, budget=self.budget, overflow=self.overflow,
                        dumper=self.dumper)
        run.known_values = self.known_values
        if self.world is not None:
            run.world = self.world
        res = run.run(max(launch_done, self.device_free) + self.prof.model_activate_ns)
        self.device_free = res.end
        self.stats.records += res.records
        self.stats.hazards += res.hazards
        self.stats.flows += [(k, a + run.id_offset, b + run.id_offset) for k, a, b in res.flows]
        outs = [mem.read(io.address, io.desc) for io in m.outputs] if mem is not None and self.compute else None
        return outs, res.end

    # -- multi-model om ----------------------------------------------------------------------------
    def run_root(self, m: RootModel, inputs, t: int):
        values: dict[str, np.ndarray | None] = {}
        descs: dict[str, TensorDesc] = {}
        on_host: dict[str, bool] = {}
        for op in sorted(m.ops.values(), key=lambda o: o.id):
            if op.type == "Data":
                idx = int(op.attr["index"].i)
                values[f"{op.name}:0"] = inputs[idx] if inputs is not None else self.known_values.get(op.name)
                descs[f"{op.name}:0"] = self.in_descs[idx]
                # model inputs: the host still has them, unless they live only in device buffers (a captured graph's)
                on_host[f"{op.name}:0"] = op.name not in self.device_inputs
            elif op.type == "PartitionedCall":
                sub = m.subs[op.subgraph_name[0]]
                args = [values[s] for s in op.input]
                if isinstance(sub, DeviceModel):
                    done = self.stage(2, f"ModelExecute {sub.name}", self.stage_free[2],
                                      self.prof.model_execute_launch_ns)
                    outs, _ = self.run_static(sub, args if self.compute else None, done)
                    out_descs = [io.desc for io in sub.outputs]
                else:
                    outs = self.run_dynamic(sub, args, [on_host[s] for s in op.input], [descs[s] for s in op.input])
                    out_descs = self.last_out_descs
                for i in range(len(sub.outputs)):
                    values[f"{op.name}:{i}"] = outs[i] if outs is not None else None
                    descs[f"{op.name}:{i}"] = out_descs[i]
                    on_host[f"{op.name}:{i}"] = False
            elif op.type == "NetOutput":
                self.out_descs = [descs[s] for s in op.input]
                return [values[s] for s in op.input] if self.compute else None
        raise AtcError("E30004", task="root", reason="the root graph has no NetOutput")

    def stage(self, k: int, name: str, ready: int, dur: int) -> int:
        """Run a host kernel on pipeline stage k, on its thread (stages sharing a thread run one after another)."""
        th = self.layout[k]
        mine = [j for j in range(3) if self.layout[j] == th]
        start = max([ready] + [self.stage_free[j] for j in mine])
        end = self.host(self.thread_names[th], name, start, dur)
        for j in mine:
            self.stage_free[j] = end
        return end

    def sync(self, reason: str, ready: int, nbytes: int) -> int:
        """Host waits for everything launched so far, then copies the value it needs."""
        issued = max(self.stage_free[2], ready)
        t = max(issued, self.device_free)
        t = self.host(self.thread_names[self.layout[0]], f"StreamSync ({reason})", t,
                      self.prof.stream_sync_ns, wait_from=issued)
        dur = _copy_ns(nbytes, self.prof.d2h_latency_ns, self.prof.d2h_gbps)
        t = self.host(self.thread_names[self.layout[0]], f"D2H {reason}", t, dur)
        self.stats.d2h_ns += dur
        self.stats.syncs += 1
        return t

    def run_dynamic(self, m: HostModel, inputs, input_on_host, arg_descs: list[TensorDesc] | None = None):
        """Node by node on the host; inputs take the shapes they have in this execution (`arg_descs`,
        the arrays' shapes), so a dynamic-shape model runs at whatever shape it is given."""
        self._descs, self._on_host = {}, {}
        self._values, self._consts = {}, set()
        self._handoff = self.prof.host_pipeline_handoff_ns if len(set(self.layout)) > 1 else 0
        if not self.compute and any(op.type in HOST_CONTROL for op in m.ops.values()):
            raise AtcError("E30002", reason="--no-compute cannot run a model whose dynamic control flow decides "
                                            "its work from computed values (If / While in the host executor)")
        args = [(inputs[i] if inputs is not None else None, arg_descs[i] if arg_descs is not None else None,
                 bool(input_on_host[i])) for i in range(len(input_on_host))]
        outs = self._run_graph(m, m.root_graph, args)
        self.last_out_descs = [d for _, d, _ in outs]
        return [v for v, _, _ in outs] if self.compute else None

    def _run_graph(self, m: HostModel, gname: str, args: list) -> list:
        """Run one graph of a host model node by node; args: (value, desc or None, on host) per Data index.
        Returns its outputs the same way."""
        values, descs, on_host, consts = self._values, self._descs, self._on_host, self._consts
        for op in m.graph_ops(gname):
            key = f"{op.name}:0"
            try:
                if op.type == "Data":
                    idx = int(op.attr["index"].i)
                    val, desc, host = args[idx]
                    values[key] = val
                    descs[key] = desc or (TensorDesc(tuple(np.shape(val)), desc_from_proto(op.output_desc[0]).dtype)
                                          if val is not None else desc_from_proto(op.output_desc[0]))
                    on_host[key] = host
                elif op.type == "Const":
                    d = desc_from_proto(op.output_desc[0])
                    off = op.output_desc[0].data_offset
                    if off + d.nbytes > len(m.weights):
                        raise OpError(f"constant {op.name} is outside the weights")
                    values[key] = np.frombuffer(m.weights, d.dtype, d.numel, off).reshape(d.shape).copy()
                    descs[key], on_host[key] = d, True
                    consts.add(key)
                elif op.type == "NetOutput":
                    return [(values[s], descs[s], on_host[s]) for s in op.input]
                elif op.type in HOST_CONTROL:
                    self.host_control(m, op)
                else:
                    self.budget.spend()
                    self.dynamic_node(op, values, descs, on_host, consts, self._handoff)
            except BudgetExceeded as exc:
                raise AtcError("E30007", task=f"host node {op.name} ({op.type})", reason=str(exc)) from None
            except OpError as exc:
                raise AtcError("E30004", task=f"host node {op.name} ({op.type})", reason=str(exc)) from None
            except KERNEL_FAULTS as exc:
                if os.environ.get("ATC_PY_DEBUG"):
                    raise
                raise AtcError("E30004", task=f"host node {op.name} ({op.type})",
                               reason=f"{type(exc).__name__}: {exc}") from None
        raise AtcError("E30004", task=f"graph {gname}", reason="the graph has no NetOutput")

    def _on_host_value(self, key: str, why: str):
        """A value the host decides with: a stream sync and a D2H copy first when the device produced it."""
        if not self._on_host[key]:
            t = self.sync(why, self.stage_free[0], self._descs[key].nbytes)
            self.stage_free = [max(x, t) for x in self.stage_free]
            self._on_host[key] = True
        return self._values[key]

    def host_control(self, m: HostModel, op) -> None:
        """If / Case / While in the host executor: the predicate comes to the host (sync + D2H, counted), then
        the chosen branch or each iteration's cond and body run node by node."""
        names = list(op.subgraph_name)
        ir = from_attr(op.attr["_subgraph_ir_names"]) if "_subgraph_ir_names" in op.attr else []
        ir = ir if isinstance(ir, list) and len(ir) == len(names) else names
        args = [(self._values[s], self._descs[s], self._on_host[s]) for s in op.input]
        if op.type in ("If", "Case"):
            pred = np.asarray(self._on_host_value(op.input[0], f"{op.name} predicate")).reshape(-1)
            if op.type == "If":
                want = "then_branch" if pred.size and bool(pred[0]) else "else_branch"
                branch = names[ir.index(want)] if want in ir else names[0 if want == "then_branch" else 1]
            else:
                k = int(pred[0]) if pred.size else -1
                branch = names[k if 0 <= k < len(names) else len(names) - 1]
            outs = self._run_graph(m, branch, args[1:])
        else:
            cond_g, body_g = (names[ir.index("cond")], names[ir.index("body")]) if "cond" in ir else names[:2]
            n_scan = int(from_attr(op.attr["_scan_output_num"])) if "_scan_output_num" in op.attr else 0
            carried, scans, it = args, [[] for _ in range(n_scan)], 0
            while True:
                c = self._run_graph(m, cond_g, carried)
                key = f"{op.name}/cond:{it}"
                self._values[key], self._descs[key], self._on_host[key] = c[0]
                if not bool(np.asarray(self._on_host_value(key, f"{op.name} loop condition")).reshape(-1)[0]):
                    break
                it += 1
                try:
                    self.budget.spend()
                except BudgetExceeded as exc:
                    raise AtcError("E30007", task=f"host node {op.name} (While)", reason=str(exc)) from None
                if it > self.max_loops:
                    raise AtcError("E30007", task=f"host node {op.name} (While)",
                                   reason=f"the loop ran {it} iterations, more than --max-loop-iterations="
                                          f"{self.max_loops} allows: it does not end (or needs a higher limit)")
                outs = self._run_graph(m, body_g, carried)
                carried = outs[:len(args)]
                for k in range(n_scan):
                    scans[k].append(outs[len(args) + k][0])
            outs = list(carried)
            for k, rows in enumerate(scans):
                d = desc_from_proto(op.output_desc[len(args) + k])
                arr = np.stack(rows) if rows else np.zeros((0,) + tuple(max(x, 0) for x in d.shape[1:]), d.dtype)
                outs.append((arr, TensorDesc(arr.shape, d.dtype), False))
        for k, (val, desc, host) in enumerate(outs):
            key = f"{op.name}:{k}"
            self._values[key] = val
            self._descs[key] = desc if desc is not None and desc.known else TensorDesc(np.shape(val), desc.dtype)
            self._on_host[key] = host

    def fetch_to_host(self, op, idx: list[int], why: str, ready: int) -> int:
        """Stream sync + D2H of the inputs `idx` of `op` that live on the device."""
        need = [i for i in idx if not self._on_host[op.input[i]]]
        if not need:
            return ready
        ready = self.sync(f"{op.name} {why}", ready, sum(self._descs[op.input[i]].nbytes for i in need))
        for i in need:
            self._on_host[op.input[i]] = True
        return ready

    def collective(self, op, spec, tiling, node: Node, args, out_descs, arrive: int, start: int):
        """A collective the host executor launched, from `start` on the device: the world's rendezvous when om-run
        runs several devices (world.host_collective(self, op, args, in_descs, out_descs, start) -> (start, end, outputs)),
        else a group of one rank (the op's own kernel, HCCL's local copy's time: hccl_local_ns + the bytes at
        memcpy_gbps). Returns (its record, its outputs)."""
        world = getattr(self, "world", None)
        if world is not None:   # (start, end, outputs): it starts when the last rank of its group launched it
            start, end, outs = world.host_collective(self, op, args, [v.desc if v is not None else None
                                                                      for v in node.inputs], out_descs, start)
            if outs is None:
                outs = [None] * len(out_descs)
        else:
            refusal = local_refusal(op.type, op.name, node.attrs)
            if refusal:
                raise OpError(refusal)
            in_descs = [v.desc if v is not None else None for v in node.inputs]
            end = start + self.prof.hccl_local_ns + int(collective_bytes(op.type, node.attrs, in_descs)
                                                        / self.prof.memcpy_gbps)
            outs = launch(spec, tiling, node.attrs, out_descs, args, in_descs=in_descs) if self.compute \
                else [None] * len(out_descs)
        self.device_free = max(self.device_free, end)
        rec = TaskRecord(len(self.stats.records), 0, "HCCL (host launched)", op.name, op.type, arrive, start, end, 1,
                         "HCCL")
        self.stats.records.append(rec)
        return rec, outs

    def dynamic_node(self, op, values, descs, on_host, consts, handoff: int) -> None:
        spec = get_op(op.type)
        prof = self.prof
        args = [values.get(s) if s else None for s in op.input]
        node = Node(op.name, op.type, op_attrs(op))
        node.inputs = []
        ready = self.stage_free[0]
        infer_idx = [i for i in spec.infer_depend if i < len(op.input) and op.input[i]]
        ready = self.fetch_to_host(op, infer_idx, "shape input", ready)
        for k, s in enumerate(op.input):
            if not s:
                node.inputs.append(None)
                continue
            known_value = s in consts or k in infer_idx
            if k in infer_idx and values.get(s) is None:
                raise OpError(f"input {k} decides the output shape; its value is needed (run with compute)")
            producer = Node(s, "Const" if known_value else "Data")
            v = Value(s, descs[s], producer)
            v.data = values[s] if known_value else None
            node.inputs.append(v)
        out_descs = spec.infer(node)                                                  # InferShape
        if spec.shape_from_compute and not self.compute:
            raise OpError("its output shape comes from its kernel's result (run with compute)")
        if any(not d.known for d in out_descs) and not spec.shape_from_compute:
            raise OpError(f"output shape {[list(d.shape) for d in out_descs]} is still unknown at run time")
        memory = self.soc.memory_size or DEFAULT_DEVICE_MEMORY
        for d in out_descs:   # a run-time value decided this shape: it must fit the device before it is allocated
            if d.known and d.nbytes > memory:
                raise OpError(f"output shape {list(d.shape)} ({d.dtype}) needs {d.nbytes} bytes, more than the "
                              f"device's {memory}")
        depend_idx = [i for i in spec.tiling_depend if i < len(op.input) and op.input[i]]
        ready = self.fetch_to_host(op, depend_idx, "tiling input", ready)            # value-dependent tiling
        ctx = tiling_context(spec, [v.desc if v is not None else None for v in node.inputs], out_descs,
                             node.attrs, self.soc)
        if self.compute or all(args[i] is not None for i in depend_idx):   # timing only: values it was told
            ctx.depend_values = {i: args[i] for i in depend_idx}
        else:
            ctx.depend_values = spec.placeholder_values(ctx)
        tiling = spec.tiling(ctx)                                                     # Tiling
        if spec.no_task:   # a view (Reshape, Squeeze, ...): InferShape on the host, no kernel; it shares its input's bytes
            self.stage(0, f"InferShape {op.name}", ready, prof.host_infershape_ns + prof.framework_dispatch_ns)
            outs = launch(spec, tiling, node.attrs, out_descs, args,
                          in_descs=[v.desc if v is not None else None for v in node.inputs]) \
                if self.compute else [None] * len(out_descs)
            for i, (d, arr) in enumerate(zip(out_descs, outs)):
                values[f"{op.name}:{i}"] = arr
                descs[f"{op.name}:{i}"] = d
                on_host[f"{op.name}:{i}"] = bool(on_host.get(op.input[0], False))   # where its input is
            return
        attrs_key = self.attrs_keys.get(id(op))
        if attrs_key is None:   # an op's attributes never change: spelled once (graph attributes are long)
            attrs_key = self.attrs_keys[id(op)] = repr(sorted(node.attrs.items()))
        cache_key = (op.type, tuple((d.shape, d.dtype) for d in ctx.inputs if d is not None), attrs_key,
                     hashlib.sha256(b"".join(np.asarray(v, order="C").tobytes() for _, v in sorted(ctx.depend_values.items()))).hexdigest())
        atb = self.atb
        setup_hit = atb.setup(op.name, (cache_key[1], attrs_key))        # same shapes and params as last time
        hit = atb.kernel_cache(op.name, op.type, cache_key, self.use_cache)
        self.stats.setup_cache_hits += setup_hit
        self.stats.tiling_cache_hits += hit
        a_cost = (prof.host_tiling_cache_hit_ns if hit else prof.tiling_ns(op.type)) + prof.framework_dispatch_ns
        if not setup_hit:   # the kernel graph built (a runner taken from its pool or created) and InferShape run
            a_cost += prof.host_infershape_ns + prof.atb_setup_ns
            a_cost += 0 if atb.runner_pooled(op.type) else prof.atb_runner_create_ns
        a_end = self.stage(0, f"{'Setup+' if not setup_hit else ''}InferShape+Tiling {op.name}", ready, a_cost)
        if atb.settings.workspace_global:   # one workspace for every operation: allocated only when it grows
            alloc = prof.host_alloc_ns if atb.workspace_grows(sum(d.nbytes for d in out_descs if d.known)) else 0
        else:
            alloc = prof.host_alloc_ns
        b_end = self.stage(1, f"Alloc {op.name}", a_end + handoff, alloc)
        launch_ns = prof.host_launch_ns
        ready_c = b_end + handoff
        if not atb.settings.launch_with_tiling:   # the tiling data's own copy, into the next free ring block
            launch_ns += prof.atb_tiling_copy_ns
            ready_c = max(ready_c, atb.tiling_block_free_at())
        c_end = self.stage(2, f"Launch {op.name}", ready_c, launch_ns)
        # the kernel on the device
        arrive = c_end + prof.kernel_launch_latency_ns
        start = max(arrive, self.device_free) + prof.sqe_dispatch_ns + prof.kernel_start_ns
        if spec.engine == HCCL:
            rec, outs = self.collective(op, spec, tiling, node, args, out_descs, arrive, start)
            s = rec.start
        else:
            cost, work = context_cost(spec, ctx, tiling.block_dim, prof)
            # its buffers come from the host executor's allocator, not the device model's plan: the L2 is not
            # consulted (every byte from DRAM)
            job = self.machine.run_alone(start, Job(spec.core_type, tiling.block_dim, cost, moved=work.bytes,
                                                    work=work))
            s, e = job.start, job.end
            self.device_free = e
            if not atb.settings.launch_with_tiling:
                atb.tiling_block_used(s, e)
            rec = TaskRecord(len(self.stats.records), 0, "KERNEL (host launched)", op.name, op.type, arrive, s, e,
                             tiling.block_dim, spec.core_type, self.soc, [work], [job.traffic])
            self.stats.records.append(rec)
            outs = launch(spec, tiling, node.attrs, out_descs, args,
                          in_descs=[v.desc if v is not None else None for v in node.inputs]) \
                if self.compute else [None] * len(out_descs)
        if self.overflow is not None:
            self.overflow.check(rec.task, op.name, op.type, original_names(op), args, outs)
        if self.dumper is not None and self.dumper.wants(op.name, original_names(op)):
            self.dumper.dump(op.type, op.name, rec.task, 0, s // 1000, original_names(op), args, outs, out_descs,
                             [v.desc if v is not None else None for v in node.inputs])
        if spec.shape_from_compute:   # the host reads the real output shapes back before the next InferShape
            self.stage_free[0] = self.sync(f"{op.name} output shape", c_end, 8 * sum(len(o.shape) for o in outs))
            out_descs = [TensorDesc(tuple(o.shape), d.dtype, d.format, d.origin_format) for d, o in zip(out_descs, outs)]
        for i, (d, arr) in enumerate(zip(out_descs, outs)):
            values[f"{op.name}:{i}"] = arr
            descs[f"{op.name}:{i}"] = d
            on_host[f"{op.name}:{i}"] = False

