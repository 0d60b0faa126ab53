"""Control flow (GE's functional ops If / Case / While, which own subgraphs) and the runtime (RTS) ops their
static lowering inserts: LabelSet, LabelSwitchByIndex, LabelGotoEx, StreamActive, StreamSwitch, MemcpyAsync.
Plus InplaceUpdate, the kernel a loop uses to write row i of a scan output.

Control ops have no kernel: a static model runs them as label / stream tasks around their subgraphs' tasks
(engines/control.py), the host executor runs them subgraph by subgraph (om_run/sim/host.py). RTS ops are
tasks of the runtime itself (no AI Core / AICPU kernel): `task_kind = "rts"`.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Node, TensorDesc
from .core.base import OpError, OpSpec, TilingContext, TilingResult
from .core.infer import infer_graph
from .core.registry import register
from .index_ops import ANY, MoveOp

UNKNOWN_RANK = (-2,)
MAX_WHILE_SHAPE_ROUNDS = 4   # rounds of "body output shapes generalise the carried shapes" before giving up
SCAN_OUTPUTS = "_scan_output_num"    # While: trailing body outputs stacked per iteration (ONNX Loop scan outputs)
TRIP_COUNT = "_trip_count"           # While: iterations known at compile time (-1: unknown)
MBATCH_NODE = "mbatch-inserted-node"  # Case: the gears of a multi-batch model (each branch keeps its shapes)


def merge_desc(a: TensorDesc, b: TensorDesc) -> TensorDesc:
    """The desc that covers both: equal dims kept, differing dims unknown (-1), differing ranks unknown rank."""
    if a.shape == b.shape:
        return a
    if len(a.shape) != len(b.shape) or a.shape == UNKNOWN_RANK or b.shape == UNKNOWN_RANK:
        return TensorDesc(UNKNOWN_RANK, a.dtype)
    return TensorDesc(tuple(x if x == y else -1 for x, y in zip(a.shape, b.shape)), a.dtype)


def bind_inputs(sub: Graph, descs: list[TensorDesc]) -> None:
    """Give the subgraph's Data nodes the descs of the values bound to them (by attr index)."""
    for d in sub.data_nodes:
        k = int(d.attrs["index"])
        if k >= len(descs):
            raise OpError(f"subgraph {sub.name} reads input {k}, the node passes {len(descs)}")
        src = descs[k]
        d.outputs[0].desc = TensorDesc(src.shape, src.dtype, src.format, src.origin_format)


def infer_sub(sub: Graph, descs: list[TensorDesc]) -> list[TensorDesc]:
    bind_inputs(sub, descs)
    infer_graph(sub)
    return [v.desc for v in sub.net_output.inputs]


class ControlOp(OpSpec):
    """A node that owns subgraphs; no kernel, no tiling."""
    unknown_rank_aware = True
    task_kind = "control"
    engine = "RTS"
    core_type = "NONE"
    outputs = ("output*",)
    dtypes = ANY + ("uint16", "uint32", "uint64", "bfloat16", "float64")

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return TilingResult(1, 0, b"")


class BranchOp(ControlOp):
    """If / Case: input 0 selects the branch, inputs 1.. are the branches' Data 0.."""
    inputs = ("cond", "input*")

    def branches(self, node: Node) -> list[Graph]:
        raise NotImplementedError

    def infer(self, node: Node) -> list[TensorDesc]:
        subs = self.branches(node)
        if not subs:
            raise OpError("it has no branch subgraphs")
        if node.attrs.get(MBATCH_NODE):
            return _gear_infer(node, subs)
        args = [v.desc for v in node.inputs[1:]]
        results = [(g, infer_sub(g, args)) for g in subs]
        first_g, first = results[0]
        for g, outs in results[1:]:
            if len(outs) != len(first):
                raise OpError(f"branch {first_g.name} gives {len(first)} outputs, branch {g.name} gives {len(outs)}")
            for k, (a, b) in enumerate(zip(first, outs)):
                if a.dtype != b.dtype:
                    raise OpError(f"output {k} is {a.dtype} in branch {first_g.name} and {b.dtype} in {g.name}")
        merged = list(first)
        for _, outs in results[1:]:
            merged = [merge_desc(a, b) for a, b in zip(merged, outs)]
        return merged


def _gear_infer(node: Node, subs: list[Graph]) -> list[TensorDesc]:
    """The multi-batch Case (passes/multi_batch.py): each branch keeps its gear's input shapes, reading the
    front of the Case's inputs (sized for the largest gear); the outputs are sized for the largest gear too."""
    args = [v.desc for v in node.inputs[1:]]
    results = []
    for g in subs:
        for d in g.data_nodes:
            k = int(d.attrs["index"])
            if k >= len(args):
                raise OpError(f"subgraph {g.name} reads input {k}, the node passes {len(args)}")
            mine = d.outputs[0].desc
            if mine.dtype != args[k].dtype or (mine.known and args[k].known and mine.nbytes > args[k].nbytes):
                raise OpError(f"gear {g.name} reads input {k} as {mine.dtype}{list(mine.shape)}, more than the "
                              f"{args[k].dtype}{list(args[k].shape)} it is given")
        infer_graph(g)
        results.append([v.desc for v in g.net_output.inputs])
    first = results[0]
    for g, outs in zip(subs[1:], results[1:]):
        if len(outs) != len(first) or any(a.dtype != b.dtype or len(a.shape) != len(b.shape)
                                          for a, b in zip(first, outs)):
            raise OpError(f"gear {g.name} gives outputs {[(d.dtype, list(d.shape)) for d in outs]}, gear "
                          f"{subs[0].name} {[(d.dtype, list(d.shape)) for d in first]}")
    return [TensorDesc(tuple(max(o[k].shape[a] for o in results) for a in range(len(d.shape))), d.dtype, d.format,
                       d.origin_format) for k, d in enumerate(first)]


@register
class If(BranchOp):
    op_type = "If"

    def branches(self, node: Node) -> list[Graph]:
        missing = [k for k in ("then_branch", "else_branch") if k not in node.subgraphs]
        if missing:
            raise OpError(f"it has no {missing[0]} subgraph")
        return [node.subgraphs["then_branch"], node.subgraphs["else_branch"]]


@register
class Case(BranchOp):
    op_type = "Case"

    def branches(self, node: Node) -> list[Graph]:
        return [node.subgraphs[k] for k in sorted(node.subgraphs, key=lambda k: int(k.rsplit("_", 1)[-1]))]


def case_branch_keys(n: int) -> list[str]:
    return [f"branches_{k}" for k in range(n)]


@register
class While(ControlOp):
    """While(input*): cond(input*) -> bool scalar; body(input*) -> input* (+ `_scan_output_num` per-iteration
    outputs the loop stacks, ONNX Loop's scan outputs). Carried shapes that change between iterations become
    unknown dims (a dynamic loop, run by the host executor)."""
    op_type = "While"
    inputs = ("input*",)
    attrs = {"parallel_iterations": 10}

    def infer(self, node: Node) -> list[TensorDesc]:
        for k in ("cond", "body"):
            if k not in node.subgraphs:
                raise OpError(f"it has no {k} subgraph")
        cond, body = node.subgraphs["cond"], node.subgraphs["body"]
        n_scan = int(node.attrs.get(SCAN_OUTPUTS, 0))
        carried = [v.desc for v in node.inputs]
        for _ in range(MAX_WHILE_SHAPE_ROUNDS):
            c = infer_sub(cond, carried)
            if len(c) != 1:
                raise OpError(f"its cond subgraph {cond.name} gives {len(c)} outputs; it must give one boolean")
            outs = infer_sub(body, carried)
            if len(outs) != len(carried) + n_scan:
                raise OpError(f"its body {body.name} gives {len(outs)} outputs for {len(carried)} loop-carried "
                              f"inputs" + (f" and {n_scan} scan outputs" if n_scan else ""))
            for k, (a, b) in enumerate(zip(carried, outs)):
                if a.dtype != b.dtype:
                    raise OpError(f"body output {k} is {b.dtype}, its loop-carried input {k} is {a.dtype}")
            new = [merge_desc(a, b) for a, b in zip(carried, outs)]
            if new == carried:
                break
            carried = new
        else:
            carried = [TensorDesc(UNKNOWN_RANK, d.dtype) for d in carried]
            infer_sub(cond, carried)
            outs = infer_sub(body, carried)
        trip = int(node.attrs.get(TRIP_COUNT, -1))
        scans = [TensorDesc((trip,) + tuple(d.shape) if d.shape != UNKNOWN_RANK else UNKNOWN_RANK, d.dtype)
                 for d in outs[len(carried):]]
        return carried + scans

    def alias_input(self, node: Node, k: int) -> int | None:
        """Loop-carried output k lives in the bytes of input k (GE: While's input and output share memory)."""
        n_scan = int(node.attrs.get(SCAN_OUTPUTS, 0))
        return k if k < len(node.outputs) - n_scan else None


class RtsOp(OpSpec):
    """A task of the runtime itself (no kernel): labels, stream activation, device-to-device copies."""
    unknown_rank_aware = True
    task_kind = "rts"
    engine = "RTS"
    core_type = "NONE"
    inputs = ()
    outputs = ()
    dtypes = ANY + ("uint16", "uint32", "uint64", "bfloat16", "float64")

    def infer(self, node: Node) -> list[TensorDesc]:
        return []

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return TilingResult(1, 0, b"")


@register
class LabelSet(RtsOp):
    op_type = "LabelSet"


@register
class LabelGotoEx(RtsOp):
    op_type = "LabelGotoEx"


@register
class LabelSwitchByIndex(RtsOp):
    """Jumps to label `_label_switch_list[index]` (index read from device memory as uint32; past the end:
    the last label, as aclrtSwitchLabelByIndex documents)."""
    op_type = "LabelSwitchByIndex"
    inputs = ("index",)


@register
class StreamActive(RtsOp):
    op_type = "StreamActive"
    attrs = {"active_stream_list": []}


@register
class StreamSwitch(RtsOp):
    """if (x <cond> value) the stream in active_stream_list runs and this one stops (aclrtSwitchStream)."""
    op_type = "StreamSwitch"
    inputs = ("x", "value")
    attrs = {"switch_condition": 0, "data_type": 0, "active_stream_list": []}


@register
class MemcpyAsync(RtsOp):
    """Device-to-device copy (MEMCPY_ASYNC task): loop-carried values back into their buffers."""
    op_type = "MemcpyAsync"
    inputs = ("x",)
    outputs = ("y",)

    def infer(self, node: Node) -> list[TensorDesc]:
        d = node.input_desc(0)
        return [TensorDesc(d.shape, d.dtype, d.format, d.origin_format)]


@register
class InplaceUpdate(MoveOp):
    """y = x with rows `indices` replaced by v (GE InplaceUpdate): a loop writes its iteration's row."""
    op_type = "InplaceUpdate"
    inputs = ("x", "indices", "v")

    def infer(self, node: Node) -> list[TensorDesc]:
        x, idx, v = node.input_desc(0), node.input_desc(1), node.input_desc(2)
        if idx.dtype not in ("int32", "int64"):
            raise OpError(f"indices must be int32/int64, got {idx.dtype}")
        if v.dtype != x.dtype:
            raise OpError(f"v is {v.dtype}, x is {x.dtype}")
        rows = idx.numel if idx.known else -1
        if x.known and v.known and (len(x.shape) == 0 or tuple(v.shape) != (rows,) + tuple(x.shape[1:])
                                    and tuple(v.shape) != tuple(x.shape[1:])):
            raise OpError(f"v of shape {list(v.shape)} does not fit rows of x {list(x.shape)}")
        return [TensorDesc(x.shape, x.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        x, idx, v = inputs
        n = x.shape[0]
        flat = np.asarray(idx).reshape(-1).astype(np.int64)
        if flat.size and (flat.min() < -n or flat.max() >= n):
            raise OpError(f"a row index is outside [-{n}, {n - 1}]")
        y = np.array(x, copy=True)
        y[np.where(flat < 0, flat + n, flat)] = np.asarray(v).reshape((flat.size,) + x.shape[1:])
        return [y]
