"""TaskDefs of the runtime (RTS) nodes the label makers insert (engines/labels.py), one builder per op type:
LABEL_SET, LABEL_GOTO_EX, LABEL_SWITCH_BY_INDEX, STREAM_ACTIVE (one per stream it activates; none when the
subgraph has no stream of its own), STREAM_SWITCH and MEMCPY_ASYNC (device to device, addresses from the
memory plan). om-run's side of each task type is its handler in om_run/tasks/."""
from __future__ import annotations

from ..ir.graph import Node
from ..om import task_types as tt
from ..passes.memory import MemoryPlan
from ..proto import task_pb2
from .args import format_of, input_item, output_item
from .labels import ACTIVE_STREAMS, LABEL_INDEX, LABEL_LIST, SWITCH_DATA_TYPE


def _label_set(node: Node, op_id: int, plan: MemoryPlan, stream: int) -> list[task_pb2.TaskDef]:
    label = int(node.attrs[LABEL_INDEX])
    return [task_pb2.TaskDef(type=tt.LABEL_SET, stream_id=stream, label_id=label,
                             label_set=task_pb2.LabelSetDef(op_index=op_id, label_id=label))]


def _label_goto(node: Node, op_id: int, plan: MemoryPlan, stream: int) -> list[task_pb2.TaskDef]:
    label = int(node.attrs[LABEL_INDEX])
    return [task_pb2.TaskDef(type=tt.LABEL_GOTO_EX, stream_id=stream, label_id=label,
                             label_goto_ex=task_pb2.LabelGotoExDef(op_index=op_id, label_id=label))]


def _label_switch(node: Node, op_id: int, plan: MemoryPlan, stream: int) -> list[task_pb2.TaskDef]:
    return [task_pb2.TaskDef(type=tt.LABEL_SWITCH_BY_INDEX, stream_id=stream,
                             label_switch_by_index=task_pb2.LabelSwitchByIndexDef(
                                 op_index=op_id, label_max=len(node.attrs[LABEL_LIST])))]


def _stream_active(node: Node, op_id: int, plan: MemoryPlan, stream: int) -> list[task_pb2.TaskDef]:
    return [task_pb2.TaskDef(type=tt.STREAM_ACTIVE, stream_id=stream,
                             stream_active=task_pb2.StreamActiveDef(op_index=op_id, active_stream_id=int(s)))
            for s in node.attrs.get(ACTIVE_STREAMS, [])]


def _stream_switch(node: Node, op_id: int, plan: MemoryPlan, stream: int) -> list[task_pb2.TaskDef]:
    target = node.attrs.get(ACTIVE_STREAMS, [])
    if len(target) != 1:
        raise ValueError(f"{node.name}: a StreamSwitch activates one stream, it lists {target}")
    return [task_pb2.TaskDef(type=tt.STREAM_SWITCH, stream_id=stream, stream_switch=task_pb2.StreamSwitchDef(
        op_index=op_id, true_stream_id=int(target[0]), data_type=int(node.attrs.get(SWITCH_DATA_TYPE, 0))))]


def _memcpy(node: Node, op_id: int, plan: MemoryPlan, stream: int) -> list[task_pb2.TaskDef]:
    src, dst = node.inputs[0], node.outputs[0]
    n = src.desc.nbytes
    return [task_pb2.TaskDef(type=tt.MEMCPY_ASYNC, stream_id=stream, memcpy_async=task_pb2.MemcpyAsyncDef(
        dst=plan.address(dst), dst_max=n, src=plan.address(src), count=n, kind=tt.RT_MEMCPY_DEVICE_TO_DEVICE,
        op_index=op_id, args_format=format_of([input_item(0), output_item(0)])))]


BUILDERS = {"LabelSet": _label_set, "LabelGotoEx": _label_goto, "LabelSwitchByIndex": _label_switch,
            "StreamActive": _stream_active, "StreamSwitch": _stream_switch, "MemcpyAsync": _memcpy}


def rts_tasks(node: Node, op_id: int, plan: MemoryPlan, stream: int, attrs: dict | None = None
              ) -> list[task_pb2.TaskDef]:
    """The runtime node's tasks (`attrs`, the op's task-generation attributes: none for these)."""
    build = BUILDERS.get(node.op_type)
    if build is None:
        raise ValueError(f"{node.name}: {node.op_type} is not a runtime task")
    return build(node, op_id, plan, stream)
