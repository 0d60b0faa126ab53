"""Linear algebra: MatrixDeterminant (ONNX Det) and Einsum.

MatrixDeterminant splits the batch of matrices over the vector cores; Einsum runs on the cube (its contraction is
a batched matmul) and its blocks write their chunk of the flattened output."""
from __future__ import annotations

import re

import numpy as np

from ..ir.dtypes import is_float
from ..ir.graph import Node, TensorDesc
from .core.base import (
    AIC,
    REQUIRED,
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    Work,
    ceil_div,
    cores_for,
    covered,
    prod,
    split_rows,
)
from .core.elementwise_tiling import ELEMWISE_TILING, elementwise_tiling, run_blocks
from .core.registry import register
from .elementwise import FLOAT_TYPES

DET_TILING = TilingStruct(("batch", "Q"), ("n", "Q"), ("mats_per_block", "Q"))


@register
class MatrixDeterminant(OpSpec):
    """det of each trailing [n, n] matrix (ONNX Det; CANN's MatrixDeterminant): LU with partial pivoting per
    matrix, the batch split over the vector cores."""
    op_type = "MatrixDeterminant"
    inputs = ("x",)
    dtypes = FLOAT_TYPES
    tiling_struct = DET_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if len(x.shape) < 2 or x.shape[-1] != x.shape[-2]:
            raise OpError(f"Det takes [..., n, n] matrices, got {list(x.shape)}")
        return [TensorDesc(x.shape[:-2], x.dtype, "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        batch = prod(x.shape[:-2])
        block_dim, per = split_rows(batch, cores_for(self, ctx.soc))
        return TilingResult(block_dim, 0, DET_TILING.pack(batch=batch, n=x.shape[-1], mats_per_block=per))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        mats = inputs[0].reshape(t["batch"], t["n"], t["n"]).astype(np.float64)
        out = np.zeros(t["batch"], np.float64)
        end = covered(t["batch"], t["mats_per_block"], args.block_dim)   # matrices are independent: one call
        if end:
            out[:end] = np.linalg.det(mats[:end]) if t["n"] else 1.0
        return [out.astype(args.outputs[0].dtype).reshape(args.outputs[0].shape)]

    def work(self, ctx: TilingContext) -> Work:
        x = ctx.inputs[0]
        n = x.shape[-1]
        return Work(vector_ops=prod(x.shape[:-2]) * max(1, n ** 3 // 3 + n * n), bytes=x.nbytes + ctx.outputs[0].nbytes,
                    dtype=x.dtype)


_TERM = re.compile(r"^(\.\.\.)?[A-Za-z]*(\.\.\.)?[A-Za-z]*$")


def parse_einsum(equation: str, shapes: list[tuple[int, ...]]) -> tuple[str, tuple[int, ...], int]:
    """The explicit equation (with '->'), the output shape and the multiply-adds it takes (the product of every
    letter's size and of the broadcast '...' dims); raises OpError on an
    equation that does not match the inputs. The implicit output is the ellipsis then the letters used once,
    in alphabetical order (numpy's and ONNX's rule)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise OpError(f"equation '{equation}' has {len(terms)} operands, the node has {len(shapes)} inputs")
    sizes: dict[str, int] = {}
    ell: tuple[int, ...] = ()
    counts: dict[str, int] = {}
    for term, shape in zip(terms, shapes):
        if not _TERM.match(term) or term.count("...") > 1:
            raise OpError(f"operand '{term}' of equation '{equation}' is not letters with at most one '...'")
        letters = term.replace("...", "")
        n_ell = len(shape) - len(letters)
        if n_ell < 0 or (n_ell > 0 and "..." not in term):
            raise OpError(f"operand '{term}' does not match an input of rank {len(shape)}")
        pos = term.find("...")
        head = letters[:pos] if pos >= 0 else letters
        dims = list(shape)
        ell_dims = tuple(dims[len(head):len(head) + n_ell]) if pos >= 0 else ()
        named = dims[:len(head)] + dims[len(head) + n_ell:]
        try:
            ell = tuple(np.broadcast_shapes(ell, ell_dims))
        except ValueError:
            raise OpError(f"the '...' dims of equation '{equation}' do not broadcast") from None
        for ch, d in zip(letters, named):
            counts[ch] = counts.get(ch, 0) + 1
            if sizes.setdefault(ch, d) != d:
                raise OpError(f"letter '{ch}' of equation '{equation}' is {sizes[ch]} and {d}")
    if not arrow:
        rhs = ("..." if ell or "..." in lhs else "") + "".join(sorted(c for c, k in counts.items() if k == 1))
    if not _TERM.match(rhs) or rhs.count("...") > 1 or len(set(rhs.replace("...", ""))) != len(rhs.replace("...", "")):
        raise OpError(f"output '{rhs}' of equation '{equation}' is not distinct letters with at most one '...'")
    out: list[int] = []
    for part in re.split(r"(\.\.\.)", rhs):
        if part == "...":
            out.extend(ell)
            continue
        for ch in part:
            if ch not in sizes:
                raise OpError(f"output letter '{ch}' of equation '{equation}' is on no input")
            out.append(sizes[ch])
    return f"{lhs}->{rhs}", tuple(out), prod(list(sizes.values()) + list(ell))


@register
class Einsum(OpSpec):
    """Einstein summation over N inputs (CANN's Einsum). Runs on the cube: the contraction is a batched matmul
    of the free dims over the summed ones; the blocks write consecutive chunks of the flattened output."""
    op_type = "Einsum"
    inputs = ("x*",)
    attrs = {"equation": REQUIRED}
    core_type = AIC
    dtypes = FLOAT_TYPES + ("int32", "int64")
    tiling_struct = ELEMWISE_TILING

    def _parse(self, attrs, descs):
        eq = str(self.attr(attrs, "equation"))
        if not eq:
            raise OpError("Einsum needs an equation")
        if len({d.dtype for d in descs}) > 1:
            raise OpError(f"input dtypes differ: {', '.join(d.dtype for d in descs)}")
        return parse_einsum(eq, [d.shape for d in descs])

    def infer(self, node: Node) -> list[TensorDesc]:
        descs = [v.desc for v in node.inputs if v is not None]
        if not descs:
            raise OpError("Einsum takes at least one input")
        _, shape, _ = self._parse(node.attrs, descs)
        return [TensorDesc(shape, descs[0].dtype, "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, len(ctx.inputs) + 1, False)

    def compute(self, args: KernelArgs, inputs):
        eq = str(self.attr(args.attrs, "equation"))
        explicit, _, _ = parse_einsum(eq, [x.shape for x in inputs])
        acc = np.float64 if inputs[0].dtype == np.float64 else (np.float32 if is_float(inputs[0].dtype.name)
                                                                  else inputs[0].dtype)
        y = np.einsum(explicit, *[x.astype(acc, copy=False) for x in inputs], optimize=len(inputs) > 2)
        dt = args.outputs[0].dtype
        return [run_blocks(args, [np.asarray(y).astype(dt).reshape(-1)], lambda v: v, dt)]

    def work(self, ctx: TilingContext) -> Work:
        _, _, macs = parse_einsum(str(self.attr(ctx.attrs, "equation")), [d.shape for d in ctx.inputs])
        fm, fk, fn = ctx.soc.mkn_for(ctx.inputs[0].dtype)
        moved = sum(d.nbytes for d in ctx.inputs) + ctx.outputs[0].nbytes
        return Work(fractals=ceil_div(macs, fm * fk * fn), bytes=moved, dtype=ctx.inputs[0].dtype)

