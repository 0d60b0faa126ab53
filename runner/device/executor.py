"""Runs a DeviceModel's tasks in stream order on device memory (numerics only; timing comes later).

Dispatch by task type (torch.fx Interpreter style); any failure is reported "while executing task N".
"""
from __future__ import annotations

from atc_py.engines import task_types as tt
from atc_py.engines.args import parse_args
from atc_py.errors import AtcError
from atc_py.om.attrs import from_attr
from atc_py.ops import get_op
from atc_py.ops.base import OpError, TilingResult
from atc_py.ops.execute import launch

from ..loader import DeviceModel, desc_from_proto
from .memory import DeviceMemory, MemoryFault

COMPILER_ATTRS_PREFIXES = ("_", "tvm_")


class Executor:
    def __init__(self, model: DeviceModel, memory: DeviceMemory):
        self.model = model
        self.mem = memory
        self.handlers = {tt.KERNEL: self.run_kernel, tt.ALL_KERNEL: self.run_kernel}

    def run(self) -> None:
        for task in self.model.tasks:
            handler = self.handlers.get(task.type)
            op_name = self._op_name(task)
            try:
                if handler is None:
                    raise OpError(f"task type {tt.TASK_TYPE_NAMES.get(task.type, task.type)} is not supported")
                handler(task)
            except (OpError, MemoryFault, ValueError) as exc:
                raise AtcError("E30004", task=f"{task.id} ({op_name})", reason=str(exc)) from None

    def _op_name(self, task) -> str:
        k = task.kernel if task.HasField("kernel") else task.kernel_with_handle
        op = self.model.ops.get(k.context.op_index)
        return f"{op.name}: {op.type}" if op is not None else "?"

    def run_kernel(self, task) -> None:
        k = task.kernel if task.type == tt.KERNEL else task.kernel_with_handle
        op = self.model.ops[k.context.op_index]
        spec = get_op(op.type)
        if spec is None:
            raise OpError(f"no kernel is registered for op type {op.type}")
        addrs, tiling_data = parse_args(k.context.args_format, k.args)
        in_descs = [desc_from_proto(d) for d in op.input_desc]
        out_descs = [desc_from_proto(d) for d in op.output_desc]
        present = [i for i, s in enumerate(op.input) if s]
        inputs: list = [None] * len(op.input)
        for slot, i in enumerate(present):
            key = f"i{i}"
            if key in addrs:
                inputs[i] = self.mem.read(addrs[key], in_descs[slot])
        attrs = {key: from_attr(v) for key, v in op.attr.items() if not key.startswith(COMPILER_ATTRS_PREFIXES)}
        tiling_key = int(from_attr(op.attr["_tiling_key"])) if "_tiling_key" in op.attr else 0
        tiling = TilingResult(k.block_dim, tiling_key, tiling_data)
        outs = launch(spec, tiling, attrs, out_descs, inputs)
        for i, arr in enumerate(outs):
            key = f"o{i}"
            if key not in addrs:
                raise OpError(f"args have no address for output {i}")
            self.mem.write(addrs[key], arr.astype(out_descs[i].dtype, copy=False))
