"""--precision_mode: which dtype each op computes in, decided per op before constant folding (so weight casts
fold into fp16 constants).

* force_fp16 (ATC's default), allow_fp32_to_fp16, allow_mix_precision: cube ops (convolutions, matmuls)
  take fp16 inputs, accumulate in fp32 and produce fp16; a Cast back to fp32 follows so the graph around
  them keeps its dtypes (vector ops stay fp32: our vector kernels support fp32).
* cube_fp16in_fp32out: fp16 inputs, fp32 accumulation and output (no Cast after).
* must_keep_origin_dtype, force_fp32: every op in its model dtype.
The chosen dtypes are the tensor descs in the .om (ModelDef op input/output descs) plus `_precision_mode`
on each rewritten node."""
from __future__ import annotations

from ..errors import AtcError
from ..ir.graph import Graph
from .infer import infer_node

CUBE_OPS = {"Conv2D", "Conv3D", "Conv2DTransposeD", "MatMulV2", "BatchMatMulV2"}
MODES = ("force_fp16", "force_fp32", "cube_fp16in_fp32out", "allow_mix_precision", "allow_fp32_to_fp16",
         "must_keep_origin_dtype", "allow_mix_precision_fp16", "allow_mix_precision_bf16", "allow_fp32_to_bf16")
FP16_CUBE = {"force_fp16", "allow_fp32_to_fp16", "allow_mix_precision", "allow_mix_precision_fp16"}
DEFAULT_MODE = "force_fp16"


def check_precision_mode(mode: str) -> str:
    mode = mode or DEFAULT_MODE
    if mode not in MODES:
        raise AtcError("E10001", value=mode, parameter="--precision_mode",
                       reason=f"The value must be one of {', '.join(MODES)}.")
    if "bf16" in mode:
        raise AtcError("E10055", reason=f"--precision_mode={mode}: bf16 is not supported by atc-py")
    return mode


def apply_precision(graph: Graph, mode: str) -> int:
    """Rewrite cube ops per `mode`; returns how many ops now compute in fp16."""
    if mode not in FP16_CUBE and mode != "cube_fp16in_fp32out":
        return 0
    changed = 0
    for node in list(graph.nodes):
        if node.op_type not in CUBE_OPS or node.outputs[0].desc.dtype != "float32":
            continue
        for i, v in enumerate(node.inputs):
            if v is not None and v.desc.dtype == "float32":
                cast = graph.add_node(graph.unique_name(f"{node.name}_in{i}_fp16"), "Cast", [v],
                                      [v.desc], {"dst_type": "float16"})
                infer_node(cast)
                graph.set_input(node, i, cast.outputs[0])
        node.attrs["_precision_mode"] = mode
        infer_node(node)   # cube_fp16in_fp32out keeps an fp32 output (infer_node honours the attribute)
        out = node.outputs[0]
        if mode != "cube_fp16in_fp32out":
            consumers = list(out.consumers)
            back = graph.add_node(graph.unique_name(f"{node.name}_out_fp32"), "Cast", [out], [out.desc],
                                  {"dst_type": "float32"})
            infer_node(back)
            for c, i in consumers:
                graph.set_input(c, i, back.outputs[0])
        changed += 1
    graph.topo_sort()
    return changed
