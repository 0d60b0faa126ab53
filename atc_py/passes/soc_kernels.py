"""Which dtype each kernel computes in on this SoC, from its platform data and the op's own rules: an fp32 op
whose kernel is built on a vector instruction the SoC offers in fp16 only (OpSpec.vector_intrinsics; Ascend310's
vexp and vln, [AICoreintrinsicDtypeMap]) computes in fp16 inside, as TBE casts around the instruction, so its
numbers carry fp16's rounding; an op with an implementation choice (OpSpec.inside_dtype: LayerNorm) follows
--op_select_implmode / --op_precision_mode. The node says so in `_internal_dtype`, which the kernel
(ops/execute.launch), its cost (OpSpec.launch_work) and the .om's JSON show."""
from __future__ import annotations

from ..ir.graph import Graph, all_graphs
from ..ops import get_op
from ..platform.soc import SocSpec

INTERNAL_DTYPE = "_internal_dtype"
DEFAULT_IMPL_MODE = "high_performance"      # ATC's --op_select_implmode default


def fp32_computes_in_fp16(soc: SocSpec, op_type: str) -> bool:
    spec = get_op(op_type)
    listed = [soc.intrinsic_dtypes(i) for i in (spec.vector_intrinsics if spec is not None else ())]
    return any(d is not None and "float32" not in d and "float16" in d for d in listed)


def layer_norm_compute_dtype(soc: SocSpec, mode: str) -> str:
    """What TBE's LayerNorm computes fp16 input in (None from inside_dtype: fp32, the kernel's default)."""
    return get_op("LayerNorm").inside_dtype("float16", soc, mode) or "float32"


def _internal_dtype(soc: SocSpec, node) -> str | None:
    dtype = node.outputs[0].desc.dtype if node.outputs else ""
    if dtype == "float32" and fp32_computes_in_fp16(soc, node.op_type):
        return "float16"
    spec = get_op(node.op_type)
    return spec.inside_dtype(dtype, soc, node.attrs.get("_op_impl_mode") or DEFAULT_IMPL_MODE) if spec else None


def mark_internal_dtypes(graph: Graph, soc: SocSpec) -> int:
    """Marks the nodes (of graph and its subgraphs) that compute in another dtype inside on this SoC (with their
    implementation mode); returns how many."""
    marked = 0
    for g in all_graphs(graph):
        for node in g.nodes:
            inside = _internal_dtype(soc, node)
            if inside is not None:
                node.attrs[INTERNAL_DTYPE] = inside
                marked += 1
    return marked
