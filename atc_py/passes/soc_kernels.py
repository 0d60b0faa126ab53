"""What a SoC's vector unit can compute, from its platform data: an fp32 op whose kernel needs an intrinsic the
SoC offers in fp16 only computes in fp16 inside (TBE casts around the instruction: Ascend310's vexp and vln take
float16 only, [AICoreintrinsicDtypeMap]), so its numbers carry fp16's rounding. The node says so in
`_internal_dtype`, which the kernel (ops/execute.launch), its cost (OpSpec.launch_work) and the .om's JSON show.

Where the kernel has an implementation choice (--op_select_implmode, --op_precision_mode), the same attribute
carries it. LayerNorm follows TBE's rule: fp16 input computes in fp32 when the SoC has fp32 vexp and the mode is
high_performance, or when the mode is high_precision; otherwise in fp16 (Ascend310 by default)."""
from __future__ import annotations

from ..ir.graph import Graph, all_graphs
from ..platform.soc import SocSpec

INTERNAL_DTYPE = "_internal_dtype"
# op type -> the vector intrinsics its kernel is built on (the transcendental ones: the SoCs differ there)
OP_INTRINSICS = {
    "Exp": ("vexp",), "Log": ("vln",), "Sigmoid": ("vexp",), "Tanh": ("vexp",), "SoftmaxV2": ("vexp",),
    "LogSoftmaxV2": ("vexp", "vln"), "Swish": ("vexp",), "Elu": ("vexp",), "Selu": ("vexp",),
    "Softplus": ("vexp", "vln"), "Mish": ("vexp", "vln"), "Pow": ("vexp", "vln"), "Gelu": ("vexp",),
    "GeluV2": ("vexp",), "Erf": ("vexp",),
}


def intrinsic_dtypes(soc: SocSpec, intrinsic: str) -> set[str] | None:
    """The dtypes the SoC's AI Core offers `intrinsic` in; None when its platform data does not list it."""
    for line in soc.raw.get("AICoreintrinsicDtypeMap", {}).values():
        name, _, dtypes = line.partition("|")
        if name == f"Intrinsic_{intrinsic}":
            return {d.strip() for d in dtypes.split(",") if d.strip()}
    return None


def fp32_computes_in_fp16(soc: SocSpec, op_type: str) -> bool:
    listed = [intrinsic_dtypes(soc, i) for i in OP_INTRINSICS.get(op_type, ())]
    return any(d is not None and "float32" not in d and "float16" in d for d in listed)


DEFAULT_IMPL_MODE = "high_performance"      # ATC's --op_select_implmode default
FP32_INSIDE = "float32"                      # what our LayerNorm kernel computes fp16 in unless told otherwise


def layer_norm_compute_dtype(soc: SocSpec, mode: str) -> str:
    """TBE LayerNorm on fp16 input: fp32 inside if (fp32 vexp and high_performance) or high_precision."""
    vexp = intrinsic_dtypes(soc, "vexp")
    has_fp32_vexp = vexp is None or "float32" in vexp
    return "float32" if (has_fp32_vexp and mode == DEFAULT_IMPL_MODE) or mode == "high_precision" else "float16"


def _internal_dtype(soc: SocSpec, node) -> str | None:
    dtype = node.outputs[0].desc.dtype if node.outputs else ""
    if dtype == "float32" and fp32_computes_in_fp16(soc, node.op_type):
        return "float16"
    if dtype == "float16" and node.op_type == "LayerNorm":
        mode = node.attrs.get("_op_impl_mode") or DEFAULT_IMPL_MODE
        inside = layer_norm_compute_dtype(soc, mode)
        # marked when it is not what the kernel does anyway, or when the user asked for high precision
        return inside if inside != FP32_INSIDE or mode == "high_precision" else None
    return None


def mark_internal_fp16(graph: Graph, soc: SocSpec) -> int:
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
