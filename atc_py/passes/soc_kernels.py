"""What a SoC's vector unit can compute, from its platform data: an fp32 op whose kernel needs an intrinsic the
SoC offers in fp16 only computes in fp16 inside (TBE casts around the instruction: Ascend310's vexp and vln take
float16 only, [AICoreintrinsicDtypeMap]), so its numbers carry fp16's rounding. The node says so in
`_internal_dtype`, which the kernel (ops/execute.launch) and the .om's JSON show."""
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


def mark_internal_fp16(graph: Graph, soc: SocSpec) -> int:
    """Marks the fp32 nodes (of graph and its subgraphs) that compute in fp16 on this SoC; returns how many."""
    marked = 0
    for g in all_graphs(graph):
        for node in g.nodes:
            if node.outputs and node.outputs[0].desc.dtype == "float32" and fp32_computes_in_fp16(soc, node.op_type):
                node.attrs[INTERNAL_DTYPE] = "float16"
                marked += 1
    return marked
