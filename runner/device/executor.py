"""Runs a DeviceModel's tasks on device memory, stream by stream, honouring events (numerics only; the
cycle-counted scheduler comes with the simulator).

Dispatch by task type (torch.fx Interpreter style); any failure is reported "while executing task N".
Tiling sink: PREPROCESS_KERNEL runs the op's tiling on the "AICPU" with the dependent values read from
device memory and writes tiling data / key / block dim into the op's device tiling context; UPDATE
patches the target kernel's SQE (block dim, tiling key); the kernel then runs from its SQE and reads
`{tiling_context.tiling_data}` — so a kernel that runs before its UPDATE sees block dim 0xFFFFFFFF.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from atc_py.engines import task_types as tt
from atc_py.engines.aicore import TILING_SINK_BLOCK_DIM, kernel_of
from atc_py.engines.args import parse_args
from atc_py.engines.sink import MAX_TILING_DATA_SIZE
from atc_py.errors import AtcError
from atc_py.om.attrs import from_attr
from atc_py.ops import get_op
from atc_py.ops.base import OpError, TilingResult
from atc_py.ops.execute import launch, tiling_context
from atc_py.platform import load_soc

from ..loader import DeviceModel, desc_from_proto
from .memory import DeviceMemory, MemoryFault

COMPILER_ATTRS_PREFIXES = ("_", "tvm_", "compile_info_json", "op_para_size")


@dataclass
class Sqe:
    """The scheduler's copy of a kernel task's descriptor: UPDATE patches these fields."""
    block_dim: int
    tiling_key: int


def op_attrs(op) -> dict:
    return {k: from_attr(v) for k, v in op.attr.items() if not k.startswith(COMPILER_ATTRS_PREFIXES)}


class Executor:
    def __init__(self, model: DeviceModel, memory: DeviceMemory):
        self.model = model
        self.mem = memory
        self.soc = load_soc(model.soc_version) if model.soc_version else None
        self.events: set[int] = set()
        self.sqe: dict[int, Sqe] = {}
        self.sink_ctx: dict[int, TilingResult] = {}       # op id -> device tiling context contents
        self.kernel_task_of_op: dict[int, int] = {}
        for t in model.tasks:
            if t.type in (tt.KERNEL, tt.ALL_KERNEL, tt.FFTS_PLUS_TASK):
                k = kernel_of(t)
                op_index = k.context.op_index if k is not None else t.ffts_plus_task.op_index
                block_dim = k.block_dim if k is not None else t.ffts_plus_task.ffts_plus_sqe.sqe_header.block_dim
                self.sqe[t.id] = Sqe(block_dim, self._static_key(op_index))
                self.kernel_task_of_op[op_index] = t.id
        self.handlers = {tt.KERNEL: self.run_kernel, tt.ALL_KERNEL: self.run_kernel,
                         tt.FFTS_PLUS_TASK: self.run_kernel, tt.PREPROCESS_KERNEL: self.run_device_tiling,
                         tt.UPDATE: self.run_update, tt.NOP: lambda t: None,
                         tt.EVENT_RECORD: self.run_record, tt.EVENT_WAIT: self.run_wait,
                         tt.SUPER_KERNEL: self.run_super_kernel}

    def _static_key(self, op_index: int) -> int:
        op = self.model.ops.get(op_index)
        return int(from_attr(op.attr["_tiling_key"])) if op is not None and "_tiling_key" in op.attr else 0

    # -- scheduling (in order per stream; a stream blocks on an EVENT_WAIT whose event is not recorded) --
    def run(self) -> None:
        queues: dict[int, deque] = {}
        for t in self.model.tasks:
            queues.setdefault(t.stream_id, deque()).append(t)
        while any(queues.values()):
            progressed = False
            for sid in sorted(queues):
                q = queues[sid]
                while q and self.ready(q[0]):
                    self.execute(q.popleft())
                    progressed = True
            if not progressed:
                heads = ", ".join(f"stream {s}: task {q[0].id} waits for event {q[0].event_id}"
                                  for s, q in sorted(queues.items()) if q)
                raise AtcError("E30004", task="-", reason=f"deadlock: {heads} that no stream records")

    def ready(self, task) -> bool:
        """A stream head can start: EVENT_WAIT needs its event; a super kernel needs the notifications of
        its sink members' tiling tasks (event_addr)."""
        if task.type == tt.EVENT_WAIT:
            return task.event_id in self.events
        if task.type == tt.SUPER_KERNEL:
            return all(m["op_index"] in self.sink_ctx for m in self._sk_members(task) if self._sk_sink(m))
        return True

    def execute(self, task) -> None:
        handler = self.handlers.get(task.type)
        try:
            if handler is None:
                raise OpError(f"task type {tt.TASK_TYPE_NAMES.get(task.type, task.type)} is not supported")
            handler(task)
        except (OpError, MemoryFault, ValueError) as exc:
            raise AtcError("E30004", task=f"{task.id} ({self.describe(task)})", reason=str(exc)) from None

    def describe(self, task) -> str:
        from atc_py.engines.aicore import task_op_index
        op = self.model.ops.get(task_op_index(task))
        kind = tt.TASK_TYPE_NAMES.get(task.type, str(task.type))
        return f"{kind} of {op.name}: {op.type}" if op is not None else kind

    # -- handlers ------------------------------------------------------------------------------------
    def run_record(self, task) -> None:
        self.events.add(task.event_id)

    def run_wait(self, task) -> None:
        self.events.discard(task.event_id)  # aclrtStreamWaitEvent + aclrtResetEvent

    def _inputs(self, op, addrs: dict[str, int] | None = None) -> list:
        """Input arrays by IR index, read from device memory (args addresses when given, else the OpDef's)."""
        descs = [desc_from_proto(d) for d in op.input_desc]
        present = [i for i, s in enumerate(op.input) if s]
        values: list = [None] * len(op.input)
        for slot, i in enumerate(present):
            addr = addrs.get(f"i{i}") if addrs is not None else op.input_i[slot]
            if addr is not None:
                values[i] = self.mem.read(addr, descs[slot])
        return values

    def _in_descs(self, op) -> list:
        descs = iter(desc_from_proto(d) for d in op.input_desc)
        return [next(descs) if s else None for s in op.input]

    def run_device_tiling(self, task) -> None:
        """The AICPU tiling kernel (RunAicpuRpcSrvLaunch): tiling with the real dependent values."""
        op = self.model.ops[task.kernel.context.op_index]
        spec = get_op(op.type)
        values = self._inputs(op)
        depend = {i: values[i] for i in spec.tiling_depend if i < len(values) and values[i] is not None}
        ctx = tiling_context(spec, self._in_descs(op), [desc_from_proto(d) for d in op.output_desc], op_attrs(op),
                             self.soc, depend)
        res = spec.tiling(ctx)
        capacity = int(from_attr(op.attr["op_para_size"])) if "op_para_size" in op.attr else MAX_TILING_DATA_SIZE
        if len(res.tiling_data) > capacity:
            raise OpError(f"device tiling wrote {len(res.tiling_data)} B of tiling data, capacity {capacity} B")
        self.sink_ctx[op.id] = res

    def run_update(self, task) -> None:
        op_index = task.update_pc_task.op_index
        res = self.sink_ctx.get(op_index)
        if res is None:
            raise OpError(f"UPDATE before the tiling task of op {op_index} ran")
        target = self.kernel_task_of_op.get(op_index)
        if target is None:
            raise OpError(f"UPDATE finds no kernel task of op {op_index}")
        self.sqe[target] = Sqe(res.block_dim, res.tiling_key)

    @staticmethod
    def _sk_members(task) -> list[dict]:
        import json
        try:
            return json.loads(task.kernel.kernel_ext_info)["members"]
        except (ValueError, KeyError, TypeError):
            raise OpError("SUPER_KERNEL kernel_ext_info does not describe its members") from None

    @staticmethod
    def _sk_sink(member: dict) -> bool:
        return "tiling_context.tiling_data" in member["args_format"]

    def run_super_kernel(self, task) -> None:
        """Each member runs in order from its own slice of the fused args; sink members read the tiling
        data, key and block dim their device tiling wrote."""
        args = task.kernel.args
        for m in self._sk_members(task):
            if m["offset"] + m["size"] > len(args):
                raise OpError(f"SUPER_KERNEL member {m['op_index']} args run past the fused args")
            op = self.model.ops[m["op_index"]]
            addrs, tiling_data = parse_args(m["args_format"], args[m["offset"]:m["offset"] + m["size"]])
            if self._sk_sink(m):
                res = self.sink_ctx[op.id]
                tiling = res
            else:
                tiling = TilingResult(self._static_block_dim(op), self._static_key(op.id), tiling_data)
            self._launch(op, addrs, tiling)

    def _static_block_dim(self, op) -> int:
        return int(from_attr(op.attr["tvm_blockdim"])) if "tvm_blockdim" in op.attr else 1

    def _launch(self, op, addrs: dict, tiling: TilingResult) -> None:
        spec = get_op(op.type)
        if spec is None:
            raise OpError(f"no kernel is registered for op type {op.type}")
        out_descs = [desc_from_proto(d) for d in op.output_desc]
        outs = launch(spec, tiling, op_attrs(op), out_descs, self._inputs(op, addrs))
        for i, arr in enumerate(outs):
            key = f"o{i}"
            if key not in addrs:
                raise OpError(f"args have no address for output {i}")
            self.mem.write(addrs[key], arr.astype(out_descs[i].dtype, copy=False))

    def run_kernel(self, task) -> None:
        k = kernel_of(task)
        if k is not None:
            op = self.model.ops[k.context.op_index]
            addrs, tiling_data = parse_args(k.context.args_format, k.args)
        else:
            ffts = task.ffts_plus_task
            op = self.model.ops[ffts.op_index]
            mix = ffts.ffts_plus_ctx[0].mix_aic_aiv_ctx
            from atc_py.engines.args import _ITEM
            items = _ITEM.findall(mix.args_format)
            if len(items) != len(mix.task_addr):
                raise OpError(f"FFTS+ context has {len(mix.task_addr)} addresses for {len(items)} args")
            addrs, tiling_data = dict(zip(items, mix.task_addr)), task.private_def
        sqe = self.sqe[task.id]
        if sqe.block_dim == TILING_SINK_BLOCK_DIM:
            raise OpError("kernel launched with the placeholder block_dim 0xFFFFFFFF: its SQE was not patched by "
                          "UPDATE before it ran")
        if "tiling_context.tiling_data" in addrs:
            res = self.sink_ctx.get(op.id)
            if res is None:
                raise OpError("the device tiling data of this op was never written (its tiling task did not run)")
            tiling_data = res.tiling_data
        self._launch(op, addrs, TilingResult(sqe.block_dim, sqe.tiling_key, tiling_data))
