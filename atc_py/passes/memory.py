"""Memory plan: feature-map offsets for every non-constant tensor, weight offsets for constants.

This is the simple correct plan (no reuse: every tensor owns its range); lifetime reuse replaces
`plan_feature_map` later without changing the MemoryPlan interface. View ops (Reshape, Flatten)
share their input's range, as GE's no-task ops do.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.graph import Graph, Value
from ..ops import get_op

MEM_ALIGN = 512            # GE MEM_ALIGN_SIZE
WEIGHTS_START_OFFSET = 512  # GE kWeightsStartOffset
FEATURE_MAP_BASE = 0x1_0000_0000   # logical base of the feature map (ModelDef attr task_gen_base_addr)
WEIGHT_BASE = 0x2_0000_0000        # logical base of the weights (ModelDef attr task_gen_weight_addr)


def align(n: int, a: int = MEM_ALIGN) -> int:
    return -(-n // a) * a


@dataclass
class MemoryPlan:
    fm_offset: dict[int, int] = field(default_factory=dict)       # id(Value) -> feature-map offset
    weight_offset: dict[int, int] = field(default_factory=dict)   # id(Value) -> weights offset
    workspace: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # node -> [(offset, size)]
    memory_size: int = 0
    weight_size: int = 0
    weights: bytes = b""

    def has(self, v: Value) -> bool:
        return id(v) in self.weight_offset or id(v) in self.fm_offset

    def address(self, v: Value) -> int:
        if id(v) in self.weight_offset:
            return WEIGHT_BASE + self.weight_offset[id(v)]
        return FEATURE_MAP_BASE + self.fm_offset[id(v)]

    def workspace_addresses(self, node_name: str) -> list[int]:
        return [FEATURE_MAP_BASE + off for off, _ in self.workspace.get(node_name, [])]

    def is_weight(self, v: Value) -> bool:
        return id(v) in self.weight_offset


def plan_weights(graph: Graph, plan: MemoryPlan) -> None:
    blob = bytearray()
    offset = WEIGHTS_START_OFFSET
    for node in graph.nodes:
        if node.op_type != "Const" or not node.outputs[0].consumers:
            continue
        v = node.outputs[0]
        data = np.ascontiguousarray(v.data).tobytes()
        plan.weight_offset[id(v)] = offset
        blob.extend(b"\0" * (offset - WEIGHTS_START_OFFSET - len(blob)))
        blob.extend(data)
        offset = align(offset + max(len(data), 1))
    plan.weights = bytes(b"\0" * WEIGHTS_START_OFFSET + blob) if blob else b""
    plan.weight_size = len(plan.weights)


def plan_feature_map(graph: Graph, plan: MemoryPlan, workspaces: dict[str, list[int]]) -> None:
    offset = 0
    for node in graph.nodes:
        spec = get_op(node.op_type)
        if node.op_type == "Const":
            continue
        for k, v in enumerate(node.outputs):
            src = node.inputs[0] if spec.no_task and node.op_type not in ("Data",) and node.inputs else None
            if src is not None and id(src) in plan.fm_offset:
                plan.fm_offset[id(v)] = plan.fm_offset[id(src)]  # view: alias the input
                continue
            if src is not None and id(src) in plan.weight_offset:
                plan.weight_offset[id(v)] = plan.weight_offset[id(src)]
                continue
            plan.fm_offset[id(v)] = offset
            offset = align(offset + max(v.desc.nbytes, 1))
        ws = []
        for size in workspaces.get(node.name, []):
            ws.append((offset, size))
            offset = align(offset + max(size, 1))
        if ws:
            plan.workspace[node.name] = ws
    plan.memory_size = offset


def plan_weights_only(graph: Graph) -> MemoryPlan:
    """For graphs the host executor runs (unknown subgraphs): weights are placed, activations are not."""
    plan = MemoryPlan()
    plan_weights(graph, plan)
    return plan


def plan_memory(graph: Graph, workspaces: dict[str, list[int]]) -> MemoryPlan:
    plan = MemoryPlan()
    plan_weights(graph, plan)
    plan_feature_map(graph, plan, workspaces)
    return plan
