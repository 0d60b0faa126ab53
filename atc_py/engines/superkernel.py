"""SuperKernel: consecutive task nodes sharing `_super_kernel_scope` fuse into one SUPER_KERNEL task (44).

The fused task's KernelDef holds every member's args back to back; `context.origin_op_index` lists the
members and `kernel_ext_info` (our encoding) records each member's op index, args offset/size and args
format. A tiling-sink member keeps its AICPU tiling task (before the super kernel, on the attached stream,
args `{tiling_context}{*op_type}{event_addr<id>*}`) and gets `{tiling_context.tiling_data}
{tiling_context.tiling_key}{tiling_context.block_dim}{event_addr<id>*}` in place of its tiling slot — no
wait, NOPs, update or record: the tiling kernel notifies the super kernel through the event address.
"""
from __future__ import annotations

import json
import struct

from ..common.errors import AtcError
from ..ir.graph import Node
from ..om import task_types as tt
from ..ops.core.base import TilingResult
from ..passes.memory import MemoryPlan
from ..proto import task_pb2
from .aicore import TILING_SINK_BLOCK_DIM, kernel_args
from .args import OP_TYPE, SINK_BLOCK_DIM, SINK_TILING_KEY, TILING_CONTEXT, event_item, format_of

SUPER_KERNEL_SCOPE = "_super_kernel_scope"
REUSE_BINARY = "super_kernel_reuse_binary"


def check_reuse_binary(node: Node, is_sink: bool) -> None:
    if node.attrs.get(REUSE_BINARY) and not is_sink:
        raise AtcError("E19999", message=f"SuperKernel node[{node.name}, {node.op_type}] that has reused binary is not "
                                         "going into the tiling sink procedure, SK procedure failed.")


def member_args(node: Node, tiling: TilingResult, plan: MemoryPlan, sink_event: int | None):
    layout = kernel_args(node, tiling, plan, sink=sink_event is not None)
    if sink_event is not None:
        layout.items += [SINK_TILING_KEY, SINK_BLOCK_DIM, event_item(sink_event)]
        layout.addresses += [0, 0, 0]
    return layout


def sk_tiling_task(node_id: int, attached: int, event: int, so_name: str, is_custom: bool) -> task_pb2.TaskDef:
    from .sink import KERNEL_NAME, param_def
    args = param_def(so_name, is_custom)
    ctx = task_pb2.KernelContext(kernel_type=tt.CUST_AI_CPU if is_custom else tt.AI_CPU, op_index=node_id,
                                 args_format=format_of([TILING_CONTEXT, OP_TYPE, event_item(event)]),
                                 args_offset=struct.pack("<H", 0))
    t = task_pb2.TaskDef(type=tt.PREPROCESS_KERNEL, stream_id=attached)
    t.kernel.CopyFrom(task_pb2.KernelDef(context=ctx, block_dim=1, args=args, args_size=len(args), so_name=so_name,
                                         kernel_name=KERNEL_NAME))
    return t


def super_kernel_task(scope: str, members: list[tuple[Node, int, TilingResult, int | None]], plan: MemoryPlan,
                      stream: int) -> task_pb2.TaskDef:
    """members: (node, op id, compile-time tiling, sink event or None)."""
    blob, info, fmt = bytearray(), [], []
    for node, node_id, tiling, event in members:
        layout = member_args(node, tiling, plan, event)
        raw = layout.pack()
        info.append({"op_index": node_id, "offset": len(blob), "size": len(raw), "args_format": layout.format})
        fmt.append(layout.format)
        blob += raw + b"\0" * (-len(raw) % 8)
    first = members[0][1]
    ctx = task_pb2.KernelContext(kernel_type=tt.TE, op_index=first, args_format="".join(fmt),
                                 args_offset=b"".join(struct.pack("<H", m["offset"]) for m in info),
                                 args_count=len(members))
    ctx.origin_op_index.extend(m[1] for m in members)
    dims = [TILING_SINK_BLOCK_DIM if e is not None else t.block_dim for _, _, t, e in members]
    block_dim = max((d for d in dims if d != TILING_SINK_BLOCK_DIM), default=TILING_SINK_BLOCK_DIM)
    ext = json.dumps({"scope": scope, "members": info}, sort_keys=True).encode()
    task = task_pb2.TaskDef(type=tt.SUPER_KERNEL, stream_id=stream)
    task.kernel.CopyFrom(task_pb2.KernelDef(context=ctx, block_dim=block_dim, args=bytes(blob), args_size=len(blob),
                                            kernel_name=f"sk_{scope}", stub_func=f"sk_{scope}__kernel0",
                                            kernel_ext_info=ext, kernel_ext_info_size=len(ext)))
    return task
