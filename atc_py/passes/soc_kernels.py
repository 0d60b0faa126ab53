"""Which dtype each kernel computes in on this SoC, from its platform data and the op's own rules: an fp32 op
whose kernel is built on a vector instruction the SoC offers in fp16 only (OpSpec.vector_intrinsics; Ascend310's
vexp and vln, [AICoreintrinsicDtypeMap]) computes in fp16 inside, as TBE casts around the instruction, so its
numbers carry fp16's rounding; an op with an implementation choice (OpSpec.inside_dtype: LayerNorm, and the
two-implementation kernels of ops/core/impl_modes.py) follows --op_select_implmode / --op_precision_mode. The node says
so in `_internal_dtype`, which the kernel (ops/core/execute.launch), its cost (OpSpec.launch_work), automatic fusion's
lowering rules and the .om's JSON show. The implementation choices are marked before automatic fusion
(mark_implementations), so a fused op computes as its own kernel would; the rest after it, as before."""
from __future__ import annotations

from ..ir.graph import Graph, all_graphs
from ..ops import get_op
from ..ops.core.impl_modes import mode_of
from ..platform.soc import SocSpec

INTERNAL_DTYPE = "_internal_dtype"


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
    return spec.inside_dtype(dtype, soc, mode_of(spec, node.attrs)) if spec else None


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


def mark_implementations(graph: Graph, soc: SocSpec) -> int:
    """Marks the nodes (of graph and its subgraphs) whose implementation mode makes them compute in another dtype
    (ops with OpSpec.impl_default): before automatic fusion, whose lowering rules read the mark. Returns how many."""
    marked = 0
    for g in all_graphs(graph):
        for node in g.nodes:
            spec = get_op(node.op_type)
            if spec is None or spec.impl_default is None or not node.outputs:
                continue
            inside = spec.inside_dtype(node.outputs[0].desc.dtype, soc, mode_of(spec, node.attrs))
            if inside is not None:
                node.attrs[INTERNAL_DTYPE] = inside
                marked += 1
    return marked
