"""The HCCL task of a collective, as GE's HcomOpsKernelBuilder::GenerateTask writes it (hicann/ge
compiler/engines/hccl_engine/hcom_graph_adaptor/ge_plugin/hcom/hcom_ops_kernel_builder.cc): one TaskDef of type
RT_MODEL_TASK_HCCL on the op's stream with kernel_hccl {op_index: the op's id, hccl_type: its op type}. Its tensors
are addressed through the op's own input and output offsets (OpDef input_i / output_i), not through args.
Not written: private_def (HCCL's HCCL_KERNEL_INFO_PRIVATE_DEF, which only HCCL's runtime reads) and aiv_block_dim
(GE leaves it unset in an offline build). The op's attributes gain what GE's builder sets on it: its ops kernel
library and _hccl_group_id_list (the group it communicates in)."""
from __future__ import annotations

from ..ir.graph import Node
from ..om import task_types as tt
from ..ops.hccl import WORLD_GROUP
from ..passes.memory import MemoryPlan
from ..proto import task_pb2

HCCL_GROUP_LIST = "_hccl_group_id_list"


def hccl_tasks(node: Node, op_id: int, plan: MemoryPlan, stream: int, attrs: dict) -> list[task_pb2.TaskDef]:
    """The collective's one task; `attrs` (the op's task-generation attributes) gets its kernel library and group."""
    attrs.update({"_ge_attr_op_kernel_lib_name": tt.ENGINE_LIB_NAME["HCCL"],
                  HCCL_GROUP_LIST: [str(node.attrs.get("group", WORLD_GROUP))]})
    return [task_pb2.TaskDef(type=tt.HCCL, stream_id=stream,
                             kernel_hccl=task_pb2.KernelHcclDef(op_index=op_id, hccl_type=node.op_type))]
