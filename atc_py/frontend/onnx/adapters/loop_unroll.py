"""An ONNX Loop over sequences or optionals, unrolled when imported.

A loop that carries a sequence (SequenceInsert per iteration: its length grows), declares one in its body, or
reads one from an enclosing scope by a position that is the iteration number (SequenceMap's expansion:
SequenceAt(seq, i)) cannot be a GE While: sequences are resolved at compile time. Such a loop needs its trip
count and condition known at import; each iteration's body is converted into the enclosing graph with the
iteration number a constant, so every position is constant. The body's condition output must then be
known at import too. Bounded by MAX_IMPORT_UNROLL_ITERATIONS iterations and by the nodes the model may copy
(MAX_IMPORT_COPIED_NODES, limits.py), counted as trip count x body nodes before the first iteration and again
as the copies are made: beyond them a clear error in moments, never a hang."""
from __future__ import annotations

import numpy as np

from ....common.limits import MAX_IMPORT_UNROLL_ITERATIONS
from ...import_budget import COUNT_CAP
from .. import onnx_lite as onnx
from ..adapter import AdapterError, NodeCtx
from ..structured import is_structured
from ..work import body_nodes

STRUCTURED_TYPES = ("sequence_type", "optional_type")


def _free_names(g: onnx.GraphProto) -> set[str]:
    """Names a graph (and the subgraphs inside it) reads from enclosing scopes."""
    defined = {i.name for i in g.input} | {t.name for t in g.initializer} | {o for n in g.node for o in n.output}
    used = {o.name for o in g.output}
    for n in g.node:
        used.update(i for i in n.input if i)
        for a in n.attribute:
            for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                used |= _free_names(sub)
    return used - defined


def _outer(conv, name: str):
    """The value a name has in the enclosing scopes, without capturing it (None: not found)."""
    while conv is not None:
        if name in conv.values:
            return conv.values[name]
        conv = getattr(conv, "parent", None)
    return None


def needs_unroll(ctx: NodeCtx, proto: onnx.GraphProto, carried: list) -> bool:
    """A loop carrying sequences must be unrolled; one whose body reads an outer sequence is unrolled when its
    trip count and condition are known now (positions such as SequenceAt(seq, i) become constants), else it
    stays a While whose body captures the sequence's elements (then its positions must be constants)."""
    if any(is_structured(v) for v in carried):
        return True
    if any(p.type.WhichOneof("value") in STRUCTURED_TYPES for p in list(proto.input) + list(proto.output)):
        return True
    if not any(is_structured(_outer(ctx.conv, n)) for n in _free_names(proto)):
        return False
    m, c = ctx.input(0), ctx.input(1)
    if (m is not None and ctx.const(0) is None) or (c is not None and ctx.const(1) is None):
        return False
    return m is None or int(np.asarray(ctx.const(0)).reshape(-1)[0]) <= MAX_IMPORT_UNROLL_ITERATIONS


def _known_bool(v, what: str) -> bool:
    if is_structured(v) or not v.is_const or v.data is None:
        raise AdapterError(f"it carries sequences, so it is unrolled when compiling, and {what} is computed at run "
                           "time (a sequence's length must be fixed when compiling)")
    return bool(np.asarray(v.data).reshape(-1)[0])


def unroll(ctx: NodeCtx, proto: onnx.GraphProto, carried: list) -> list:
    from ..subgraph import BodyConverter  # the converter imports the adapters: imported when first used
    m0, c0 = ctx.input(0), ctx.input(1)
    limit = MAX_IMPORT_UNROLL_ITERATIONS
    trip = None
    if m0 is not None:
        m = ctx.const(0)
        if m is None:
            raise AdapterError("it carries sequences, so it is unrolled when compiling, and its trip count (input 0) "
                               "is computed at run time (a sequence's length must be fixed when compiling)")
        trip = max(int(np.asarray(m).reshape(-1)[0]), 0)
        if trip > limit:
            raise AdapterError(f"its trip count {trip} is more than the {limit} iterations a loop carrying sequences "
                               "may be unrolled to (MAX_IMPORT_UNROLL_ITERATIONS)")
        planned = trip * body_nodes(proto, COUNT_CAP)
        problem = ctx.conv.budget.copy_problem(planned, f"unrolling its {trip} iterations")
        if problem:
            raise AdapterError(problem)
    cond = True if c0 is None else _known_bool(c0, "its condition (input 1)")
    g = ctx.conv.graph
    budget = ctx.conv.budget
    start, copied_before = len(g.nodes), budget.copied
    n_vs = len(carried)
    if len(proto.output) < 1 + n_vs:
        raise AdapterError(f"its body gives {len(proto.output)} outputs for {n_vs} loop-carried values (it needs at "
                           f"least {1 + n_vs})")
    scans: list[list] = [[] for _ in range(len(proto.output) - 1 - n_vs)]
    i = 0
    while cond and (trip is None or i < trip):
        if i >= limit:
            raise AdapterError(f"its condition still holds after {limit} iterations, the most a loop carrying "
                               "sequences may be unrolled to (MAX_IMPORT_UNROLL_ITERATIONS)")
        bind = {proto.input[0].name: g.add_const(g.unique_name(f"{ctx.name}_iter{i}"), np.array(i, np.int64)),
                proto.input[1].name: g.add_const(g.unique_name(f"{ctx.name}_cond{i}"), np.array(cond))}
        bind.update({proto.input[2 + k].name: v for k, v in enumerate(carried)})
        values = BodyConverter.inline(ctx.conv, proto, bind)
        carried = values[1:1 + n_vs]
        for k, e in enumerate(values[1 + n_vs:]):
            if is_structured(e):
                raise AdapterError(f"its scan output {k} is a sequence or optional (scan outputs are tensors)")
            scans[k].append(e)
        if c0 is not None:
            cond = _known_bool(values[0], "its body's condition output")
        i += 1
        budget.copied = copied_before       # the copies made inside an iteration are in its count already
        problem = budget.copy_problem(len(g.nodes) - start, f"unrolling {i} of its iterations")
        if problem:
            raise AdapterError(problem)
        budget.copied = copied_before + len(g.nodes) - start
    if scans and i == 0:
        raise AdapterError("it carries sequences and runs no iteration, so its scan outputs have no shape")
    return list(carried) + [_stack(ctx, elems, k) for k, elems in enumerate(scans)]


def _stack(ctx: NodeCtx, elems: list, k: int):
    rows = [ctx.emit("Unsqueeze", [e], {"axes": [0]}, suffix=f"scan{k}_row{j}")[0] for j, e in enumerate(elems)]
    if len(rows) == 1:
        return rows[0]
    return ctx.emit("ConcatD", rows, {"concat_dim": 0}, suffix=f"scan{k}")[0]
