"""FusedElementwise: a chain of elementwise ops run as one vector kernel (GE's UB / auto fusion of elemwise
ops): the intermediates stay in the Unified Buffer, so the chain reads its inputs and writes its output once.

`program` (JSON) lists the steps in order, each [op type, operand refs]; a ref >= 0 is an input of the fused
node, a ref < 0 the result of step -ref - 1. `step_dtypes` gives each step's result dtype. Every step is computed
exactly as its own kernel would (the op's fn, the result cast to its dtype), so the numbers do not change.
Only ops that compute with the base elementwise kernels take part (elementwise_fusion.FUSABLE).
"""
from __future__ import annotations

import json
from functools import lru_cache

import numpy as np

from ..ir.graph import Node, TensorDesc
from .base import KernelArgs, OpError, OpSpec, TilingContext, TilingResult, Work
from .elementwise import ELEMWISE_TILING, elementwise_tiling, run_blocks
from .registry import get_op, register


def parse_program(attrs: dict) -> tuple[list[tuple[str, list[int]]], list[str]]:
    try:
        steps, dtypes = _parse(attrs["program"], tuple(str(d) for d in attrs["step_dtypes"]))
    except (KeyError, TypeError, ValueError):
        raise OpError("attributes program (JSON [[op, [refs]], ...]) and step_dtypes are required") from None
    if not steps or len(dtypes) != len(steps) or any(get_op(op) is None for op, _ in steps):
        raise OpError("program and step_dtypes must have one entry per step, each a registered op")
    return steps, list(dtypes)


@lru_cache(maxsize=1024)
def _parse(program: str, dtypes: tuple[str, ...]) -> tuple[list[tuple[str, list[int]]], tuple[str, ...]]:
    """Decoded once per program: om-run launches the same kernel every execution."""
    return [(str(op), [int(r) for r in refs]) for op, refs in json.loads(program)], dtypes


@register
class FusedElementwise(OpSpec):
    op_type = "FusedElementwise"
    inputs = ("x*",)
    attrs = {"program": None, "step_dtypes": None}
    dtypes = ("float32", "float16", "float64", "int32", "int64")
    tiling_struct = ELEMWISE_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        _, dtypes = parse_program(node.attrs)
        descs = [v.desc for v in node.inputs if v is not None]
        try:
            shape = np.broadcast_shapes(*(d.shape for d in descs))
        except ValueError:
            raise OpError(f"shapes {[list(d.shape) for d in descs]} cannot be broadcast") from None
        return [TensorDesc(tuple(shape), dtypes[-1], descs[0].format, descs[0].origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        broadcast = any(d.shape != ctx.outputs[0].shape for d in ctx.inputs)
        return elementwise_tiling(self, ctx, len(ctx.inputs) + 1, broadcast)

    def compute(self, args: KernelArgs, inputs):
        steps, dtypes = parse_program(args.attrs)
        shape = args.outputs[0].shape
        flat = [np.broadcast_to(x, shape).reshape(-1) for x in inputs]
        fns = [get_op(op).fn for op, _ in steps]

        def chain(*xs):
            results: list[np.ndarray] = []
            for (_, refs), fn, dt in zip(steps, fns, dtypes):
                operands = [xs[r] if r >= 0 else results[-r - 1] for r in refs]
                results.append(np.asarray(fn(*operands)).astype(dt, copy=False))
            return results[-1]
        return [run_blocks(args, flat, chain, args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        """The steps' own vector work; memory traffic only for the fused inputs and the output."""
        steps, dtypes = parse_program(ctx.attrs)
        out = ctx.outputs[0]
        step_descs: list[TensorDesc] = []
        vector_ops = 0
        for (op, refs), dt in zip(steps, dtypes):
            ins = [ctx.inputs[r] if r >= 0 else step_descs[-r - 1] for r in refs]
            d = TensorDesc(out.shape, dt, out.format, out.origin_format)
            vector_ops += get_op(op).work(TilingContext(ins, [d], {}, ctx.soc, {})).vector_ops
            step_descs.append(d)
        moved = sum(d.nbytes for d in ctx.inputs if d is not None) + out.nbytes
        return Work(vector_ops=vector_ops, bytes=moved, dtype=out.dtype)
