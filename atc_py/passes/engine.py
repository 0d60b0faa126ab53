"""Engine assignment from op info: AI Core wins when both engines support the op (seed 003)."""
from __future__ import annotations

from ..errors import AtcError
from ..ir.graph import Graph, all_nodes
from ..ops import get_op


def assign_engines(graph: Graph) -> dict[str, int]:
    """Every node of the graph and of its subgraphs; control flow and runtime (RTS) nodes run no kernel."""
    for node in all_nodes(graph):
        spec = get_op(node.op_type)
        if spec.no_task or spec.task_kind != "kernel":
            node.meta["engine"] = "NONE"
            continue
        dtypes = {v.desc.dtype for v in node.inputs if v is not None} | {v.desc.dtype for v in node.outputs}
        bad = sorted(d for d in dtypes if d not in spec.dtypes)
        if bad:
            raise AtcError("E10055", reason=f"Node {node.name} ({node.op_type}): dtype {', '.join(bad)} is not "
                                            f"supported by its kernel; supported: {', '.join(spec.dtypes)}")
        node.meta["engine"] = spec.engine
        node.meta["core_type"] = spec.core_type
    return engine_counts(graph)


def engine_counts(graph: Graph) -> dict[str, int]:
    """Ops per "engine/core type" (the build summary), from the engines assigned."""
    counts: dict[str, int] = {}
    for node in all_nodes(graph):
        if node.meta.get("engine", "NONE") != "NONE":
            key = f"{node.meta['engine']}/{node.meta['core_type']}"
            counts[key] = counts.get(key, 0) + 1
    return counts
