"""AscBackend and FusedAscBackend: the shell nodes automatic fusion leaves in the GE graph.

An AscBackend's computation is its `ascgraph` attribute (the HintGraph) and `ascgraph_impl` (the ImplGraph; the
tiling keys' variants derive from it); infer shape, tiling, kernel and cost all come from them
(ascgraph_kernel.py). A
FusedAscBackend carries a graph of AscBackend nodes (`fused_graph`) that one kernel runs one after another:
its tiling data is each member's (tiling key, block_dim, variables), its intermediates live in workspace.

They live here, not in atc_py/ops: their kernel is the AscGraph interpreter, so they depend on the whole of
autofuse, which itself depends on the op library; the registry finds this module through its lazy index
(ops/core/registry.py BUILTIN_MODULES, op_index.py) without importing autofuse.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.graph import Node, TensorDesc
from ..ops.core.base import AIV, REQUIRED, KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work
from ..ops.core.registry import register
from . import ascir
from .ascgraph_kernel import AscKernel, kernel_for
from .fused import FusedGraph, from_fused_def
from .graph import AscGraphError
from .schedule import KEYS


def _shapes(descs) -> list[tuple[int, ...]]:
    return [tuple(d.shape) for d in descs if d is not None]


@register
class AscBackend(OpSpec):
    op_type = "AscBackend"
    inputs = ("x*",)
    outputs = ("y*",)
    attrs = {"ascgraph": REQUIRED, "ascgraph_impl": REQUIRED}
    core_type = AIV
    dtypes = ascir.DTYPES
    tiling_keys = KEYS

    def kernel(self, attrs: dict[str, Any]) -> AscKernel:
        return kernel_for(self.attr(attrs, "ascgraph"), self.attr(attrs, "ascgraph_impl"))

    def infer(self, node: Node) -> list[TensorDesc]:
        k = self.kernel(node.attrs)
        shapes = _shapes(v.desc if v is not None else None for v in node.inputs)
        if len(shapes) != k.n_inputs:
            raise OpError(f"{len(shapes)} inputs; the AscGraph has {k.n_inputs} Data nodes")
        return [TensorDesc(shape, dtype, "ND", "ND") for shape, dtype in k.out_shapes(k.bind(shapes))]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        k = self.kernel(ctx.attrs)
        plan = k.plan(_shapes(ctx.inputs), ctx.soc)
        return TilingResult(plan.block_dim, plan.key, k.tiling_values(plan), plan.workspace)

    def decode_tiling(self, data: bytes, attrs: dict[str, Any]) -> dict[str, Any]:
        return self.kernel(attrs).struct.unpack(data)

    def tiling_data_size(self, attrs: dict[str, Any]) -> int:
        return self.kernel(attrs).struct.size

    def compute(self, args: KernelArgs, inputs):
        return self.kernel(args.attrs).run(args.tiling, args.tiling_key, args.block_dim, list(inputs))

    def work(self, ctx: TilingContext) -> Work:
        k = self.kernel(ctx.attrs)
        return k.work(k.plan(_shapes(ctx.inputs), ctx.soc))

    def block_work(self, ctx: TilingContext, block_dim: int) -> Work:
        """The largest block: its share of whole tiles (the tiling's split, not an even one)."""
        k = self.kernel(ctx.attrs)
        return k.work(k.plan(_shapes(ctx.inputs), ctx.soc), block=True)

    def check_launch(self, attrs, tiling_data, tiling_key, block_dim, inputs, outputs, soc) -> None:
        k = self.kernel(attrs)
        if len(inputs) != k.n_inputs or len(outputs) != k.n_outputs:
            raise OpError(f"{len(inputs)} inputs and {len(outputs)} outputs; the AscGraph has {k.n_inputs} Data "
                          f"and {k.n_outputs} Output nodes")
        k.check_launch(k.struct.unpack(tiling_data), tiling_key, block_dim, _shapes(inputs),
                       _shapes(outputs), soc)

    def kernel_key(self, attrs: dict[str, Any]) -> str:
        return self.kernel(attrs).digest


class FusedKernel:
    """A FusedAscBackend's members as kernels, with the tiling data layout of all of them."""

    def __init__(self, fg: FusedGraph):
        self.fg = fg
        self.members = [kernel_for(m.hint, m.impl) for m in fg.members]
        fields = []
        for j, k in enumerate(self.members):
            fields += [(f"m{j}.key", "Q"), (f"m{j}.block_dim", "Q")] + [(f"m{j}.{n}", "Q") for n in k.struct.names]
        self.struct = TilingStruct(*fields)

    def walk(self, in_shapes):
        """(member, its input shapes, its tiling plan source) in order, with every member's output shapes."""
        outs: list[list[tuple[int, ...]]] = []
        for j, (m, k) in enumerate(zip(self.fg.members, self.members)):
            shapes = []
            for (src, i), want in zip(m.inputs, m.in_shapes):
                have = in_shapes[i] if src < 0 else outs[src][i]
                if int(np.prod(have)) != int(np.prod(want)):
                    raise OpError(f"member {m.name} reads {list(have)} as {list(want)}")
                shapes.append(tuple(want))
            env = k.bind(shapes)
            outs.append([s for s, _ in k.out_shapes(env)])
            yield j, m, k, shapes, outs

    def out_descs(self, in_shapes) -> list[TensorDesc]:
        outs = None
        for *_, outs in self.walk(in_shapes):
            pass
        descs = []
        for src, i in self.fg.outputs:
            k = self.members[src]
            dtype = k.hint.output_nodes[i].y.dtype
            descs.append(TensorDesc(outs[src][i], dtype, "ND", "ND"))
        return descs


_FUSED: dict[int, tuple[object, FusedKernel]] = {}


def fused_kernel(attr) -> FusedKernel:
    hit = _FUSED.get(id(attr))
    if hit is not None and hit[0] is attr:
        return hit[1]
    if isinstance(attr, FusedGraph):
        fg = attr
    else:
        try:
            fg = from_fused_def(attr)
        except AscGraphError as exc:
            raise OpError(f"fused graph: {exc}") from None
    k = FusedKernel(fg)
    if len(_FUSED) >= 256:
        _FUSED.clear()
    _FUSED[id(attr)] = (attr, k)
    return k


@register
class FusedAscBackend(OpSpec):
    op_type = "FusedAscBackend"
    inputs = ("x*",)
    outputs = ("y*",)
    attrs = {"fused_graph": REQUIRED}
    core_type = AIV
    dtypes = ascir.DTYPES

    def kernel(self, attrs) -> FusedKernel:
        return fused_kernel(self.attr(attrs, "fused_graph"))

    def infer(self, node: Node) -> list[TensorDesc]:
        fk = self.kernel(node.attrs)
        shapes = _shapes(v.desc if v is not None else None for v in node.inputs)
        if len(shapes) != fk.fg.n_inputs:
            raise OpError(f"{len(shapes)} inputs; the fused graph has {fk.fg.n_inputs} Data nodes")
        return fk.out_descs(shapes)

    def _plans(self, ctx: TilingContext):
        fk = self.kernel(ctx.attrs)
        return fk, [(j, k, k.plan(shapes, ctx.soc)) for j, _, k, shapes, _ in fk.walk(_shapes(ctx.inputs))]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        fk, plans = self._plans(ctx)
        values, ws, inter = {}, [], 0
        for j, k, plan in plans:
            values[f"m{j}.key"], values[f"m{j}.block_dim"] = plan.key, plan.block_dim
            for name in k.struct.names:
                values[f"m{j}.{name}"] = plan.values.get(name, 1)
            ws += plan.workspace
        for j, (m, k) in enumerate(zip(fk.fg.members, fk.members)):   # member outputs other members read
            env = k.bind(m.in_shapes)
            for i, (shape, dtype) in enumerate(k.out_shapes(env)):
                if any(src == j and o == i for mm in fk.fg.members for src, o in mm.inputs):
                    inter += int(np.prod(shape)) * np.dtype(dtype).itemsize
        return TilingResult(max(p.block_dim for _, _, p in plans), 0, fk.struct.pack(**values), [inter] + ws)

    def decode_tiling(self, data: bytes, attrs: dict[str, Any]) -> dict[str, Any]:
        return self.kernel(attrs).struct.unpack(data)

    def tiling_data_size(self, attrs: dict[str, Any]) -> int:
        return self.kernel(attrs).struct.size

    def compute(self, args: KernelArgs, inputs):
        fk = self.kernel(args.attrs)
        results: list[list[np.ndarray]] = []
        for j, (m, k) in enumerate(zip(fk.fg.members, fk.members)):
            xs = []
            for (src, i), shape in zip(m.inputs, m.in_shapes):
                x = inputs[i] if src < 0 else results[src][i]
                xs.append(np.asarray(x).reshape(shape))
            t = args.tiling
            values = {n: t[f"m{j}.{n}"] for n in k.struct.names}
            results.append(k.run(values, int(t[f"m{j}.key"]), int(t[f"m{j}.block_dim"]), xs))
        return [results[src][i] for src, i in fk.fg.outputs]

    def work(self, ctx: TilingContext, block: bool = False) -> Work:
        """Members run one after another: their works add (each member's largest block for block_work)."""
        _, plans = self._plans(ctx)
        works = [k.work(plan, block) for _, k, plan in plans]
        widest = max(np.dtype(w.dtype).itemsize for w in works)
        ops = sum(w.vector_ops * np.dtype(w.dtype).itemsize for w in works) // widest
        return Work(vector_ops=ops, bytes=sum(w.bytes for w in works),
                    dtype={1: "int8", 2: "float16", 4: "float32", 8: "int64"}[widest],
                    vector_class="norm" if any(w.vector_class == "norm" for w in works) else "elementwise",
                    pipelined=all(w.pipelined for w in works))

    def block_work(self, ctx: TilingContext, block_dim: int) -> Work:
        return self.work(ctx, block=True)

    def check_launch(self, attrs, tiling_data, tiling_key, block_dim, inputs, outputs, soc) -> None:
        fk = self.kernel(attrs)
        if len(inputs) != fk.fg.n_inputs or len(outputs) != len(fk.fg.outputs):
            raise OpError(f"{len(inputs)} inputs and {len(outputs)} outputs; the fused graph has "
                          f"{fk.fg.n_inputs} and {len(fk.fg.outputs)}")
        t = fk.struct.unpack(tiling_data)
        outs = None
        for j, m, k, shapes, outs in fk.walk(_shapes(inputs)):
            bd = t[f"m{j}.block_dim"]
            if not 1 <= bd <= block_dim:
                raise OpError(f"member {m.name} runs {bd} blocks in a launch of {block_dim}")
            k.check_launch({n: t[f"m{j}.{n}"] for n in k.struct.names}, int(t[f"m{j}.key"]), bd, shapes,
                           outs[j], soc)
        if [outs[src][i] for src, i in fk.fg.outputs] != _shapes(outputs):
            raise OpError("output shapes are not the fused graph's")

    def kernel_key(self, attrs: dict[str, Any]) -> str:
        return "".join(k.digest for k in self.kernel(attrs).members)
