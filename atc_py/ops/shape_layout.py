"""Shape and layout: Reshape/Flatten (views: no kernel, output aliases input), TransposeD, ConcatD."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import (
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    block_align_elems,
    cores_for,
    covered,
    direct_output,
    prod,
    split_rows,
)
from .core.elementwise_tiling import ELEMWISE_TILING, elementwise_tiling, run_blocks
from .core.host_pool import cuts, run_pieces
from .core.move_plans import PlannedMove, transpose_plan
from .core.registry import register
from .elementwise import MOVE_TYPES


class ViewOp(OpSpec):
    """Changes only the shape; GE gives it no task and lets the output share the input's memory."""
    no_task = True
    dtypes = MOVE_TYPES

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return TilingResult(0, 0, b"")

    def compute(self, args: KernelArgs, inputs):
        return [inputs[0].reshape(args.outputs[0].shape)]


def reshape_target(in_shape, spec, allowzero: bool) -> tuple[int, ...]:
    spec = [int(s) for s in spec]
    out = []
    for i, s in enumerate(spec):
        if s == 0 and not allowzero:
            if i >= len(in_shape):
                raise OpError(f"shape value 0 at position {i} has no input dim to copy")
            out.append(in_shape[i])
        else:
            out.append(s)
    if out.count(-1) > 1:
        raise OpError(f"shape {spec} has more than one -1")
    total = prod(in_shape)
    if -1 in out:
        rest = prod([d for d in out if d != -1])
        if rest == 0 or total % rest:
            raise OpError(f"cannot reshape {list(in_shape)} to {spec}")
        out[out.index(-1)] = total // rest
    if prod(out) != total:
        raise OpError(f"cannot reshape {list(in_shape)} ({total} elements) to {spec}")
    return tuple(out)


@register
class Reshape(ViewOp):
    op_type = "Reshape"
    inputs = ("x", "shape")
    attrs = {"allowzero": 0}
    tiling_depend = frozenset()  # the shape input decides the output shape, not the tiling
    infer_depend = frozenset({1})  # ... so a shape computed by the graph is read by the host executor

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        spec = node.const_input(1)
        if spec is None:
            n = node.input_desc(1).shape
            return [TensorDesc((-1,) * (n[0] if n and n[0] >= 0 else 1), x.dtype, "ND", x.origin_format)]
        return [TensorDesc(reshape_target(x.shape, spec.reshape(-1), bool(self.attr(node, "allowzero"))),
                           x.dtype, "ND", x.origin_format)]


@register
class Flatten(ViewOp):
    op_type = "Flatten"
    inputs = ("x",)
    attrs = {"axis": 1}

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        r = len(x.shape)
        axis = int(self.attr(node, "axis"))
        if not -r <= axis <= r:
            raise OpError(f"axis {axis} is out of range for rank {r}")
        if axis < 0:
            axis += r
        return [TensorDesc((prod(x.shape[:axis]), prod(x.shape[axis:])), x.dtype, "ND", x.origin_format)]


@register
class TransposeD(PlannedMove, OpSpec):
    op_type = "TransposeD"
    inputs = ("x",)
    attrs = {"perm": None}
    dtypes = MOVE_TYPES
    tiling_struct = ELEMWISE_TILING

    def _perm(self, attrs, rank):
        perm = self.attr(attrs, "perm")
        perm = list(range(rank))[::-1] if perm is None else [int(p) % max(rank, 1) for p in perm]
        if sorted(perm) != list(range(rank)):
            raise OpError(f"perm {perm} is not a permutation of {rank} axes")
        return perm

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        perm = self._perm(node.attrs, len(x.shape))
        return [TensorDesc(tuple(x.shape[p] for p in perm), x.dtype, "ND", x.origin_format)]

    def plan(self, ctx: TilingContext):
        """CANN's data-movement plan for this transpose (None where the last axis moves: not modelled)."""
        x = ctx.inputs[0]
        return transpose_plan(x.shape, self._perm(ctx.attrs, len(x.shape)), np.dtype(x.dtype).itemsize,
                              cores_for(self, ctx.soc), ctx.soc.ub_size)

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return self.planned_tiling(ctx)

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        perm = self._perm(args.attrs, x.ndim)
        moved = np.transpose(x, perm)
        if x.ndim == 0 or covered(args.tiling["total"], args.tiling["block_len"], args.block_dim) < moved.size:
            return [run_blocks(args, [np.asarray(moved, order="C").reshape(-1)], lambda v: v, x.dtype)]
        # every block: one copy straight into the output, in pieces along its first long axis on the host pool
        out = np.empty(moved.shape, x.dtype)
        lead = next((i for i, d in enumerate(moved.shape) if d > 1), 0)
        ranges = cuts(moved.shape[lead], out.nbytes)
        at = (slice(None),) * lead
        run_pieces(len(ranges), lambda i: np.copyto(out[at + (slice(*ranges[i]),)], moved[at + (slice(*ranges[i]),)]))
        return [out.reshape(args.outputs[0].shape)]


CONCAT_TILING = TilingStruct(("outer", "Q"), ("out_inner", "Q"), ("rows_per_block", "Q"), ("num_inputs", "I"),
                             ("axis", "I"))


@register
class ConcatD(OpSpec):
    op_type = "ConcatD"
    inputs = ("x*",)  # dynamic input: any number of tensors
    attrs = {"concat_dim": None}
    dtypes = MOVE_TYPES
    tiling_struct = CONCAT_TILING

    def _axis(self, attrs, rank) -> int:
        a = int(self.attr(attrs, "concat_dim"))
        if not -rank <= a < rank:
            raise OpError(f"concat_dim {a} is out of range for rank {rank}")
        return a % rank

    def infer(self, node: Node) -> list[TensorDesc]:
        descs = [v.desc for v in node.inputs if v is not None]
        if not descs:
            raise OpError("ConcatD needs at least one input")
        first = descs[0]
        axis = self._axis(node.attrs, len(first.shape))
        for d in descs[1:]:
            if len(d.shape) != len(first.shape) or any(
                    a != b for i, (a, b) in enumerate(zip(d.shape, first.shape)) if i != axis):
                raise OpError(f"input shapes {[list(x.shape) for x in descs]} differ outside axis {axis}")
        shape = list(first.shape)
        shape[axis] = sum(d.shape[axis] for d in descs)
        return [TensorDesc(tuple(shape), first.dtype, first.format, first.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        """Blocks take rows of the dims before the axis; with fewer rows than cores (a batch-1 concat), every core
        takes its share of each input's columns in every row, as CANN's ConcatD does (concat_tik splits each
        input's elements along the flattened axis over all AI Cores, each core looping over the rows);
        rows_per_block is then all the rows. CANN decides per input (one that does not split evenly is copied
        whole by every core); one rule here: split when the narrowest input has a 32-byte block per core."""
        out = ctx.outputs[0]
        axis = self._axis(ctx.attrs, len(out.shape))
        outer = prod(out.shape[:axis])
        cores = cores_for(self, ctx.soc)
        narrowest = min((prod(d.shape[axis:]) for d in ctx.inputs if d is not None), default=0)
        if 0 < outer < cores and narrowest >= cores * block_align_elems(ctx.soc, out.dtype):
            block_dim, per = cores, outer
        else:
            block_dim, per = split_rows(outer, cores)
        return TilingResult(block_dim, 0, CONCAT_TILING.pack(outer=outer, out_inner=prod(out.shape[axis:]),
                                                             rows_per_block=per, num_inputs=len(ctx.inputs),
                                                             axis=axis))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        # each input's columns from its own shape (a -1 cannot size an empty input's: 0 boxes of a detector)
        parts = [x.reshape(t["outer"], prod(x.shape[t["axis"]:])) for x in inputs]
        dst = direct_output(args, inputs[0].dtype, inputs)   # the concat written where it lands (DenseNet's)
        if dst is not None:
            out = dst.reshape(t["outer"], t["out_inner"])
        else:
            out = np.zeros((t["outer"], t["out_inner"]), dtype=inputs[0].dtype)
        end = covered(t["outer"], t["rows_per_block"], args.block_dim)   # a copy: all blocks' rows at once
        if end and len(cuts(len(parts), out[:end].nbytes)) > 1:   # big: each input's columns a piece for the host pool
            offs = np.cumsum([0] + [p.shape[1] for p in parts])
            run_pieces(len(parts), lambda i: np.copyto(out[:end, offs[i]:offs[i + 1]], parts[i][:end]))
        elif end:
            np.concatenate([p[:end] for p in parts], axis=1, out=out[:end])
        if dst is not None:
            out[end:] = 0     # rows no block covers, as in a fresh zeroed result
            return [dst]
        return [out.reshape(args.outputs[0].shape)]


@register
class Unsqueeze(ViewOp):
    """Inserts size-1 dims (attr `axes`, positions in the output); a view."""
    op_type = "Unsqueeze"
    inputs = ("x",)
    attrs = {"axes": None}

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        axes = self.attr(node, "axes")
        rank = len(x.shape) + len(axes)
        norm = sorted(int(a) % rank for a in axes)
        if len(set(norm)) != len(norm):
            raise OpError(f"axes {list(axes)} repeat an axis")
        shape, it = [], iter(x.shape)
        for i in range(rank):
            shape.append(1 if i in norm else next(it))
        return [TensorDesc(tuple(shape), x.dtype, "ND", x.origin_format)]


@register
class Squeeze(ViewOp):
    """Removes size-1 dims (attr `axes`; all of them when empty); a view."""
    op_type = "Squeeze"
    inputs = ("x",)
    attrs = {"axes": None}

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        axes = self.attr(node, "axes")
        rank = len(x.shape)
        drop = {int(a) % rank for a in axes} if axes else {i for i, d in enumerate(x.shape) if d == 1}
        if any(x.shape[a] != 1 for a in drop):
            raise OpError(f"cannot squeeze axes {sorted(drop)} of shape {list(x.shape)}")
        return [TensorDesc(tuple(d for i, d in enumerate(x.shape) if i not in drop), x.dtype, "ND", x.origin_format)]


@register
class Fill(OpSpec):
    """ConstantOfShape: a tensor of the given shape (input 0, int64) filled with attr `value` (folded when the
    shape is a constant, which the frontend guarantees)."""
    op_type = "Fill"
    inputs = ("dims",)
    attrs = {"value": 0.0, "dtype": "float32"}
    engine = "AICPU"
    dtypes = MOVE_TYPES
    tiling_struct = TilingStruct(("numel", "Q"))
    infer_depend = frozenset({0})

    def infer(self, node: Node) -> list[TensorDesc]:
        dims = node.const_input(0)
        if dims is None:  # known once the shape chain is folded, or at run time (dynamic partition)
            n = node.input_desc(0).shape
            return [TensorDesc((-1,) * (n[0] if n and n[0] >= 0 else 1), str(self.attr(node, "dtype")), "ND", "ND")]
        shape = tuple(int(d) for d in np.asarray(dims).reshape(-1))
        if any(d < 0 for d in shape):
            raise OpError(f"negative dim in {list(shape)}")
        return [TensorDesc(shape, str(self.attr(node, "dtype")), "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return TilingResult(1, 0, self.tiling_struct.pack(numel=ctx.outputs[0].numel))

    def compute(self, args: KernelArgs, inputs):
        d = args.outputs[0]
        return [np.full(d.shape, self.attr(args.attrs, "value"), dtype=d.dtype)]


@register
class AddN(OpSpec):
    """ONNX Sum: elementwise sum of N tensors (with broadcasting)."""
    op_type = "AddN"
    inputs = ("x*",)
    attrs = {"fused_relu": False}   # relu_fusion put a following Relu into the epilogue (residual sum + Relu)
    tiling_struct = ELEMWISE_TILING
    dtypes = ("float32", "float16", "int32", "int64")

    def infer(self, node: Node) -> list[TensorDesc]:
        descs = [v.desc for v in node.inputs if v is not None]
        try:
            shape = np.broadcast_shapes(*(d.shape for d in descs))
        except ValueError:
            raise OpError(f"shapes {[list(d.shape) for d in descs]} cannot be broadcast") from None
        return [TensorDesc(tuple(shape), descs[0].dtype, descs[0].format, descs[0].origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, len(ctx.inputs) + 1, any(d.shape != ctx.outputs[0].shape for d in ctx.inputs))

    def compute(self, args: KernelArgs, inputs):
        shape = args.outputs[0].shape
        flat = [np.broadcast_to(x, shape).reshape(-1) for x in inputs]
        return [self.epilogue(args.attrs, run_blocks(args, flat, lambda *xs: sum(xs[1:], xs[0]),
                                                      args.outputs[0].dtype))]
