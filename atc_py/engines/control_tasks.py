"""TaskDefs of the runtime (RTS) nodes the label makers insert (engines/labels.py): LABEL_SET, LABEL_GOTO_EX,
LABEL_SWITCH_BY_INDEX, STREAM_ACTIVE (one per stream it activates; none when the subgraph has no stream of
its own), STREAM_SWITCH and MEMCPY_ASYNC (device to device, addresses from the memory plan)."""
from __future__ import annotations

from ..ir.graph import Node
from ..passes.memory import MemoryPlan
from ..proto import task_pb2
from ..om import task_types as tt
from .labels import ACTIVE_STREAMS, LABEL_INDEX, LABEL_LIST, SWITCH_DATA_TYPE


def rts_tasks(node: Node, op_id: int, plan: MemoryPlan, stream: int) -> list[task_pb2.TaskDef]:
    t = node.op_type
    if t == "LabelSet":
        label = int(node.attrs[LABEL_INDEX])
        return [task_pb2.TaskDef(type=tt.LABEL_SET, stream_id=stream, label_id=label,
                                 label_set=task_pb2.LabelSetDef(op_index=op_id, label_id=label))]
    if t == "LabelGotoEx":
        label = int(node.attrs[LABEL_INDEX])
        return [task_pb2.TaskDef(type=tt.LABEL_GOTO_EX, stream_id=stream, label_id=label,
                                 label_goto_ex=task_pb2.LabelGotoExDef(op_index=op_id, label_id=label))]
    if t == "LabelSwitchByIndex":
        return [task_pb2.TaskDef(type=tt.LABEL_SWITCH_BY_INDEX, stream_id=stream,
                                 label_switch_by_index=task_pb2.LabelSwitchByIndexDef(
                                     op_index=op_id, label_max=len(node.attrs[LABEL_LIST])))]
    if t == "StreamActive":
        return [task_pb2.TaskDef(type=tt.STREAM_ACTIVE, stream_id=stream,
                                 stream_active=task_pb2.StreamActiveDef(op_index=op_id, active_stream_id=int(s)))
                for s in node.attrs.get(ACTIVE_STREAMS, [])]
    if t == "StreamSwitch":
        target = node.attrs.get(ACTIVE_STREAMS, [])
        if len(target) != 1:
            raise ValueError(f"{node.name}: a StreamSwitch activates one stream, it lists {target}")
        return [task_pb2.TaskDef(type=tt.STREAM_SWITCH, stream_id=stream, stream_switch=task_pb2.StreamSwitchDef(
            op_index=op_id, true_stream_id=int(target[0]), data_type=int(node.attrs.get(SWITCH_DATA_TYPE, 0))))]
    if t == "MemcpyAsync":
        src, dst = node.inputs[0], node.outputs[0]
        n = src.desc.nbytes
        return [task_pb2.TaskDef(type=tt.MEMCPY_ASYNC, stream_id=stream, memcpy_async=task_pb2.MemcpyAsyncDef(
            dst=plan.address(dst), dst_max=n, src=plan.address(src), count=n, kind=tt.RT_MEMCPY_DEVICE_TO_DEVICE,
            op_index=op_id, args_format="{i0}{o0}"))]
    raise ValueError(f"{node.name}: {t} is not a runtime task")
