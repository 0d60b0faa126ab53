"""Length masks: whether the mask a decode attention adds to its scores hides exactly the cache positions past the
token's position, so that the masked softmax equals attention over the first position + 1 keys
(IncreFlashAttention's actual_seq_lengths).

Exporters write the mask in several forms; all of them are a function of one comparison of the position against the
row of cache positions arange(S), and this module reads any chain of these ops from that comparison to the Add:

  keys <= P, keys < P, keys > P, keys >= P (either operand order; P the integer position, possibly plus an integer
  constant, reshaped or cast to a type that holds every position exactly), LogicalNot, Cast, Select(cond, a, b),
  Add / Sub / Mul / RealDiv with a scalar constant, Neg, and reshapes that only add or drop unit axes.

  e.g. Select(keys <= P, 0, min), (1 - Cast(keys <= P)) * min, Cast(P < keys) * min, Cast(keys > P) * -1e9.

The chain has two inputs only (the comparison is true or false), so it is evaluated on both in the dtypes the graph
computes it in (fp16 builds round and overflow as the kernels do; 0 x -inf is NaN as it is on the device). The
comparison says which value an attended key gets; the scale the scores and the mask are multiplied by together, if
any, is applied as the graph applies it. Equivalence with IncreFlashAttention over keys 0..P then needs:

* the attended keys to be exactly keys 0..P (IFA's lengths P + 1): a mask admitting position P + 1 or hiding P is
  another attention (and its lengths could leave [1, S]);
* attended keys to get exactly 0 (not NaN: (1 - valid) * -inf is NaN where valid is 1), so their scores pass
  unchanged;
* masked keys to get a softmax weight of exactly 0. -inf does. A finite E does only while the masked score is less
  than |E| - L above the best attended one, L = -ln(half the dtype's smallest subnormal) (103.97 in float32, 17.33
  in float16): no finite mask does for every score. The recogniser takes E <= -65504, float16's lowest finite value
  (the strongest finite mask an fp16 build holds; exporters' finfo.min saturates to it there): then a masked key
  stays at 0 unless its score beats the attended ones by more than 65487 (fp16) / 65400 (fp32), beyond what scores
  in float16's range differ by in practice. A BERT-style -10000 gives way at a gap of 9983 / 9896, which scores in
  either dtype reach, so it stays unfused; so does a mask the shared scale shrinks above -65504 (in fp16,
  (scores + min) * 1/sqrt(d) leaves min * 1/sqrt(d)).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir.graph import Node, Value
from .fp16_fold import float32_to_float16

MASKED_AT_MOST = -65504.0    # float16's lowest finite value: the weakest finite "not attended" accepted
SHAPE_OPS = ("Unsqueeze", "Reshape", "ExpandDims", "Squeeze")
ARITH = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.true_divide, "Div": np.true_divide}
# keys OP position: which keys make it true, as (attended when true, offset t): the attended keys are 0..P + off + t
COMPARES = {"LessEqual": (True, 0), "Less": (True, -1), "Greater": (False, 0), "GreaterEqual": (False, -1)}
SWAPPED = {"LessEqual": "GreaterEqual", "Less": "Greater", "Greater": "Less", "GreaterEqual": "LessEqual"}


@dataclass(frozen=True)
class LengthMask:
    """The mask hides the keys past `position` (an integer tensor of B values): IFA attends position + 1 keys."""
    position: Value


def _scalar_const(v: Value | None) -> np.ndarray | None:
    if v is None or not v.is_const:
        return None
    data = np.asarray(v.data)
    return data.reshape(()) if data.size == 1 else None


def _finfo(dtype: np.dtype):
    """numpy's finfo, or ml_dtypes' for the types numpy has no finfo of (bfloat16)."""
    try:
        return np.finfo(dtype)
    except ValueError:
        import ml_dtypes
        return ml_dtypes.finfo(dtype)


def _underflow_gap(dtype: np.dtype) -> float:
    """L: exp(x) rounds to 0 in `dtype` for x below -L (half the smallest subnormal)."""
    return -math.log(float(_finfo(dtype).smallest_subnormal) / 2)


def _chain(mask: Value, rows: int, s: int) -> list[tuple[Node, int]] | str:
    """The ops from the comparison (first, with index -1) to the mask, each with the index of the input the chain
    enters by; or why the mask is not one comparison of the position against the keys."""
    chain: list[tuple[Node, int]] = []
    v = mask
    while True:
        node = v.producer
        if node is None or node.op_type in ("Data", "Const"):
            what = "a constant" if v.is_const else f"the input {v.name}"
            return f"the mask is {what}, not a function of the position against arange({s})"
        d = v.desc
        if d.numel != rows * s or tuple(d.shape[-1:]) != (s,):
            return f"{node.op_type} {node.name} gives shape {list(d.shape)}, not one row of {s} keys per batch"
        if node.op_type in COMPARES:
            chain.append((node, -1))
            return chain[::-1]
        if node.op_type in ("Equal", "NotEqual"):
            return f"the mask comes from {node.op_type} {node.name}: not a prefix of the cache positions"
        if node.op_type in SHAPE_OPS or node.op_type in ("Cast", "Neg", "LogicalNot"):
            live = 0
        elif node.op_type in ARITH or node.op_type in ("Select", "SelectV2"):
            ins = list(node.inputs[:3 if node.op_type.startswith("Select") else 2])
            moving = [k for k, x in enumerate(ins) if x is not None and not x.is_const]
            if any(x is None for x in ins):
                return f"{node.op_type} {node.name} lacks an input"
            if not moving:
                return f"{node.op_type} {node.name} has only constant inputs"
            if len(moving) != 1:
                others = ", ".join(ins[k].name for k in moving[1:])
                return (f"{node.op_type} {node.name} combines the position test with {others}: not a function of "
                        f"the position against arange({s}) alone")
            live = moving[0]
            if node.op_type.startswith("Select") and live != 0:
                return f"{node.op_type} {node.name} selects on a constant condition"
            for k, x in enumerate(ins):
                if k != live and _scalar_const(x) is None:
                    return (f"{node.op_type} {node.name} applies a constant of shape {list(x.desc.shape)} per key, "
                            f"not one value to every masked key")
        else:
            return f"the mask is computed by {node.op_type} {node.name}, which the recogniser does not follow"
        chain.append((node, live))
        v = node.inputs[live]


def _position(v: Value, rows: int, s: int) -> tuple[Value, int] | str:
    """(P, t): the compared value is P + t with P an integer tensor of `rows` values; or why not."""
    shift = 0
    while v.producer is not None:
        node, dtype = v.producer, np.dtype(v.desc.dtype)
        if node.op_type in SHAPE_OPS:
            v = node.inputs[0]
        elif node.op_type == "Cast":
            src = np.dtype(node.inputs[0].desc.dtype)
            if src.kind == "f" and dtype.kind in "iu":
                return f"the position is rounded from {src.name} by {node.name}"
            if dtype.kind == "f" and s + abs(shift) > 2 ** (_finfo(dtype).nmant + 1):
                return f"{node.name} casts the position to {dtype.name}, which does not hold {s} positions exactly"
            v = node.inputs[0]
        elif node.op_type in ("Add", "Sub"):
            a, b = node.inputs[:2]
            if b.is_const and not a.is_const:
                moving, c, sign = a, _scalar_const(b), 1 if node.op_type == "Add" else -1
            elif a.is_const and not b.is_const and node.op_type == "Add":
                moving, c, sign = b, _scalar_const(a), 1
            else:
                moving, c, sign = None, None, 0
            if moving is None or c is None or float(c) != round(float(c)):
                return f"the position is computed by {node.op_type} {node.name}, not shifted by an integer"
            shift += sign * int(round(float(c)))
            v = moving
        else:
            break
    if v.is_const:
        return "the mask compares constants"
    if np.dtype(v.desc.dtype).kind not in "iu":
        return f"the position {v.name} is {v.desc.dtype}, not an integer"
    if v.desc.numel != rows:
        return f"the position {v.name} has {v.desc.numel} values for {rows} batch rows"
    return v, shift


def _predicate(cmp: Node, rows: int, s: int) -> tuple[Value, int, bool] | str:
    """(P, t, attended when true): the comparison is true exactly for keys 0..P + t (attended when true) or for the
    keys past P + t (masked when true)."""
    x, y = cmp.inputs[:2]
    if x.is_const == y.is_const:
        return f"{cmp.op_type} {cmp.name} does not compare the position against a constant row of keys"
    op, keys, pos = (cmp.op_type, x, y) if x.is_const else (SWAPPED[cmp.op_type], y, x)
    row = np.asarray(keys.data)
    if row.size != s or row.shape[-1:] != (s,):
        return f"{cmp.name} compares the position against a constant of shape {list(row.shape)}, not {s} keys"
    row = row.reshape(-1).astype(np.float64)
    first = row[0]
    if first != round(first) or not np.array_equal(row - first, np.arange(s)):
        return f"{cmp.name} compares the position against constants that are not arange({s}) (plus an integer)"
    if pos.desc.shape[-1:] not in ((1,), ()) and rows != 1:
        return f"{cmp.name} compares keys against a position of shape {list(pos.desc.shape)}"
    found = _position(pos, rows, s)
    if isinstance(found, str):
        return found
    position, shift = found
    attended_when_true, t = COMPARES[op]
    return position, shift - int(first) + t, attended_when_true


def _apply(node: Node, live: int, cur: np.ndarray) -> np.ndarray:
    """The node's output on the two values of its chain input, in the dtype the graph computes it in."""
    dt = np.dtype(node.outputs[0].desc.dtype)
    op = node.op_type
    with np.errstate(all="ignore"):
        if op in SHAPE_OPS:
            return cur
        if op == "Cast":
            return float32_to_float16(cur) if cur.dtype == np.float32 and dt == np.float16 else cur.astype(dt)
        if op == "LogicalNot":
            return ~cur.astype(bool)
        if op == "Neg":
            return (-cur).astype(dt)
        if op.startswith("Select"):
            a, b = (np.asarray(x.data).reshape(()).astype(dt) for x in node.inputs[1:3])
            return np.where(cur.astype(bool), a, b).astype(dt)
        other = np.asarray(node.inputs[1 - live].data).reshape(()).astype(dt)
        args = (cur.astype(dt), other) if live == 0 else (other, cur.astype(dt))
        return ARITH[op](*args).astype(dt)


def _scaled(value: np.ndarray, dtype: np.dtype, post: tuple[str, float] | None) -> np.ndarray:
    if post is None:
        return value
    with np.errstate(all="ignore"):
        return ARITH[post[0]](value.astype(dtype), np.asarray(post[1], dtype)).astype(dtype)


def match_length_mask(mask: Value, b: int, s: int, dtype: str, post: tuple[str, float] | None = None
                      ) -> LengthMask | str:
    """A LengthMask when `mask` (added to scores [b, N, 1, s] in `dtype`, the sum then scaled by `post` = (Mul or
    RealDiv, constant) if given) hides exactly the keys past the position; else why it does not."""
    shape = (1,) * (4 - len(mask.desc.shape)) + tuple(mask.desc.shape)
    if len(shape) != 4 or shape != (b, 1, 1, s):
        return f"the mask's shape {list(mask.desc.shape)} is not [B,1,1,S] = [{b},1,1,{s}]"
    chain = _chain(mask, b, s)
    if isinstance(chain, str):
        return chain
    found = _predicate(chain[0][0], b, s)
    if isinstance(found, str):
        return found
    position, t, attended_when_true = found
    if t > 0:
        return f"the mask admits positions beyond the current one (keys up to position + {t})"
    if t < 0:
        return f"the mask hides the current position (keys up to position - {-t})"
    values = np.array([True, False])
    for node, live in chain[1:]:
        values = _apply(node, live, values)
    dt = np.dtype(dtype)
    values = _scaled(values.astype(dt), dt, post)
    attended, masked = (values[0], values[1]) if attended_when_true else (values[1], values[0])
    after = f" after {post[0]} by {post[1]:g}" if post is not None else ""
    for what, value in (("attended", attended), ("masked", masked)):
        if np.isnan(value):
            return f"{what} positions get NaN{after} in {dt.name} (0 x inf or inf - inf in the mask's arithmetic)"
    if attended != 0:
        return f"attended positions get {float(attended):g}{after} in {dt.name}, not 0"
    if masked == -np.inf or masked <= MASKED_AT_MOST:
        return LengthMask(position)
    gap = -float(masked) - _underflow_gap(dt)
    return (f"masked positions get {float(masked):g}{after} in {dt.name}: their weight is 0 only while their score "
            f"is less than {max(gap, 0):.0f} above the attended ones (a mask must be -inf or at most "
            f"{MASKED_AT_MOST:g})")
