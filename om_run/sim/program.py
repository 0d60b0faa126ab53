"""A DeviceModel decoded once for simulation: per task its kind, op, args addresses, static tiling, the
memory it reads and writes, and (for ordinary kernels) the cost of its largest block and its launch's work.
Each task is decoded by its type's handler (om_run/tasks/) against a Decoder; the rest here is what all of
them share: kernel calls and their cost, the hazard analysis, control-flow regions."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from atc_py.engines.args import SINK_TILING_DATA, input_item, output_item, workspace_item
from atc_py.ir.formats import DEVICE_FORMATS, from_device
from atc_py.om import task_types as tt
from atc_py.om.attrs import from_attr
from atc_py.ops import get_op
from atc_py.ops.core.base import AIC, OpError, Work
from atc_py.ops.core.cost import BlockCost, work_cost
from atc_py.ops.core.execute import tiling_context
from atc_py.platform.soc import SocSpec

from ..load.model import DeviceModel, desc_from_proto, op_attrs
from ..tasks.table import (
    HANDLERS,
    KERNEL_KINDS,
    LABEL_SET_KINDS,
    MEMORY_READ_KINDS,
    STREAM_START_KINDS,
    VALUE_BRANCH_KINDS,
)
from .device_memory import aligned, shadow_key, widen
from .hazards import Access, Deps, analyse
from .l2 import merge
from .profile import RuntimeProfile


@dataclass
class Call:
    """One kernel invocation: an op with the addresses its args give it. The decoded descs, attrs and input
    addresses are cached on first use: a Program runs many times (--loop) and decoding the protobufs
    again per run cost more than most kernels."""
    op: object
    addrs: dict[str, int]
    tiling_data: bytes
    sink: bool
    block_dim: int = 1
    tiling_key: int = 0
    block_ns: int = 0          # a fixed per-block duration without memory traffic (hand-built task lists)
    cost: BlockCost | None = None   # static tiling: the largest block's cost (None: priced at run time)
    work: Work | None = None        # static tiling: the launch's total work
    plan: KernelPlan | None = None  # decoded against the device memory at its first launch (device.py)

    @cached_property
    def ranges(self) -> tuple[list, list]:
        """(read, written) device address ranges of its args, each merged and sorted (memory.merge): inputs;
        outputs and workspaces."""
        acc = call_ranges(self)
        return merge((lo, hi) for lo, hi, w in acc if not w), merge((lo, hi) for lo, hi, w in acc if w)

    @cached_property
    def attrs(self) -> dict:
        return op_attrs(self.op)

    @cached_property
    def out_descs(self) -> list:
        return [desc_from_proto(d) for d in self.op.output_desc]

    @cached_property
    def in_descs(self) -> list:
        """Per input slot its desc (None where absent): a device-format operand is converted for the kernel."""
        return _in_descs(self.op)

    @cached_property
    def reads(self) -> list[tuple[int, int | None, object]]:
        """(input index, address or None, desc) of each present input, addresses from the args."""
        descs = [desc_from_proto(d) for d in self.op.input_desc]
        present = [i for i, s in enumerate(self.op.input) if s]
        return [(i, self.addrs.get(input_item(i)), descs[slot]) for slot, i in enumerate(present)]

    @cached_property
    def widens_fp16_weights(self) -> bool:
        """Cube kernels (Conv2D, MatMul, ...) compute in fp32 from fp16 inputs: their fp16 weights can be handed
        over already widened (DeviceMemory.widened_weight), which changes no bit of the result."""
        spec = get_op(self.op.type)
        return spec is not None and spec.core_type == AIC

    @cached_property
    def out_addrs(self) -> list[int]:
        missing = [i for i in range(len(self.op.output_desc)) if output_item(i) not in self.addrs]
        if missing:
            raise OpError(f"args have no address for output {missing[0]}")
        return [self.addrs[output_item(i)] for i in range(len(self.op.output_desc))]


@dataclass(slots=True)
class KernelPlan:
    """A kernel call decoded once against one device memory (DeviceRun._plan): replayed by every launch."""
    mem: object
    spec: object
    reads: list          # (input index, read-only view or prepared weight: widened, aligned)
    n_inputs: int
    outs: list           # writable views the outputs land in
    later: list = field(default_factory=list)   # (input index, make, weight view): values[i] = make(view) per launch
    in_descs: list = field(default_factory=list)  # the kernel's input descs (a weight converted here: its logical)
    # (input index, address, desc, shadow key, device format?) of its feature-map reads and (address, desc, shadow
    # key) of its outputs: what DeviceMemory.shadow is asked and told each launch, worked out once
    fm_reads: list = field(default_factory=list)
    out_keys: list = field(default_factory=list)


def plan_call(call: Call, mem) -> KernelPlan:
    """A call decoded against one device memory (bounds checked now): its input views and the views its outputs
    land in. A weight the kernel cannot take as a view of the weights — fp16 for a cube kernel (widened: exact,
    the cube widens it anyway), or misaligned for its dtype in the mapped file — is made once while the
    memory's budget lasts (DeviceMemory.cached_weight), else by each launch (plan.later: one kernel's weights
    at a time, no copy of the model kept)."""
    cube = call.widens_fp16_weights
    reads, later = [], []
    in_descs = list(call.in_descs)
    for i, addr, desc in call.reads:
        if addr is None:
            continue
        view = mem.view(addr, desc)                      # bounds checked; no page of it is touched
        if mem.is_weight(addr):
            wide = cube and desc.dtype == "float16"
            device = desc.format in DEVICE_FORMATS       # a FRACTAL_Z filter: converted once, as the kernel takes it
            if wide or device or not view.flags.aligned:
                make = _logical_weight(desc, wide) if device else (widen if wide else aligned)
                arr = mem.cached_weight(addr, desc, wide, make)
                if device and i < len(in_descs):
                    in_descs[i] = desc.logical
                if arr is None:
                    later.append((i, make, view))
                else:
                    reads.append((i, arr))
                continue
        reads.append((i, view))
    outs = [mem.out_view(addr, d) for addr, d in zip(call.out_addrs, call.out_descs)]
    fm_reads = [(i, addr, desc, shadow_key(desc), desc.format in DEVICE_FORMATS) for i, addr, desc in call.reads
                if addr is not None and not mem.is_weight(addr)]
    out_keys = [(addr, d, shadow_key(d)) for addr, d in zip(call.out_addrs, call.out_descs)]
    return KernelPlan(mem, get_op(call.op.type), reads, len(call.op.input), outs, later, in_descs, fm_reads, out_keys)


def _logical_weight(desc, wide: bool):
    """A device-format weight in the framework's layout (and widened for a cube kernel): made once per model."""
    def make(view: np.ndarray) -> np.ndarray:
        arr = from_device(np.asarray(view), desc.format, desc.origin_shape, desc.origin_format)
        return widen(arr) if wide else aligned(arr)
    return make


@dataclass
class Sqe:
    """The part of a kernel's SQE the scheduler reads: what the block count and tiling key say."""
    block_dim: int
    tiling_key: int


@dataclass
class SimTask:
    id: int
    type: int
    stream: int
    op: object | None = None
    calls: list[Call] = field(default_factory=list)
    event: int = -1
    target_op: int = -1        # UPDATE: the op whose kernel it patches
    sk_waits: list[int] = field(default_factory=list)   # SUPER_KERNEL: sink members' op ids
    core_type: str = "AIV"
    name: str = ""
    type_name: str = ""
    op_name: str = ""
    op_type: str = ""
    label: int = -1            # LABEL_SET / LABEL_GOTO_EX: its label
    labels: list[int] = field(default_factory=list)   # LABEL_SWITCH_BY_INDEX: label per index
    addrs: list[int] = field(default_factory=list)    # index / compared values / memcpy [src, dst]
    count: int = 0             # MEMCPY_ASYNC bytes; STREAM_SWITCH data width; HCCL: the collective's bytes per rank
    target: int = -1           # STREAM_ACTIVE / STREAM_SWITCH: the stream it starts
    cond: int = 0              # STREAM_SWITCH: rtCondition_t


def _in_descs(op) -> list:
    descs = iter(desc_from_proto(d) for d in op.input_desc)
    return [next(descs) if s else None for s in op.input]


def op_tiling_context(op, spec, soc: SocSpec, depend=None):
    """An op's tiling context from its descriptors and attributes (a device-format operand: logical)."""
    return tiling_context(spec, _in_descs(op), [desc_from_proto(d) for d in op.output_desc], op_attrs(op), soc,
                          depend or {})


def kernel_cost(op, spec, block_dim: int, soc: SocSpec, prof: RuntimeProfile, depend=None) -> tuple[BlockCost, Work]:
    """The cost of the largest block when the op runs with `block_dim` blocks, and the launch's total work."""
    return context_cost(spec, op_tiling_context(op, spec, soc, depend), block_dim, prof)


def context_cost(spec, ctx, block_dim: int, prof: RuntimeProfile) -> tuple[BlockCost, Work]:
    return (work_cost(spec, spec.launch_block_work(ctx, block_dim), ctx.soc, prof.cost_params()),
            spec.launch_work(ctx))


def call_ranges(call: Call) -> list[tuple[int, int, bool]]:
    """(lo, hi, written) of the device memory a call's args address: its inputs, then outputs and workspaces."""
    op = call.op
    out = []
    present = [i for i, s in enumerate(op.input) if s]
    for slot, i in enumerate(present):
        a = call.addrs.get(input_item(i))
        if a is not None:
            out.append((a, a + max(desc_from_proto(op.input_desc[slot]).nbytes, 1), False))
    for i, d in enumerate(op.output_desc):
        a = call.addrs.get(output_item(i))
        if a is not None:
            out.append((a, a + max(desc_from_proto(d).nbytes, 1), True))
    for k, size in enumerate(op.workspace_bytes):
        a = call.addrs.get(workspace_item(k))
        if a is not None:
            out.append((a, a + size, True))
    return out


@dataclass
class Decoder:
    """What a task handler (om_run/tasks/) decodes its TaskDef against: the model, the SoC and profile that price
    a static kernel's launch, and the tables of which task runs or patches each op's kernel."""
    model: DeviceModel
    soc: SocSpec
    prof: RuntimeProfile
    kernel_of_op: dict[int, int] = field(default_factory=dict)
    update_of_op: dict[int, int] = field(default_factory=dict)

    def call(self, op, addrs: dict[str, int], tiling: bytes) -> Call:
        """A kernel call of op with its args' addresses and static tiling, priced now unless its tiling is sunk
        (priced when it runs)."""
        sink = SINK_TILING_DATA in addrs
        bd = int(from_attr(op.attr["tvm_blockdim"])) if "tvm_blockdim" in op.attr else 1
        key = int(from_attr(op.attr["_tiling_key"])) if "_tiling_key" in op.attr else 0
        cost, work = kernel_cost(op, get_op(op.type), bd, self.soc, self.prof) if not sink else (None, None)
        return Call(op, addrs, tiling, sink, bd, key, 0, cost, work)

    @staticmethod
    def unpriced_call(op, addrs: dict[str, int]) -> Call:
        """A call of op's own kernel whose task prices itself (an HCCL collective: its time is HCCL's, not an AI
        Core's): no tiling, one block."""
        return Call(op, addrs, b"", False)

    call_ranges = staticmethod(call_ranges)

    @staticmethod
    def nbytes(td) -> int:
        return desc_from_proto(td).nbytes


@dataclass
class Program:
    model: DeviceModel
    tasks: list[SimTask]
    deps: dict[int, Deps]
    kernel_task_of_op: dict[int, int]
    update_of_op: dict[int, int]
    clobbers: list = field(default_factory=list)   # (task, producer task, output name): output overwritten
    label_at: dict[int, tuple[int, int]] = field(default_factory=dict)   # label -> (stream, position in it)
    activated: set[int] = field(default_factory=set)   # streams a STREAM_ACTIVE / STREAM_SWITCH starts
    region_last: dict[int, int] = field(default_factory=dict)   # region's first task -> its last task
    # the last task of each other stream of a region that spans streams (an If lowered to StreamSwitch: only
    # the branch taken runs) -> the region's last task: whichever finishes, the region is done
    region_end_alias: dict[int, int] = field(default_factory=dict)

    @cached_property
    def needs_values(self) -> bool:
        """Its control flow reads device memory (a switch): timing alone cannot follow it. Scanned once (every
        execution asked it: 2.5 us per task of a timing-only run)."""
        return any(t.type in VALUE_BRANCH_KINDS for t in self.tasks)

    @cached_property
    def control_reads(self) -> bool:
        """Tasks the scheduler runs by reading device memory (switches, device-to-device copies): each waits for
        the kernels before it (the compute lane's drain)."""
        return any(t.type in MEMORY_READ_KINDS for t in self.tasks)

    @cached_property
    def initial_sqes(self) -> dict[int, Sqe]:
        """The SQE each kernel task is loaded with, built once (a run replaces entries, never changes them)."""
        return {t.id: Sqe(t.calls[0].block_dim, t.calls[0].tiling_key) for t in self.tasks
                if t.calls and t.type in KERNEL_KINDS}

    @cached_property
    def stream_tasks(self) -> dict[int, list[SimTask]]:
        """Each stream's tasks in SQ order (the same every execution)."""
        out: dict[int, list[SimTask]] = {}
        for t in self.tasks:
            out.setdefault(t.stream, []).append(t)
        for sid, ts in out.items():
            for pos, t in enumerate(ts):
                if t.type in LABEL_SET_KINDS:
                    self.label_at[t.label] = (sid, pos)
        return out

    def describe(self, task_id: int) -> str:
        t = self.tasks[task_id]
        kind = tt.TASK_TYPE_NAMES.get(t.type, str(t.type))
        return f"{kind} {t.name}" if t.name else kind


def build_program(model: DeviceModel, soc: SocSpec, prof: RuntimeProfile) -> Program:
    """Each task decoded by its type's handler (om_run/tasks/), then the hazard analysis over what they touch."""
    tasks, accesses = [], {}
    p = Decoder(model, soc, prof)
    for k, t in enumerate(model.tasks):
        handler = HANDLERS.get(t.type)
        if handler is None:
            raise OpError(f"task {k}: task type {t.type} is not one om-run executes")
        st = SimTask(k, t.type, t.stream_id, event=t.event_id)
        accesses[k] = [Access(k, lo, hi, w) for lo, hi, w in handler.decode(p, st, t)]
        if st.op is not None:
            st.name = f"{st.op.name}: {st.op.type}"
            st.op_name, st.op_type = st.op.name, st.op.type
        st.type_name = handler.name
        tasks.append(st)
    region_last, end_alias = _collapse_regions(model, tasks, accesses)
    deps = analyse(accesses, list(range(len(tasks))))
    for d in deps.values():      # a region is done when its last task (its leave label) is
        for lst in (d.producers, d.readers, d.writers):
            lst[:] = [(region_last.get(x, x), lo, hi) for x, lo, hi in lst]
    prog = Program(model, tasks, deps, p.kernel_of_op, p.update_of_op, region_last=region_last,
                   region_end_alias=end_alias)
    prog.activated = {t.target for t in tasks if t.type in STREAM_START_KINDS}
    prog.clobbers = output_clobbers(model, tasks, accesses, p.kernel_of_op)
    prog.stream_tasks   # noqa: B018  (fills label_at)
    return prog


def _region_of(model: DeviceModel, op) -> int | None:
    """The control op of the root graph whose region holds this op (None: the op is in the root graph)."""
    owner_of = getattr(model, "_owner_of", None)
    if owner_of is None:
        owner_of = {name: o for o in model.ops.values() for name in o.subgraph_name if o.type != "PartitionedCall"}
        by_name = {o.name: o for o in model.ops.values()}
        model._owner_of, model._by_name = owner_of, by_name
    g = model.graph_of.get(op.id, model.root_graph)
    if g == model.root_graph:
        owner = op.attr["_label_owner"].s.decode() if "_label_owner" in op.attr else None
        return model._by_name[owner].id if owner in model._by_name else None
    top = op
    while g != model.root_graph:
        top = owner_of[g]
        g = model.graph_of[top.id]
    return top.id


def _collapse_regions(model: DeviceModel, tasks, accesses: dict) -> tuple[dict[int, int], dict[int, int]]:
    """The hazard sweep (hazards.py) follows task order, which a jump breaks: a lowered control-flow region
    (one stream, its tasks in order by construction) is checked as one task against the rest of the model —
    its accesses move to its first task (reads of bytes the region writes itself dropped), and whoever
    depends on it waits for its last task. A region over several streams (StreamSwitch branches, one of
    which runs) is also done when the last task of any of its streams is. Returns ({first task: last task},
    {last task of another stream: the region's last task})."""
    regions: dict[int, list[int]] = {}
    for st in tasks:
        if st.op is not None and (model.graph_of.get(st.op.id, model.root_graph) != model.root_graph
                                  or "_label_owner" in st.op.attr):
            key = _region_of(model, st.op)
            if key is not None:
                regions.setdefault(key, []).append(st.id)
    out, alias = {}, {}
    for ks in regions.values():
        first, last = min(ks), max(ks)
        tail = {tasks[k].stream: k for k in sorted(ks)}        # each branch stream's last task of the region
        alias.update({k: last for s, k in tail.items() if k != last and s != tasks[first].stream})
        writes = [a for k in ks for a in accesses.get(k, ()) if a.write]
        covered = _Cover(writes)
        reads = [a for k in ks for a in accesses.get(k, ()) if not a.write and not covered(a.lo, a.hi)]
        for k in ks:
            accesses.pop(k, None)
        accesses[first] = [Access(first, a.lo, a.hi, a.write) for a in reads + writes]
        out[first] = last
    return out, alias


class _Cover:
    """Whether one of a set of intervals holds [lo, hi): the intervals sorted by start with the running maximum
    of their ends, so each question is a bisection (a region of thousands of tasks is checked in n log n, not
    reads x writes)."""

    def __init__(self, spans) -> None:
        spans = sorted((a.lo, a.hi) for a in spans)
        self.starts = [lo for lo, _ in spans]
        self.reach, top = [], -1
        for _, hi in spans:
            top = max(top, hi)
            self.reach.append(top)

    def __call__(self, lo: int, hi: int) -> bool:
        k = bisect.bisect_right(self.starts, lo)
        return k > 0 and self.reach[k - 1] >= hi


def output_clobbers(model: DeviceModel, tasks, accesses, kernel_of_op) -> list[tuple[int, int, str]]:
    """Model outputs are read by the host after the model ends: a task other than the output's producer
    that writes its bytes after the producer (in task order) leaves the host a clobbered output."""
    by_name = {op.name: op for op in model.ops.values()}
    found = []
    for io in model.outputs:
        net = next(op for op in model.ops.values() if op.type == "NetOutput")
        k = [td.name or net.input[i] for i, td in enumerate(net.input_desc)].index(io.name)
        src = net.input[k].rsplit(":", 1)[0]
        while src in by_name and get_op(by_name[src].type).no_task and by_name[src].input:
            src = by_name[src].input[0].rsplit(":", 1)[0]   # look through views
        producer = kernel_of_op.get(by_name[src].id) if src in by_name else None
        if producer is None or io.address is None:
            continue
        lo, hi = io.address, io.address + max(io.desc.nbytes, 1)
        for t in range(producer + 1, len(tasks)):
            if any(a.write and a.lo < hi and lo < a.hi for a in accesses.get(t, ())):
                found.append((t, producer, io.name))
    return found
