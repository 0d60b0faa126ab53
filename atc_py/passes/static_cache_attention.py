"""Decode attention over a static KV cache, as exporters write it, lowered to IncreFlashAttention, whose tiling can sink to the AICPU.

A decoder with a static cache attends one new token to all `S` cache positions and masks those past the token's
position: softmax(scale * Q K^T + mask) V with mask = Select(arange(S) <= position, 0, -big). Every shape is static,
so the model compiles static — but the work that matters (the positions actually filled) is data. With
`--tiling_schedule_optimize=1` the pattern becomes IncreFlashAttention(Q, K, V, actual_seq_lengths = position + 1):
its tiling depends on the lengths, which the device computes, so the tiling sinks to the AICPU (tiling_sink.py) and
the kernel covers the filled positions only. Without the option the decomposed ops stay (IFA would force the
model dynamic).

Matched, in the graph after folding (ONNX names in brackets):
  scores = BatchMatMulV2(Q [B,N,1,D], TransposeD(K [B,N,S,D], perm 0,1,3,2)) [MatMul(Q, Transpose(K))]
  scaled = Mul(scores, c) or Div(scores, c) or scores                               (c a scalar constant)
  probs  = SoftmaxV2(Add(scaled, mask), axes -1);  out = BatchMatMulV2(probs, V [B,N,S,D])
  mask   = Unsqueeze / Reshape of Select(LessEqual(arange(S), P), 0, m) with m <= -1e30 (or -inf, or the mask
           dtype's lowest: fp16 builds saturate the exporter's finfo.min to -65504) and P the
           integer position [B,1,1] (or GreaterEqual(P, arange(S)))
Q, K and V have the same heads (IncreFlashAttention takes no grouped KV heads here).
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Node, TensorDesc, Value
from .prune import remove_dead_nodes

MASKED_BELOW = -1e30      # a mask value at or below this is "not attended" (exporters write finfo.min or -inf)
TRANSPOSE_LAST_TWO = [0, 1, 3, 2]


def _producer(v: Value | None, *types: str) -> Node | None:
    if v is None or v.producer is None or v.producer.op_type not in types:
        return None
    return v.producer


def _scalar(v: Value | None) -> float | None:
    if v is None or not v.is_const:
        return None
    data = np.asarray(v.data)
    if data.size != 1 or data.dtype.kind not in "fiu":
        return None
    return float(data.reshape(-1)[0])


def _lowest(dtype: str) -> float:
    """The lowest finite value of a float mask's dtype: an fp16 build saturates finfo(float32).min to -65504
    (passes/fp16_fold), still "not attended"."""
    try:
        return float(np.finfo(np.dtype(dtype)).min)
    except (TypeError, ValueError):
        return MASKED_BELOW


def _flag(node: Node, *names: str) -> bool:
    return any(bool(node.attrs.get(n)) for n in names)


def _mask_position(mask: Value, s: int, b: int) -> Value | None:
    """P when `mask` is [B,1,1,S] = 0 where arange(S) <= P, a huge negative value elsewhere."""
    if tuple(mask.desc.shape) != (b, 1, 1, s):
        return None
    v = mask
    while v.producer is not None and v.producer.op_type in ("Unsqueeze", "Reshape", "ExpandDims"):
        v = v.producer.inputs[0]
    select = _producer(v, "Select", "SelectV2")
    if select is None or _scalar(select.inputs[1]) != 0.0:
        return None
    low = _scalar(select.inputs[2])
    if low is None or not (low <= MASKED_BELOW or low <= _lowest(select.outputs[0].desc.dtype)):
        return None
    cmp = _producer(select.inputs[0], "LessEqual", "GreaterEqual")
    if cmp is None:
        return None
    keys, pos = cmp.inputs[0], cmp.inputs[1]
    if cmp.op_type == "GreaterEqual":
        keys, pos = pos, keys
    if keys is None or pos is None or not keys.is_const or pos.is_const:
        return None
    row = np.asarray(keys.data)
    if row.shape[-1:] != (s,) or int(np.prod(row.shape)) != s or not np.array_equal(row.reshape(-1), np.arange(s)):
        return None
    if np.dtype(pos.desc.dtype).kind not in "iu" or int(np.prod(pos.desc.shape)) != b:
        return None
    return pos


def _match(sm: Node):
    """(Q, K, V, scale, position, the node whose output the attention is) or None."""
    axes = sm.attrs.get("axes", [-1])
    if list(axes) not in ([-1], [3]) or len(sm.outputs[0].consumers) != 1:
        return None
    out, _ = sm.outputs[0].consumers[0]
    if out.op_type != "BatchMatMulV2" or out.inputs[0] is not sm.outputs[0] or _flag(out, "adj_x1", "adj_x2"):
        return None
    add = _producer(sm.inputs[0], "Add")
    if add is None or len(add.outputs[0].consumers) != 1:
        return None
    for scaled, mask in ((add.inputs[0], add.inputs[1]), (add.inputs[1], add.inputs[0])):
        scale, scores = 1.0, scaled
        op = _producer(scaled, "Mul", "RealDiv", "Div")
        if op is not None:
            x, c = op.inputs
            if op.op_type == "Mul" and _scalar(c) is None:
                x, c = c, x
            factor = _scalar(c)
            if factor is None or factor == 0:
                continue
            scores, scale = x, (factor if op.op_type == "Mul" else 1.0 / factor)
        mm = _producer(scores, "BatchMatMulV2")
        if mm is None or _flag(mm, "adj_x1") or mm.outputs[0] is not scores:
            continue
        q, k = mm.inputs[0], mm.inputs[1]
        if not _flag(mm, "adj_x2"):
            tr = _producer(k, "TransposeD")
            if tr is None or list(tr.attrs.get("perm", [])) != TRANSPOSE_LAST_TWO:
                continue
            k = tr.inputs[0]
        v = out.inputs[1]
        if q is None or k is None or v is None:
            continue
        qs, ks, vs = tuple(q.desc.shape), tuple(k.desc.shape), tuple(v.desc.shape)
        if len(qs) != 4 or qs[2] != 1 or ks != vs or len(ks) != 4 or qs[:2] != ks[:2] or qs[3] != ks[3]:
            continue
        pos = _mask_position(mask, ks[2], qs[0])
        if pos is None:
            continue
        return q, k, v, scale, pos, out
    return None


def lower_static_cache_attention(graph: Graph) -> int:
    """Replace each matched decode attention by IncreFlashAttention; returns how many."""
    count = 0
    for sm in [n for n in graph.nodes if n.op_type == "SoftmaxV2"]:
        found = _match(sm)
        if found is None:
            continue
        q, k, v, scale, pos, out = found
        b = q.desc.shape[0]
        base = graph.unique_name(f"{out.name}_ifa")
        p64 = pos
        if pos.desc.dtype != "int64":
            p64 = graph.add_node(graph.unique_name(f"{base}_pos64"), "Cast", [pos],
                                 [TensorDesc(tuple(pos.desc.shape), "int64")], {"dst_type": "int64"}).outputs[0]
        one = graph.add_const(graph.unique_name(f"{base}_one"), np.array(1, np.int64))
        plus = graph.add_node(graph.unique_name(f"{base}_len"), "Add", [p64, one],
                              [TensorDesc(tuple(pos.desc.shape), "int64")]).outputs[0]
        shape = graph.add_const(graph.unique_name(f"{base}_shape"), np.array([b], np.int64))
        lens = graph.add_node(graph.unique_name(f"{base}_lens"), "Reshape", [plus, shape],
                              [TensorDesc((b,), "int64")], {"allowzero": 0}).outputs[0]
        d = out.outputs[0].desc
        ifa = graph.add_node(base, "IncreFlashAttention", [q, k, v, lens],
                             [TensorDesc(tuple(d.shape), d.dtype, d.format, d.origin_format)],
                             {"num_heads": int(q.desc.shape[1]), "scale_value": float(scale), "input_layout": "BNSD"})
        graph.replace_all_uses(out.outputs[0], ifa.outputs[0])
        count += 1
    if count:
        remove_dead_nodes(graph)
        graph.topo_sort()
    return count
