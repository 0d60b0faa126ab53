"""SequenceMap: its body applied to each element, resolved at compile time. The body is converted once per
element straight into the enclosing graph (elements may differ in shape, so each copy is inferred for its
own), a sequence input giving the body its k-th element and a tensor input itself; output j of the map is the
sequence of the copies' output j. Bounded like an unrolled loop (MAX_IMPORT_UNROLL_ITERATIONS elements, the
model's MAX_IMPORT_COPIED_NODES counted before copying)."""
from __future__ import annotations

from ....common.limits import MAX_IMPORT_UNROLL_ITERATIONS
from ...import_budget import COUNT_CAP
from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from ..structured import Sequence, is_structured
from ..work import body_nodes


@onnx_op("SequenceMap")
class SequenceMap(OnnxOp):
    @classmethod
    def _impl_v17(cls, ctx: NodeCtx):
        from ..subgraph import BodyConverter  # the converter imports the adapters: imported when first used
        body = ctx.attr("body")
        ins = [ctx.input(i) for i in range(ctx.n_inputs)]
        if len(body.input) != len(ins):
            raise AdapterError(f"its body takes {len(body.input)} inputs, the node gives {len(ins)}")
        if not isinstance(ins[0], Sequence):
            raise AdapterError("input 0 is not a sequence")
        lengths = {s.length for s in ins if isinstance(s, Sequence)}
        if len(lengths) != 1:
            raise AdapterError(f"its sequences have different lengths {sorted(lengths)}")
        n = lengths.pop()
        if n > MAX_IMPORT_UNROLL_ITERATIONS:
            raise AdapterError(f"its sequences have {n} elements, more than the {MAX_IMPORT_UNROLL_ITERATIONS} a "
                               "SequenceMap may be expanded to (MAX_IMPORT_UNROLL_ITERATIONS)")
        problem = ctx.conv.budget.copy_problem(n * body_nodes(body, COUNT_CAP),
                                               f"expanding its body for {n} elements")
        if problem:
            raise AdapterError(problem)
        g = ctx.conv.graph
        start, copied_before = len(g.nodes), ctx.conv.budget.copied
        for k, v in enumerate(ins):
            if isinstance(v, Sequence):
                v.elements()
            elif v is None or is_structured(v):
                raise AdapterError(f"input {k} is neither a sequence nor a tensor")
        outs: list[list] = [[] for _ in body.output]
        for k in range(n):
            bind = {p.name: (v.items[k] if isinstance(v, Sequence) else v) for p, v in zip(body.input, ins)}
            for j, y in enumerate(BodyConverter.inline(ctx.conv, body, bind)):
                if is_structured(y):
                    raise AdapterError(f"its body's output {j} is a sequence or optional (it must be a tensor)")
                outs[j].append(y)
        ctx.conv.budget.copied = copied_before + len(g.nodes) - start    # copies made inside it included
        return [Sequence(o, n) for o in outs]
