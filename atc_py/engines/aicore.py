"""Task generation for ordinary ops: one kernel task per op (KERNEL, or ALL_KERNEL for multi-key binaries)."""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from ..ir.graph import Graph, Node
from ..ops import AICPU, get_op
from ..ops.base import TilingResult
from ..passes.memory import MemoryPlan
from ..proto import task_pb2
from . import task_types as tt
from .args import build_args


@dataclass(frozen=True)
class KernelInfo:
    """A kernel binary's descriptor, stored in TBE_KERNELS (AI Core) or CUST_AICPU_KERNELS."""
    name: str
    op_type: str
    engine: str
    core_type: str
    tiling_keys: tuple[int, ...]


def kernel_name(node: Node) -> str:
    spec = get_op(node.op_type)
    sig = "|".join([node.op_type, spec.core_type] + [v.desc.dtype for v in node.inputs if v is not None])
    return f"te_{node.op_type.lower()}_{hashlib.sha256(sig.encode()).hexdigest()[:16]}"


def _context(node_id: int, kernel_type: int, args_format: str, n_slots: int) -> task_pb2.KernelContext:
    return task_pb2.KernelContext(kernel_type=kernel_type, op_index=node_id, args_offset=struct.pack("<H", 0),
                                  args_count=n_slots, args_format=args_format)


def kernel_task(node: Node, node_id: int, tiling: TilingResult, plan: MemoryPlan, stream_id: int) -> task_pb2.TaskDef:
    spec = get_op(node.op_type)
    ins = [plan.address(v) if v is not None else None for v in node.inputs]
    outs = [plan.address(v) for v in node.outputs]
    layout = build_args(ins, outs, plan.workspace_addresses(node.name), tiling.tiling_data)
    args = layout.pack()
    name = kernel_name(node)
    ktype = tt.AI_CPU if spec.engine == AICPU else tt.TE
    ctx = _context(node_id, ktype, layout.format, len(layout.addresses))
    task = task_pb2.TaskDef(stream_id=stream_id)
    if len(spec.tiling_keys) > 1 and spec.engine != AICPU:
        task.type = tt.ALL_KERNEL
        task.kernel_with_handle.CopyFrom(task_pb2.KernelDefWithHandle(
            context=ctx, dev_func=f"{name}_{tiling.tiling_key}", block_dim=tiling.block_dim, args_size=len(args),
            args=args, original_kernel_key=name, node_info=node.name))
    else:
        task.type = tt.KERNEL
        task.kernel.CopyFrom(task_pb2.KernelDef(
            context=ctx, stub_func=f"{name}__kernel0", block_dim=tiling.block_dim, args_size=len(args), args=args,
            kernel_name=name, so_name="libcpu_kernels.so" if spec.engine == AICPU else ""))
    return task


def generate_tasks(graph: Graph, ids: dict[str, int], tilings: dict[str, TilingResult], plan: MemoryPlan,
                   ) -> tuple[list[task_pb2.TaskDef], dict[str, KernelInfo]]:
    tasks: list[task_pb2.TaskDef] = []
    kernels: dict[str, KernelInfo] = {}
    for node in graph.nodes:
        spec = get_op(node.op_type)
        if spec.no_task:
            continue
        task = kernel_task(node, ids[node.name], tilings[node.name], plan, node.meta.get("stream_id", 0))
        task.id = len(tasks)
        tasks.append(task)
        name = kernel_name(node)
        kernels.setdefault(name, KernelInfo(name, node.op_type, spec.engine, spec.core_type, tuple(spec.tiling_keys)))
    return tasks, kernels
