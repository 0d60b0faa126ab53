"""Engine assignment from op info: AI Core wins when both engines support the op, as GE's operator selection does."""
from __future__ import annotations

from ..common.errors import AtcError
from ..ir.graph import Graph, all_nodes
from ..ops import AICPU, get_op


def assign_engines(graph: Graph) -> dict[str, int]:
    """Every node of the graph and of its subgraphs; control flow and runtime (RTS) nodes run no kernel; a
    collective's engine is HCCL (its ops kernel library, not AI Core or AICPU)."""
    for node in all_nodes(graph):
        spec = get_op(node.op_type)
        if spec.no_task or spec.task_kind not in ("kernel", "hccl"):
            node.meta["engine"] = "NONE"
            continue
        dtypes = {v.desc.dtype for v in node.inputs if v is not None} | {v.desc.dtype for v in node.outputs}
        bad = sorted(d for d in dtypes if d not in spec.dtypes)
        if bad and aicpu_takes(spec, dtypes):
            # GE's fallback: no AI Core kernel for these dtypes, but CANN's AICPU kernels compute them
            node.meta.update({"engine": AICPU, "core_type": AICPU,
                              "fallback": f"dtype {', '.join(bad)}: no AI Core kernel ({', '.join(spec.dtypes)})"})
            continue
        if bad:
            raise AtcError("E10055", reason=f"Node {node.name} ({node.op_type}): dtype {', '.join(bad)} is not "
                                            f"supported by its kernel; supported: {', '.join(spec.dtypes)}")
        node.meta["engine"] = spec.engine
        node.meta["core_type"] = spec.core_type
    return engine_counts(graph)


# CANN's AICPU kernels (libcpu_kernels.so) cover the integer and float64 types for the math and matrix ops: the
# ops atc-py lets fall back there, each computed by its own kernel in that dtype (numpy: exact for integers)
AICPU_DTYPES = frozenset({"int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "float64",
                          "float32", "float16", "bool"})
AICPU_OPS = frozenset({"MatMulV2", "BatchMatMulV2", "Relu", "Add", "Sub", "Mul", "Maximum", "Minimum", "Neg",
                       "Abs", "Square", "ReduceSumD", "ReduceMaxD", "ReduceMinD"})


def aicpu_takes(spec, dtypes: set[str]) -> bool:
    return spec.op_type in AICPU_OPS and dtypes <= AICPU_DTYPES


def fallbacks(graph: Graph) -> list[dict]:
    """The nodes that fell back to AICPU, and why (the build summary)."""
    return [{"node": n.name, "op_type": n.op_type, "reason": n.meta["fallback"]}
            for n in all_nodes(graph) if "fallback" in n.meta]


def engine_counts(graph: Graph) -> dict[str, int]:
    """Ops per "engine/core type" (the build summary), from the engines assigned; an engine on no core (HCCL) by
    its name alone."""
    counts: dict[str, int] = {}
    for node in all_nodes(graph):
        if node.meta.get("engine", "NONE") != "NONE":
            core = node.meta["core_type"]
            key = node.meta["engine"] if core == "NONE" else f"{node.meta['engine']}/{core}"
            counts[key] = counts.get(key, 0) + 1
    return counts
