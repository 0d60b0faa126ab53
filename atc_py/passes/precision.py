"""--precision_mode: which dtype each op computes in, decided per op before constant folding (so weight casts
fold into fp16 constants).

* allow_fp32_to_fp16, allow_mix_precision: cube ops (convolutions, matmuls) take fp16 inputs, accumulate
  in fp32 and produce fp16; a Cast back to fp32 follows so the graph around them keeps its dtypes (vector
  ops keep fp32, which they support).
* force_fp16 (ATC's default: "fp16 for every op that supports both"): the same, then every other op that
  supports fp16 (Relu, Add, BN, pooling, Softmax, ...) computes in fp16 too, cube ops or not: each Cast back
  to fp32 moves down through such ops, and an op fed fp32 from elsewhere (a graph input, an fp32-only op) gets
  a Cast to fp16 in front, so chains run in fp16 and the Cast pairs between them vanish. Graph inputs and
  outputs keep their dtypes: a Cast stays at each end (--output_type decides the outputs).
* cube_fp16in_fp32out: fp16 inputs, fp32 accumulation and output (no Cast after).
* must_keep_origin_dtype, force_fp32: every op in its model dtype.
The chosen dtypes are the tensor descs in the .om (ModelDef op input/output descs) plus `_precision_mode`
on each rewritten node."""
from __future__ import annotations

from ..common.errors import AtcError
from ..ir.graph import Graph, Node, Value
from ..ops import get_op
from ..ops.core.infer import infer_node
from ..options.precision import CUBE_OPS, MIX_MODES, MixList

FP16_CUBE = {"force_fp16", "allow_fp32_to_fp16", "allow_mix_precision", "allow_mix_precision_fp16",
             "allow_mix_precision_bf16", "allow_fp32_to_bf16"}
BF16_MODES = {"allow_mix_precision_bf16", "allow_fp32_to_bf16"}
_LOW = ["float16"]   # the reduced-precision dtype of the current apply_precision: fp16, or bf16 for the bf16 modes


def apply_precision(graph: Graph, mode: str, mix: MixList | None = None, keep: frozenset = frozenset()
                    ) -> tuple[int, int]:
    """Rewrite ops per `mode`; returns how many cube (white-list) ops and how many other ops now compute in fp16.
    `keep`: names of nodes kept in their model dtype (--keep_dtype)."""
    if mode not in FP16_CUBE and mode != "cube_fp16in_fp32out":
        return 0, 0
    _LOW[0] = "bfloat16" if mode in BF16_MODES else "float16"
    try:
        return _apply(graph, mode, mix or MixList(),
                      keep | quantized_region(graph) | coordinate_region(graph) | selection_region(graph))
    finally:
        _LOW[0] = "float16"


QUANT_EDGES = {"AscendQuantV2", "AscendAntiQuantV2", "AscendRequant", "DynamicQuantizeLinear"}
VIEWS = {"Reshape", "TransposeD", "Identity", "Squeeze", "Unsqueeze", "Flatten", "ExpandDims"}


def quantized_region(graph: Graph) -> frozenset:
    """The quantized graph's ops (a QDQ model's dequantize -> op -> quantize sections) and the quant ops
    themselves: they keep their model dtype in every precision mode. An fp16 cube op on dequantized int8 values, or
    a quantize of an fp16-rounded value, moves results across rounding boundaries of the next quantization by a
    step; fp32 keeps the arithmetic the framework's reference does (int8 values times fp32 scales)."""
    def upstream_quant(v: Value | None) -> bool:
        for _ in range(64):
            if v is None or v.producer is None:
                return False
            if v.producer.op_type in QUANT_EDGES or (v.producer.op_type in CUBE_OPS and v.desc.dtype == "int32"):
                return True     # (an int8 cube op's int32 sums: MatMulInteger / ConvInteger)
            if v.producer.op_type not in VIEWS and v.producer.op_type != "Cast":
                return False
            v = v.producer.inputs[0]
        return False

    def downstream_quant(v: Value) -> bool:
        todo, seen = [v], 0
        while todo and seen < 256:
            cur = todo.pop()
            seen += 1
            for c, _ in cur.consumers:
                if c.op_type in QUANT_EDGES:
                    return True
                if c.op_type in VIEWS:
                    todo.extend(c.outputs)
        return False
    names = set()
    for node in graph.nodes:
        if node.op_type in QUANT_EDGES or any(upstream_quant(v) for v in node.inputs) or \
                any(downstream_quant(v) for v in node.outputs):
            names.add(node.name)
    return frozenset(names)


SAMPLERS = {"GridSampler2D": 1, "GridSampler3D": 1}   # op type -> its coordinate (grid) input
COORD_OPS = {"Add", "Sub", "Mul", "RealDiv", "Div", "Neg", "Maximum", "Minimum", "ConcatD", "SplitD", "Reshape",
             "TransposeD", "StridedSliceD", "Unsqueeze", "Squeeze", "ExpandDims", "Identity", "Cast"}


def coordinate_region(graph: Graph) -> frozenset:
    """Sampling coordinates and the arithmetic that builds them keep their dtype: a grid sampler's grid input and
    the elementwise ops computing it (a mesh plus accumulated flow in RAFT's refinement loop, normalised to
    [-1, 1]), and the elementwise ops that read those values (the last update added after the last sampling, the
    flow taken back out as coords1 - coords0). In fp16 a coordinate of 100 moves in steps of 1/16 pixel, and an iterative model adds
    the rounding up every step (RAFT: 1.8 % of the flow's scale in fp16 against 0.26 % with these in fp32,
    torch's autocast 0.25 %). The samplers themselves run in fp32, as in torch's autocast (a bilinear weight
    from an fp16 coordinate is as coarse); the convolutions around them stay fp16."""
    region: set[int] = set()
    todo = [n.inputs[i] for n in graph.nodes for t, i in SAMPLERS.items() if n.op_type == t and len(n.inputs) > i]
    while todo:
        v = todo.pop()
        p = v.producer if v is not None else None
        if p is None or id(p) in region or p.op_type not in COORD_OPS:
            continue
        region.add(id(p))
        todo.extend(p.inputs)
    grew = True
    while grew:      # elementwise readers of region values
        grew = False
        for node in graph.nodes:
            if id(node) in region or node.op_type not in COORD_OPS:
                continue
            ins = [v for v in node.inputs if v is not None]
            if any(v.producer is not None and id(v.producer) in region for v in ins):
                region.add(id(node))
                grew = True
    samplers = {id(n) for n in graph.nodes if n.op_type in SAMPLERS}
    return frozenset(n.name for n in graph.nodes if id(n) in region or id(n) in samplers)


# selection ops -> the inputs whose values they decide on (order, threshold, suppression)
SELECTORS = {"TopK": (0,), "TopKV2": (0,), "TopKV3": (0,), "NonMaxSuppressionV6": (0, 1), "ArgMaxD": (0,),
             "ArgMinD": (0,), "Greater": (0, 1), "GreaterEqual": (0, 1), "Less": (0, 1), "LessEqual": (0, 1)}
SCORE_OPS = COORD_OPS | {"Exp", "Log", "Sqrt", "Sigmoid", "SoftmaxV2", "ClipByValue", "GatherV2D", "GatherNd",
                         "StridedSliceV2", "Flatten", "Pow"}
CONTROL = {"If", "Case", "While", "PartitionedCall"}


def _selects(graph: Graph) -> bool:
    return any(n.op_type in SELECTORS or (n.subgraphs and any(_selects(g) for g in n.subgraphs.values()))
               for n in graph.nodes)


def selection_region(graph: Graph) -> frozenset:
    """The arithmetic a selection decides on keeps its dtype: the float values a top-k, a non-maximum suppression,
    an arg-max or a threshold comparison reads (a control op's float inputs when its branches hold one: a detector's
    batched NMS inside an If), and the elementwise ops, softmaxes and moves computing them back to the cube op that
    feeds them — a detector's score arithmetic (sigmoid, FCOS's centerness product and sqrt, a softmax over classes)
    and its box decoding (exp of the size codes, anchor offsets, clipping). In fp16 near-equal scores tie or swap
    and a decoded corner moves by up to 1/32 pixel at 64; torch's autocast runs exp, softmax and anything mixed with
    fp32 anchors in fp32 too. The heads' convolutions stay fp16."""
    region: set[int] = set()
    todo = []
    for n in graph.nodes:
        if n.op_type in SELECTORS:
            todo += [n.inputs[i] for i in SELECTORS[n.op_type] if i < len(n.inputs)]
        elif n.op_type in CONTROL and any(_selects(g) for g in n.subgraphs.values()):
            todo += list(n.inputs)
    while todo:
        v = todo.pop()
        p = v.producer if v is not None and v.desc.dtype == "float32" else None
        if p is None or id(p) in region or p.op_type not in SCORE_OPS:
            continue
        region.add(id(p))
        todo.extend(p.inputs)
    return frozenset(n.name for n in graph.nodes if id(n) in region)


def _apply(graph: Graph, mode: str, mix: MixList, keep: frozenset) -> tuple[int, int]:
    white = mix.white if mode in MIX_MODES else frozenset(CUBE_OPS)
    changed = 0
    for node in list(graph.nodes):
        if node.op_type not in white or node.name in keep or node.op_type in mix.black or \
                node.outputs[0].desc.dtype != "float32" or (node.op_type not in CUBE_OPS and not _fp16_capable(node)):
            continue
        for i, v in enumerate(node.inputs):
            if v is not None and v.desc.dtype == "float32":
                _cast_input(graph, node, i)
        node.attrs["_precision_mode"] = mode
        infer_node(node)   # cube_fp16in_fp32out keeps an fp32 output (infer_node honours the attribute)
        if mode != "cube_fp16in_fp32out":
            _cast_output_back(graph, node)
        changed += 1
    moved = 0
    if mode == "force_fp16":
        moved = sink_fp16_casts(graph, keep)
    elif mode in MIX_MODES:
        moved = sink_fp16_casts(graph, keep | {n.name for n in graph.nodes if n.op_type in mix.black}, follow=True)
    graph.topo_sort()
    return changed, moved


def compute_in(graph: Graph, low: dict[str, str], reason: str) -> int:
    """Nodes named in `low` (name -> float16 | bfloat16) compute in that dtype whatever the precision mode
    (--customize_dtypes, --op_precision_mode keep_fp16): fp32 inputs through a Cast, a Cast back after. Returns
    how many nodes moved; a node whose kernel lacks the dtype stays as it is (as ATC ignores such an entry)."""
    moved = 0
    for node in list(graph.nodes):
        dtype = low.get(node.name)
        if dtype is None or not node.outputs or node.outputs[0].desc.dtype != "float32":
            continue
        spec = get_op(node.op_type)
        if spec is None or spec.task_kind != "kernel" or dtype not in spec.dtypes or \
                {"dtype", "dst_type"} & set(node.attrs):
            continue
        for i, v in enumerate(node.inputs):
            if v is not None and v.desc.dtype == "float32":
                _cast_input(graph, node, i, dtype)
        node.attrs["_precision_mode"] = reason
        infer_node(node)
        if node.outputs[0].desc.dtype == dtype:
            _cast_output_back(graph, node)
        moved += 1
    graph.topo_sort()
    return moved


SATURATE = "_saturate_fp16"   # a Cast the precision mode inserted: a constant it folds saturates (fp16_fold.py)


def _cast_input(graph: Graph, node: Node, i: int, dtype: str | None = None) -> None:
    """Input i of node through a new Cast to fp16 (a constant's folds into an fp16 constant)."""
    v = node.inputs[i]
    dtype = dtype or _LOW[0]
    cast = graph.add_node(graph.unique_name(f"{node.name}_in{i}_{dtype[:4]}"), "Cast", [v], [v.desc],
                          {"dst_type": dtype, SATURATE: True})
    infer_node(cast)
    graph.set_input(node, i, cast.outputs[0])


def _cast_output_back(graph: Graph, node: Node) -> None:
    """The consumers of node's (fp16) output read it through a new Cast back to fp32."""
    out = node.outputs[0]
    consumers = list(out.consumers)
    back = graph.add_node(graph.unique_name(f"{node.name}_out_fp32"), "Cast", [out], [out.desc],
                          {"dst_type": "float32"})
    infer_node(back)
    for c, i in consumers:
        graph.set_input(c, i, back.outputs[0])


def _back_cast(v: Value | None) -> bool:
    """v is the output of a Cast from fp16 to fp32."""
    p = v.producer if v is not None else None
    return p is not None and p.op_type == "Cast" and v.desc.dtype == "float32" and p.inputs[0] is not None \
        and p.inputs[0].desc.dtype == _LOW[0]


def _fp16_capable(node: Node) -> bool:
    spec = get_op(node.op_type)
    # ops with side outputs nobody reads (LayerNorm's mean and variance) count by their first output; the precision
    # mode is the AI Core / AICPU kernels': a runtime or HCCL task (a collective) keeps the dtype the model gave it
    return (spec is not None and spec.task_kind == "kernel"
            and node.op_type not in ("Cast", "Data", "Const", "NetOutput") and node.outputs
            and not any(v.consumers for v in node.outputs[1:])
            and node.outputs[0].desc.dtype == "float32" and _LOW[0] in spec.dtypes
            and not {"dtype", "dst_type"} & set(node.attrs))


def _to_fp16(graph: Graph, node: Node) -> bool:
    """Feed node fp16 (through the Casts back; other fp32 values, constants included, through a new Cast to
    fp16 — constants' fold); True if it now runs in fp16."""
    floats = [(i, v) for i, v in enumerate(node.inputs) if v is not None and v.desc.dtype == "float32"]
    if not floats:
        return False
    before = list(node.inputs)
    for i, v in floats:
        if _back_cast(v):
            graph.set_input(node, i, v.producer.inputs[0])
        else:
            _cast_input(graph, node, i)
    try:
        infer_node(node)
        ok = node.outputs[0].desc.dtype == _LOW[0]
    except AtcError:
        ok = False
    if not ok:   # the prototype does not take fp16 here: put the fp32 inputs back
        for i, v in enumerate(before):
            graph.set_input(node, i, v)
        infer_node(node)
    return ok


def sink_fp16_casts(graph: Graph, keep: frozenset = frozenset(), follow: bool = False) -> int:
    """Every op that supports fp16 computes in it (force_fp16) — or, with `follow` (allow_mix_precision's gray
    ops), every such op fed by an fp16 op: its fp32 inputs come through the Casts back (moved down below it) or
    through a new Cast to fp16; then drop Cast fp32->fp16 of a Cast fp16->fp32 (lossless round trip). Nodes in
    `keep` stay as they are. Returns how many ops moved to fp16; dead Casts go in dce."""
    moved = 0
    for node in list(graph.nodes):   # topological: a chain moves to fp16 in one sweep
        if node.name in keep or not _fp16_capable(node) or \
                (follow and not any(_back_cast(v) for v in node.inputs)) or not _to_fp16(graph, node):
            continue
        node.attrs["_precision_mode"] = "force_fp16"
        _cast_output_back(graph, node)
        moved += 1
    for node in list(graph.nodes):
        if node.op_type == "Cast" and node.outputs[0].desc.dtype == _LOW[0] and _back_cast(node.inputs[0]):
            graph.replace_all_uses(node.outputs[0], node.inputs[0].producer.inputs[0])
    return moved
