"""AI Core / AICPU kernel tasks: KERNEL, ALL_KERNEL (multi-key binaries) or FFTS_PLUS_TASK (MIX ops on
split-architecture SoCs), with args that address tensors through the memory plan.

For a tiling-sink op the kernel task gets block_dim 0xFFFFFFFF (decided on device) and its host tiling
slot `{t}` becomes `{tiling_context.tiling_data}` after the last workspace (GE ProcessMixAicoreTask);
a sink op whose task would be a plain KERNEL is an error, as in GE.
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from ..common.errors import AtcError
from ..ir.graph import Node
from ..om import task_types as tt
from ..ops import AICPU, MIX, get_op
from ..ops.core.base import TilingResult
from ..passes.memory import MemoryPlan
from ..platform.soc import SocSpec
from ..proto import task_pb2
from .args import SINK_TILING_DATA, ArgsLayout, build

TILING_SINK_BLOCK_DIM = 0xFFFFFFFF   # GE kTilingSinkBlockDim
FFTS_CTX_MIX_AIC = 6                 # FFTS+ context type of a MIX (AIC-led) context (assumed numbering)


@dataclass(frozen=True)
class KernelInfo:
    """A kernel binary's descriptor, stored in TBE_KERNELS (AI Core) or CUST_AICPU_KERNELS."""
    name: str
    op_type: str
    engine: str
    core_type: str
    tiling_keys: tuple[int, ...]


def kernel_name(node: Node) -> str:
    """One binary per op type, core type, input dtypes and fused epilogue (fused_<op> attributes, e.g. a
    Conv2D with its Relu is te_conv2d_relu_...)."""
    spec = get_op(node.op_type)
    fused = sorted(k[len("fused_"):] for k, v in node.attrs.items() if k.startswith("fused_") and v is True)
    key = spec.kernel_key(node.attrs)   # a generated kernel (AscBackend): its graph
    sig = "|".join([node.op_type, spec.core_type] + [v.desc.dtype for v in node.inputs if v is not None] + fused +
                   ([key] if key else []))
    prefix = "cust" if spec.is_custom else "te"
    base = "_".join([node.op_type.lower()] + fused)
    return f"{prefix}_{base}_{hashlib.sha256(sig.encode()).hexdigest()[:16]}"


def _context(node_id: int, kernel_type: int, args_format: str, n_slots: int) -> task_pb2.KernelContext:
    return task_pb2.KernelContext(kernel_type=kernel_type, op_index=node_id, args_offset=struct.pack("<H", 0),
                                  args_count=n_slots, args_format=args_format)


def kernel_args(node: Node, tiling: TilingResult, plan: MemoryPlan, sink: bool) -> ArgsLayout:
    ins = [plan.address(v) if v is not None else None for v in node.inputs]
    outs = [plan.address(v) for v in node.outputs]
    layout = build(ins, outs, plan.workspace_addresses(node.name), b"" if sink else tiling.tiling_data)
    if sink:  # the tiling slot becomes the device tiling data written by the AICPU tiling task
        layout.items[-1] = SINK_TILING_DATA
        layout.addresses[-1] = 0  # filled at load time with the device tiling-data address
    return layout


def uses_ffts_plus(node: Node, soc: SocSpec) -> bool:
    return get_op(node.op_type).core_type == MIX and soc.cube_vector_split


def kernel_task(node: Node, node_id: int, tiling: TilingResult, plan: MemoryPlan, soc: SocSpec,
                stream_id: int, sink: bool = False) -> task_pb2.TaskDef:
    spec = get_op(node.op_type)
    layout = kernel_args(node, tiling, plan, sink)
    args = layout.pack()
    name = kernel_name(node)
    block_dim = TILING_SINK_BLOCK_DIM if sink else tiling.block_dim
    task = task_pb2.TaskDef(stream_id=stream_id)
    if node.meta.get("engine", spec.engine) == AICPU:    # an AICPU op, or a node that fell back to AICPU
        task.type = tt.KERNEL
        task.kernel.CopyFrom(task_pb2.KernelDef(
            context=_context(node_id, tt.AI_CPU, layout.format, len(layout.addresses)), block_dim=1,
            args_size=len(args), args=args, kernel_name=name, so_name="libcpu_kernels.so"))
        return task
    ctx = _context(node_id, tt.TE, layout.format, len(layout.addresses))
    if uses_ffts_plus(node, soc):
        task.type = tt.FFTS_PLUS_TASK
        mix = task_pb2.FftsPlusMixAicAivCtxDef(
            thread_dim=1, non_tail_block_dim=block_dim, tail_block_dim=block_dim, args_format=layout.format,
            input_output_count=len(layout.addresses), kernel_name=[f"{name}_mix_aic", f"{name}_mix_aiv"])
        mix.task_addr.extend(layout.addresses)
        ffts = task.ffts_plus_task
        ffts.op_index = node_id
        ffts.addr_size = len(layout.addresses)
        ffts.ffts_plus_sqe.sqe_header.block_dim = block_dim
        ffts.ffts_plus_sqe.total_context_num = 1
        ffts.ffts_plus_sqe.ready_context_num = 1
        c = ffts.ffts_plus_ctx.add(op_index=node_id, uniq_ctx_name=node.name, context_type=FFTS_CTX_MIX_AIC)
        c.mix_aic_aiv_ctx.CopyFrom(mix)
        if not sink:
            task.private_def = tiling.tiling_data  # host tiling data of the MIX context
        return task
    if len(spec.tiling_keys) > 1:
        task.type = tt.ALL_KERNEL
        task.kernel_with_handle.CopyFrom(task_pb2.KernelDefWithHandle(
            context=ctx, dev_func=f"{name}_{tiling.tiling_key}", block_dim=block_dim, args_size=len(args), args=args,
            original_kernel_key=name, node_info=node.name))
        return task
    if sink:
        raise AtcError("E19999", message=f"Node {node.name} ({node.op_type}): tiling sink failed to find a valid task: "
                                         "its kernel has a single tiling-key entry (a plain KERNEL task); tiling sink "
                                         "needs ALL_KERNEL or FFTS_PLUS_TASK")
    task.type = tt.KERNEL
    task.kernel.CopyFrom(task_pb2.KernelDef(context=ctx, stub_func=f"{name}__kernel0", block_dim=block_dim,
                                            args_size=len(args), args=args, kernel_name=name))
    return task


def kernel_of(task: task_pb2.TaskDef):
    """The KernelDef-like message of a kernel task (None for FFTS+ and non-kernel tasks)."""
    if task.HasField("kernel"):
        return task.kernel
    if task.HasField("kernel_with_handle"):
        return task.kernel_with_handle
    return None


def task_op_index(task: task_pb2.TaskDef) -> int | None:
    k = kernel_of(task)
    if k is not None:
        return k.context.op_index
    if task.HasField("ffts_plus_task"):
        return task.ffts_plus_task.op_index
    if task.HasField("update_pc_task"):
        return task.update_pc_task.op_index
    if task.HasField("event_ex"):
        return task.event_ex.op_index
    return None
