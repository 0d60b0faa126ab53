"""Tiling-dependent marking and the tiling-sink triple gate (GE dynamic_shape_partition.cc).

Marking: `_dynamic_tiling_depend_op = true` when a tiling-dependent input is connected and either not a
constant (after folding) or the node has an unknown shape. Gate, per marked node: (1) option
`ge.tiling_schedule_optimize == "1"`; (2) online only (`ge.buildGraphMode != "offline"`): the device
reports FEATURE_TYPE_MODEL_TASK_UPDATE; (3) the op registers the TILING_ON_AICPU placement. Pass →
`_tiling_sink_op = true` (stays static); fail → `_force_unknown_shape = true` (goes dynamic). A marked op
without the HOST placement fails the build, as GE's assert does.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..common.errors import AtcError
from ..ir.graph import Graph, Node, subgraphs_of
from ..ops import get_op
from ..ops.core.base import HOST, ON_AICPU

DYNAMIC_TILING_DEPEND_OP = "_dynamic_tiling_depend_op"
TILING_SINK_OP = "_tiling_sink_op"
FORCE_UNKNOWN_SHAPE = "_force_unknown_shape"
OP_EXEC_NEVER_TIMEOUT = "_op_exec_never_timeout"
FEATURE_TYPE_MODEL_TASK_UPDATE = "FEATURE_TYPE_MODEL_TASK_UPDATE"


@dataclass
class SinkDecision:
    node: str
    op_type: str
    sunk: bool
    reason: str

    def line(self) -> str:
        return f"{self.node} ({self.op_type}) {'sinks its tiling to AICPU' if self.sunk else 'goes dynamic'}: {self.reason}"


def mark_tiling_depend(graph: Graph) -> list[Node]:
    marked = []
    for node in graph.nodes:
        spec = get_op(node.op_type)
        if not spec.tiling_depend:
            continue
        unknown = any(not v.desc.known for v in list(node.inputs) + node.outputs if v is not None)
        for i in sorted(spec.tiling_depend):
            v = node.inputs[i] if i < len(node.inputs) else None
            if v is None:
                continue  # unconnected optional input: nothing to depend on
            if unknown or not v.is_const:
                node.attrs[DYNAMIC_TILING_DEPEND_OP] = True
                marked.append(node)
                break
    return marked


def gate(node: Node, enabled: bool, offline: bool, device) -> tuple[bool, str]:
    """`enabled`: --tiling_schedule_optimize=1; `offline`: an ATC build (no device to ask)."""
    spec = get_op(node.op_type)
    if not enabled:
        return False, "Tiling sink is not supported. If support is needed, configure the tiling_schedule_optimize option."
    if not offline:
        if device is None:
            raise AtcError("E19999", message="online build without a device: cannot query "
                                             f"{FEATURE_TYPE_MODEL_TASK_UPDATE}")
        if not device.get_capability(FEATURE_TYPE_MODEL_TASK_UPDATE):
            return False, f"tiling sink feature not support (device {device.soc_version} lacks " \
                          f"{FEATURE_TYPE_MODEL_TASK_UPDATE})"
    if ON_AICPU not in spec.tiling_placements:
        return False, "has no TILING_ON_AICPU placement"
    return True, "option on, " + ("offline build skips the device check" if offline else
                                  "device supports task update") + ", TILING_ON_AICPU registered"


def decide_tiling_sink(graph: Graph, enabled: bool, offline: bool = True, device=None) -> list[SinkDecision]:
    """The root graph's marked nodes go through the gate. Inside a control-flow subgraph tiling is not sunk
    (an UPDATE patching a kernel every iteration of a lowered loop is not what GE generates): a marked node
    there goes dynamic, and with it its control node (partition.py)."""
    decisions = []
    for sub in subgraphs_of(graph):
        for node in mark_tiling_depend(sub):
            node.attrs[FORCE_UNKNOWN_SHAPE] = True
            decisions.append(SinkDecision(node.name, node.op_type, False,
                                          "inside a control-flow subgraph: tiling sink is not applied there"))
    for node in mark_tiling_depend(graph):
        spec = get_op(node.op_type)
        if HOST not in spec.tiling_placements:
            raise AtcError("E19999", message=f"Node {node.name} ({node.op_type}) depends on input values for tiling "
                                             f"but does not support TILING_ON_HOST; the dynamic-shape partition fails")
        ok, reason = gate(node, enabled, offline, device)
        if ok:
            node.attrs[TILING_SINK_OP] = True
            if node.attrs.get(OP_EXEC_NEVER_TIMEOUT):
                raise AtcError("E10055", reason=f"node {node.name} ({node.op_type}) sinks its tiling "
                                                f"(tiling_schedule_optimize=1) and sets {OP_EXEC_NEVER_TIMEOUT}; "
                                                "tiling-sink operators do not support the never-timeout attribute")
        else:
            node.attrs[FORCE_UNKNOWN_SHAPE] = True
        decisions.append(SinkDecision(node.name, node.op_type, ok, reason))
    return decisions


def summary_line(decisions: list[SinkDecision]) -> str:
    sunk = [d for d in decisions if d.sunk]
    forced = [d for d in decisions if not d.sunk]
    text = f"tiling sink: {len(sunk)} ops sunk, {len(forced)} forced dynamic"
    if forced:
        text += ": " + "; ".join(f"{d.node} ({d.op_type}) {short_reason(d.reason)}" for d in forced)
    return text


def short_reason(reason: str) -> str:
    if reason.startswith("Tiling sink is not supported"):
        return "tiling_schedule_optimize is not 1"
    return reason
