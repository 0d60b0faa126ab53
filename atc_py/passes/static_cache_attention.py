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
  scaled = Mul(scores, c) or RealDiv(scores, c) or scores                          (c a scalar constant)
  logits = Add(scaled, mask), or Mul / RealDiv(Add(scaled, mask), c) with c > 0 (the mask added before the scale)
  probs  = SoftmaxV2(logits, axes -1);  out = BatchMatMulV2(probs, V [B,N,S,D])
  mask   = [B,1,1,S], hiding exactly the keys past the integer position P (attention_mask.py reads its forms:
           Select, (1 - Cast(cmp)) * min, Cast(cmp) * min, ... and decides whether the masked weights are exactly 0)
Q, K and V have the same heads (IncreFlashAttention takes no grouped KV heads here).

A softmax over one query's [B,N,1,S] scores read by a matmul with the values is a decode attention: when it does not
match, the build summary says why, one line per attention (Lowering.unfused).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..ir.graph import Graph, Node, TensorDesc, Value
from .attention_mask import match_length_mask
from .prune import remove_dead_nodes

TRANSPOSE_LAST_TWO = [0, 1, 3, 2]
SCALES = ("Mul", "RealDiv", "Div")


@dataclass(frozen=True)
class Unfused:
    """A decode attention over a static cache left as it is, and why (the build summary prints one line each)."""
    node: str
    reason: str


@dataclass
class Lowering:
    count: int = 0
    unfused: list[Unfused] = field(default_factory=list)


@dataclass(frozen=True)
class _Match:
    q: Value
    k: Value
    v: Value
    scale: float
    position: Value
    out: Node


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


def _flag(node: Node, *names: str) -> bool:
    return any(bool(node.attrs.get(n)) for n in names)


def _scale_of(v: Value) -> tuple[Value, str, float] | None:
    """(x, op, c) when v = Mul(x, c), Mul(c, x) or RealDiv(x, c) with c a scalar constant."""
    op = _producer(v, *SCALES)
    if op is None:
        return None
    x, c = op.inputs[:2]
    if op.op_type == "Mul" and _scalar(c) is None:
        x, c = c, x
    factor = _scalar(c)
    if factor is None or x is None or x.is_const:
        return None
    return x, "Mul" if op.op_type == "Mul" else "RealDiv", factor


def _scores(v: Value, out: Node) -> tuple[Value, Value, float] | str | None:
    """(Q, K, scale) when v is Q K^T, optionally scaled; None when v is not a matmul at all (the mask's side)."""
    scale = 1.0
    scaled = _scale_of(v)
    if scaled is not None:
        v, op, factor = scaled
        if factor == 0 or not math.isfinite(factor):
            return f"the scores are scaled by {factor:g}"
        scale = factor if op == "Mul" else 1.0 / factor
    mm = _producer(v, "BatchMatMulV2")
    if mm is None:
        return None
    if _flag(mm, "adj_x1"):
        return f"the score matmul {mm.name} transposes the query"
    q, k = mm.inputs[0], mm.inputs[1]
    if not _flag(mm, "adj_x2"):
        tr = _producer(k, "TransposeD")
        if tr is None or list(tr.attrs.get("perm", [])) != TRANSPOSE_LAST_TWO:
            return f"the score matmul {mm.name} does not take the keys transposed (perm 0,1,3,2)"
        k = tr.inputs[0]
    val = out.inputs[1]
    if q is None or k is None or val is None:
        return f"the score matmul {mm.name} lacks an input"
    qs, ks, vs = tuple(q.desc.shape), tuple(k.desc.shape), tuple(val.desc.shape)
    if len(qs) != 4 or qs[2] != 1 or len(ks) != 4 or qs[:2] != ks[:2] or qs[3] != ks[3]:
        return f"query {list(qs)} and keys {list(ks)} are not [B,N,1,D] and [B,N,S,D]"
    if ks != vs:
        return f"keys {list(ks)} and values {list(vs)} differ (IncreFlashAttention takes no grouped KV heads here)"
    return q, k, scale


def _match(sm: Node) -> _Match | str | None:
    """The attention the softmax belongs to, or why it stays as it is; None when the softmax is not the weights
    of one query attending a static cache ([B,N,1,S] scores read by a matmul with the values)."""
    x = sm.inputs[0]
    shape = tuple(x.desc.shape)
    if len(shape) != 4 or shape[2] != 1 or not x.desc.known:
        return None
    readers = sm.outputs[0].consumers
    out = next((n for n, i in readers if n.op_type == "BatchMatMulV2" and i == 0), None)
    if out is None:
        return None
    b, _, _, s = shape
    if list(sm.attrs.get("axes", [-1])) not in ([-1], [3]):
        return f"the softmax is over axes {list(sm.attrs.get('axes'))}, not the keys"
    if len(readers) != 1:
        return f"the attention weights are read by {len(readers)} ops (IncreFlashAttention gives only the output)"
    if _flag(out, "adj_x1", "adj_x2"):
        return f"the output matmul {out.name} transposes an input"
    post, summed = None, x
    scaled = _scale_of(x)
    if scaled is not None and _producer(scaled[0], "Add") is not None:
        summed, op, factor = scaled
        if not (math.isfinite(factor) and factor > 0):
            return f"the masked scores are scaled by {factor:g} ({op}): the mask no longer hides what it hid"
        post = (op, factor)
    add = _producer(summed, "Add")
    if add is None:
        return "no mask is added to the scores"
    if len(add.outputs[0].consumers) != 1:
        return f"the masked scores {add.name} are read by other ops too"
    reasons = []
    for scores, mask in ((add.inputs[0], add.inputs[1]), (add.inputs[1], add.inputs[0])):
        found = _scores(scores, out)
        if found is None:
            continue
        if isinstance(found, str):
            reasons.append(found)
            continue
        q, k, scale = found
        if post is not None:
            scale = scale * post[1] if post[0] == "Mul" else scale / post[1]
        length = match_length_mask(mask, b, s, add.outputs[0].desc.dtype, post)
        if isinstance(length, str):
            return length
        return _Match(q, k, out.inputs[1], scale, length.position, out)
    return reasons[0] if reasons else f"neither operand of {add.name} is the scores Q K^T"


def lower_static_cache_attention(graph: Graph) -> Lowering:
    """Replace each matched decode attention by IncreFlashAttention; returns how many, and the decode attentions
    left unfused with their reasons."""
    result = Lowering()
    for sm in [n for n in graph.nodes if n.op_type == "SoftmaxV2"]:
        found = _match(sm)
        if found is None:
            continue
        if isinstance(found, str):
            result.unfused.append(Unfused(sm.name, found))
            continue
        q, k, v, pos, out = found.q, found.k, found.v, found.position, found.out
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
                             {"num_heads": int(q.desc.shape[1]), "scale_value": float(found.scale),
                              "input_layout": "BNSD"})
        graph.replace_all_uses(out.outputs[0], ifa.outputs[0])
        result.count += 1
    if result.count:
        remove_dead_nodes(graph)
        graph.topo_sort()
    return result
