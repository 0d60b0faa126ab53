"""Constant folding: a node whose inputs are all constants is run now (tiling + kernel) and becomes a Const.
Big folds (weight fills, casts, scalings) run on host threads (const_jobs.py)."""
from __future__ import annotations

import numpy as np

from ..common.errors import AtcError
from ..common.limits import DEFAULT_FOLD_SIZE_LIMIT, FOLD_WORK_PER_BYTE
from ..ir.graph import Graph
from ..ops import get_op
from ..ops.core.base import OpError
from ..ops.core.execute import run_op, tiling_context
from ..ops.core.infer import infer_node
from ..platform.soc import SocSpec
from .const_jobs import ConstJobs, deferred, reader
from .fp16_fold import float32_to_float16, saturate_to_float16

NEVER_FOLD = {"Data", "Const", "NetOutput", "If", "Case", "While", "PartitionedCall", "MemcpyAsync"}
FRACTAL_MACS = 16 * 16 * 16   # one cube fractal of Work


SHAPE_OF = {"Shape"}   # depends only on the input's shape, not its value


def too_big(node, spec, soc: SocSpec, size_limit: int) -> bool:
    """Whether folding the node would make a constant larger than size_limit bytes, or cost more than
    FOLD_WORK_PER_BYTE element operations per byte of it: then it stays in the graph and runs on the device."""
    outs = [v.desc for v in node.outputs]
    if any(not d.known for d in outs):
        return False
    if sum(d.numel * _itemsize(d.dtype) for d in outs) > size_limit:
        return True
    try:
        w = spec.work(tiling_context(spec, [v.desc if v is not None else None for v in node.inputs], outs,
                                     node.attrs, soc))
    except Exception:   # noqa: BLE001 -- an op without a cost model of these shapes: judged by its size alone
        return False
    return w.fractals * FRACTAL_MACS + w.vector_ops > size_limit * FOLD_WORK_PER_BYTE


def _itemsize(dtype: str) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        return 16   # strings: GE's string head


def _evaluate(node, spec, readers, soc: SocSpec, jobs: ConstJobs | None = None):
    """A thunk computing the node's output arrays from its inputs' `readers` (const_jobs.reader). Everything it
    needs from the node is taken now, on the calling thread: the pass detaches the node (and rewires its
    Values) while a host thread may run it."""
    in_descs = [v.desc if v is not None else None for v in node.inputs]
    out_descs = [v.desc for v in node.outputs]
    attrs, name, op_type = dict(node.attrs), node.name, node.op_type

    def run() -> list[np.ndarray]:
        ins = [r() for r in readers]
        try:
            if op_type == "Cast" and out_descs[0].dtype == "float16" and ins[0].dtype == np.float32:
                if attrs.get("_saturate_fp16"):   # the precision mode's cast of a constant: saturating
                    data, n = saturate_to_float16(ins[0])
                    if jobs is not None and n:
                        jobs.count_saturated(n)
                    return [data.reshape(out_descs[0].shape)]
                # a model's own Cast: the Cast kernel's numbers (numpy's cast) without its slow path
                return [float32_to_float16(ins[0]).reshape(out_descs[0].shape)]
            outs = run_op(spec, in_descs, out_descs, attrs, soc, ins)
        except OpError as exc:
            raise AtcError("E14001", value="(constant inputs)", opname=name, optype=op_type,
                           reason=f"constant folding failed: {exc}") from None
        return [data.astype(d.dtype, copy=False) for d, data in zip(out_descs, outs)]
    return run


def fold_constants(graph: Graph, soc: SocSpec, jobs: ConstJobs | None = None,
                   size_limit: int = DEFAULT_FOLD_SIZE_LIMIT) -> int:
    """Fold in topological order, re-inferring each node first: once a Shape of a static tensor folds, the
    ConstantOfShape/Expand/Reshape chain behind it gets static shapes and folds or becomes static too.
    Threaded folds are waited for before returning, unless the caller passes `jobs` and waits for it later.
    A fold beyond `size_limit` (too_big) is left to the device."""
    folded = 0
    dead: list = []    # removed in one pass at the end
    own = jobs is None
    jobs = ConstJobs(graph) if own else jobs
    for node in list(graph.nodes):
        if node.op_type in NEVER_FOLD or not node.inputs or not get_op(node.op_type).pure:
            continue   # (a collective's result is its group's, not its inputs')
        infer_node(node)
        if node.op_type in SHAPE_OF and node.inputs[0] is not None and node.inputs[0].desc.known:
            x = node.inputs[0]
            data = np.broadcast_to(np.zeros((), np.uint8), x.desc.shape)  # only its shape is read: no memory
            outs = run_op(get_op(node.op_type), [x.desc], [v.desc for v in node.outputs], node.attrs, soc, [data])
            new = graph.add_const(graph.unique_name(f"{node.name}_folded"), outs[0].astype(node.outputs[0].desc.dtype))
            graph.replace_all_uses(node.outputs[0], new)
            graph.detach(node)
            dead.append(node)
            folded += 1
            continue
        if not all(v is None or v.is_const for v in node.inputs):
            continue
        spec = get_op(node.op_type)
        if too_big(node, spec, soc, size_limit):
            continue
        readers = [reader(v) for v in node.inputs]
        if len(node.outputs) == 1 and deferred(node.outputs[0].desc, node.inputs):
            v = node.outputs[0]
            if v.consumers:
                run = _evaluate(node, spec, readers, soc, jobs)
                new = jobs.add(graph.unique_name(f"{node.name}_folded"), v.desc, lambda r=run: r()[0],
                               f"Constant folding of node {node.name} ({node.op_type})", list(node.inputs))
                graph.replace_all_uses(v, new)
        else:
            for k, (v, data) in enumerate(zip(node.outputs, _evaluate(node, spec, readers, soc, jobs)())):
                if not v.consumers:
                    continue
                new = graph.add_const(graph.unique_name(f"{node.name}_folded" + (f"_{k}" if k else "")), data)
                graph.replace_all_uses(v, new)
        graph.detach(node)
        dead.append(node)
        folded += 1
    if own:
        jobs.wait()
    graph.remove_nodes(dead)
    graph.topo_sort()
    return folded
