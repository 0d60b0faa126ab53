"""Tiling-sink task sequence (FE GenerateTaskForSinkOp) and its running params.

Per sink op: PREPROCESS_KERNEL (AICPU tiling, attached stream) → EVENT_WAIT (main) → NOP × prefetch_num
(main) → the AI Core task (ALL_KERNEL / FFTS_PLUS_TASK, block_dim 0xFFFFFFFF) → UPDATE (attached) →
EVENT_RECORD (attached). When a tiling-dependent value is produced by a task of this model, the attached
stream must not start the tiling task before that value exists: an EVENT_RECORD on the main stream and an
EVENT_WAIT on the attached stream come first (GE's stream assignment adds this cross-stream dependency).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..ir.graph import Node
from ..om import task_types as tt
from ..ops import get_op
from ..proto import task_pb2
from .args import EMPTY, OP_TYPE, SINK_BLOCK_DIM, SINK_TILING_KEY, TILING_CONTEXT, format_of, workspace_item

KERNEL_NAME = "RunAicpuRpcSrvLaunch"
OP_NAME = b"TilingSink"
CUSTOM_TILING_OP_DUMP_SIZE = 20480     # extra workspace of custom sink ops (FE CUSTOM_TILING_OP_DUMP_SIZE)
MAX_TILING_DATA_SIZE = 16 * 1024       # GE kMaxTilingDataSize: device tiling-data capacity
# fe::ParamDef {u64 tiling_context; u64 op_type; bool is_custom; bool is_prefix_ops_path; char soName[4096];
#               char kernelName[4096]; char opName[32]; char hostInputInfo[16]} — sizeof 8264 (8-aligned)
PARAM_DEF = struct.Struct("<QQ??4096s4096s32s16s")
PARAM_DEF_SIZE = (PARAM_DEF.size + 7) // 8 * 8
BUILTIN_SO = "op_impl/built-in/ai_core/tbe/op_master_device/lib/{prefix}-v{version}-libopmaster.so"
CUSTOM_SO = "{path}/op_impl/ai_core/tbe/op_master_device/lib/libcust_opmaster.so"


@dataclass
class SinkResources:
    """Running params of one sink op: its attached stream, events and the op's device-tiling library."""
    main_stream: int
    attached_stream: int
    tiling_event: int
    dep_event: int | None       # set when a dependent value is produced inside this model
    so_name: str
    is_custom: bool


def so_name_for(node: Node, short_soc: str, version: str) -> str:
    spec = get_op(node.op_type)
    if spec.is_custom:
        return CUSTOM_SO.format(path=getattr(spec, "custom_op_file_path", "custom"))
    prefix = "Ascend310P" if short_soc.startswith("Ascend310P") else "Ascend"
    return BUILTIN_SO.format(prefix=prefix, version=version)


def param_def(so_name: str, is_custom: bool) -> bytes:
    raw = PARAM_DEF.pack(0, 0, is_custom, False, so_name.encode(), KERNEL_NAME.encode(), OP_NAME, b"")
    return raw + b"\0" * (PARAM_DEF_SIZE - len(raw))


def tiling_task(node_id: int, res: SinkResources, last_ws: int) -> task_pb2.TaskDef:
    dump = [workspace_item(last_ws, pointer=True)] if res.is_custom else []   # a custom op: its extra last workspace
    fmt = format_of([TILING_CONTEXT, OP_TYPE, EMPTY] + dump)
    args = param_def(res.so_name, res.is_custom)
    ctx = task_pb2.KernelContext(kernel_type=tt.CUST_AI_CPU if res.is_custom else tt.AI_CPU, op_index=node_id,
                                 args_format=fmt, args_offset=struct.pack("<H", 0))
    t = task_pb2.TaskDef(type=tt.PREPROCESS_KERNEL, stream_id=res.attached_stream)
    t.kernel.CopyFrom(task_pb2.KernelDef(context=ctx, block_dim=1, args=args, args_size=len(args),
                                         so_name=res.so_name, kernel_name=KERNEL_NAME))
    return t


def event_task(kind: int, stream: int, event: int, node_id: int) -> task_pb2.TaskDef:
    t = task_pb2.TaskDef(type=kind, stream_id=stream, event_id=event)
    t.event_ex.op_index = node_id
    return t


def nop_task(stream: int) -> task_pb2.TaskDef:
    return task_pb2.TaskDef(type=tt.NOP, stream_id=stream)


def update_task(node_id: int, stream: int) -> task_pb2.TaskDef:
    t = task_pb2.TaskDef(type=tt.UPDATE, stream_id=stream)
    t.update_pc_task.CopyFrom(task_pb2.UpdatePcTaskDef(
        op_index=node_id, stream_id=stream, args_format=format_of([SINK_TILING_KEY, SINK_BLOCK_DIM])))
    return t


def sink_sequence(node_id: int, kernel: task_pb2.TaskDef, res: SinkResources, nops: int,
                  last_ws: int) -> list[task_pb2.TaskDef]:
    seq = []
    if res.dep_event is not None:
        seq += [event_task(tt.EVENT_RECORD, res.main_stream, res.dep_event, node_id),
                event_task(tt.EVENT_WAIT, res.attached_stream, res.dep_event, node_id)]
    seq.append(tiling_task(node_id, res, last_ws))
    seq.append(event_task(tt.EVENT_WAIT, res.main_stream, res.tiling_event, node_id))
    seq += [nop_task(res.main_stream) for _ in range(nops)]
    seq.append(kernel)
    seq.append(update_task(node_id, res.attached_stream))
    seq.append(event_task(tt.EVENT_RECORD, res.attached_stream, res.tiling_event, node_id))
    return seq
