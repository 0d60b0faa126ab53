"""GE's HCCL collectives: HcomAllReduce, HcomAllGather, HcomReduceScatter, HcomBroadcast, HcomAllToAll, HcomSend,
HcomReceive (the op protos of CANN's ops_proto_hccl.h; their ops kernel library is ops_kernel_info_hccl, engine
DNN_HCCL). They run as one HCCL task each (TaskDef.kernel_hccl, engines/hccl.py), not as an AI Core or AICPU kernel.

Attributes (GE's names): `group` (default "hccl_world_group", at most 128 characters as GE's protos say),
`reduction` ("sum" | "prod" | "max" | "min"), `rank_size`, `root_rank`, `sr_tag`, `dest_rank`, `src_rank`,
HcomReceive's `shape` and `dtype` (a dtype name), `fusion` / `fusion_id` (accepted and kept: GE fuses by them in
training graphs). Ours: `rank_ids`, the ranks of a group other than the world in group order (a rank named twice is
an error). root_rank, dest_rank and src_rank are ranks *of the group* (0 .. group size - 1), as HCCL's are.

The group's size is len(rank_ids), else rank_size, else unknown until run time (the world's size). The kernel here
is the collective over a group of one rank (atc_py/ops/collective_math.py does the numbers); a bigger group is
om-run's rendezvous of ranks (om_run/sim), and local_refusal() says what a run without one tells the user.

Dtypes (HCCL's HcclAllReduce / HcclReduceScatter on Atlas A2 / A3: int8, int16, int32, int64, float16, float32,
bfloat16; "prod" takes neither int16 nor bfloat16 there). The data movers (AllGather, Broadcast, AllToAll, Send,
Receive) take uint8 too. Enforced for every SoC alike: the 300I Duo's narrower rules (no int64 / bfloat16, no int16
for prod / max / min) are not checked.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.dtypes import dtype_by_name
from ..ir.graph import Node, TensorDesc
from . import collective_math as cm
from .core.base import HCCL, REQUIRED, KernelArgs, OpError, OpSpec, TilingContext, TilingResult, Work, prod
from .core.registry import register

WORLD_GROUP = "hccl_world_group"
MAX_GROUP_NAME = 128                  # GE's op protos: "group" is limited to 128 characters
REDUCE_DTYPES = ("int8", "int16", "int32", "int64", "float16", "float32", "bfloat16")
MOVE_DTYPES = REDUCE_DTYPES + ("uint8",)
PROD_UNSUPPORTED = ("int16", "bfloat16")   # HcclAllReduce "prod" on Atlas A2 / A3 (CANN's HCCL API reference)
FUSION_FLAGS = (0, 1, 2)              # no fusion; by gradient segmentation (AllReduce); by fusion_id
COMMON = {"group": WORLD_GROUP, "rank_size": 0, "rank_ids": [], "fusion": 0, "fusion_id": -1}


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _int_attr(spec: OpSpec, attrs, name: str, low: int | None = 0) -> int:
    v = spec.attr(attrs, name)
    if not _is_int(v):
        raise OpError(f"attribute {name} must be an integer, got {v!r}")
    if low is not None and v < low:
        raise OpError(f"attribute {name} must be >= {low}, got {v}")
    return int(v)


def group_size(attrs: dict[str, Any]) -> int | None:
    """The group's size the attributes give (len(rank_ids), else rank_size), None when only the run knows it (the
    world group without rank_size). Attributes already verified."""
    ranks = attrs.get("rank_ids") or []
    if ranks:
        return len(ranks)
    size = attrs.get("rank_size") or 0
    return int(size) if size else None


def check_group(spec: OpSpec, attrs) -> int | None:
    """group, rank_size, rank_ids, fusion and fusion_id verified; the group's size if the attributes give it."""
    group = spec.attr(attrs, "group")
    if not isinstance(group, str) or not group:
        raise OpError(f"attribute group must be a non-empty string, got {group!r}")
    if len(group) > MAX_GROUP_NAME:
        raise OpError(f"attribute group has {len(group)} characters; GE limits a group name to {MAX_GROUP_NAME}")
    size = _int_attr(spec, attrs, "rank_size")
    ranks = spec.attr(attrs, "rank_ids")
    if not isinstance(ranks, (list, tuple)) or not all(_is_int(r) for r in ranks):
        raise OpError(f"attribute rank_ids must be a list of integers, got {ranks!r}")
    seen: set[int] = set()
    for r in ranks:
        if r < 0:
            raise OpError(f"rank_ids names rank {r}; ranks are >= 0")
        if r in seen:
            raise OpError(f"rank_ids names rank {r} twice")
        seen.add(int(r))
    if ranks and size and size != len(ranks):
        raise OpError(f"rank_size {size} does not match rank_ids, which names {len(ranks)} ranks")
    fusion = _int_attr(spec, attrs, "fusion")
    if fusion not in FUSION_FLAGS:
        raise OpError(f"attribute fusion must be one of {', '.join(map(str, FUSION_FLAGS))}, got {fusion}")
    _int_attr(spec, attrs, "fusion_id", low=None)
    return len(ranks) or size or None


def check_rank(spec: OpSpec, attrs, name: str, n: int | None) -> int:
    """A rank of the group (root_rank, dest_rank, src_rank): 0 <= r < the group's size when that is known."""
    r = _int_attr(spec, attrs, name)
    if n is not None and r >= n:
        raise OpError(f"{name} {r} is not a rank of a group of {n}")
    return r


def local_refusal(op_type: str, name: str, attrs: dict[str, Any]) -> str | None:
    """Why the op cannot run as a group of one rank (om-run without --world-size / --rank-table), or None when it
    can: its group has more ranks, or it talks to a peer (HcomSend / HcomReceive)."""
    n = group_size(attrs) or 1
    spec = _SPECS.get(op_type)
    if spec is not None and spec.peer:
        n = max(n, int(attrs.get(spec.peer, 0) or 0) + 1, 2)
    if n <= 1:
        return None
    return (f"{op_type} '{name}' needs a group of {n} ranks: run the model with --world-size {n} or "
            f"--rank-table")


def collective_bytes(op_type: str, attrs: dict[str, Any], in_descs: list[TensorDesc | None]) -> int:
    """What hccl_test reports as data_size for the op: the bytes per NPU. The buffer of AllReduce, Broadcast (every
    tensor), AllToAll and Send; AllGather's gathered output (its input times the group's size); ReduceScatter's
    input (hccl_test's all_gather_test and reduce_scatter_test count the larger buffer); Receive's received tensor
    (its shape and dtype attributes)."""
    spec = _SPECS.get(op_type)
    if spec is None:
        raise OpError(f"{op_type} is not an HCCL op")
    return spec.data_bytes(attrs, [d for d in in_descs if d is not None])


class HcomOp(OpSpec):
    """What the collectives share: engine, task kind, attribute checks, a trivial tiling (HCCL takes no tiling data),
    a kernel over a group of one rank."""
    engine = HCCL
    core_type = "NONE"        # HCCL's own task, on no AI Core (its AIV expansion mode is not modelled)
    task_kind = "hccl"
    pure = False
    dtypes = MOVE_DTYPES
    attrs = COMMON
    peer: str = ""            # the attribute naming the peer rank (Send: dest_rank, Receive: src_rank)

    def check(self, attrs, ins: list[TensorDesc]) -> int | None:
        """Every attribute and input verified (OpError naming the first that is wrong); the group's size if known."""
        n = check_group(self, attrs)
        allowed = REDUCE_DTYPES if "reduction" in self.attrs else MOVE_DTYPES
        for k, d in enumerate(ins):
            if d.dtype not in allowed:
                raise OpError(f"input {k} is {d.dtype}; HCCL's {self.op_type} takes {', '.join(allowed)}")
        if "reduction" in self.attrs:
            red = self.attr(attrs, "reduction")
            if red not in cm.REDUCTIONS:
                raise OpError(f"reduction {red!r} is not one of {', '.join(cm.REDUCTIONS)}")
            bad = [d.dtype for d in ins if red == "prod" and d.dtype in PROD_UNSUPPORTED]
            if bad:
                raise OpError(f"reduction 'prod' does not take {bad[0]} (HCCL: prod supports neither "
                              f"{' nor '.join(PROD_UNSUPPORTED)})")
        if "root_rank" in self.attrs:
            check_rank(self, attrs, "root_rank", n)
        if self.peer:
            _int_attr(self, attrs, "sr_tag")
            check_rank(self, attrs, self.peer, n)
        return n

    def infer(self, node: Node) -> list[TensorDesc]:
        ins = [node.input_desc(i) for i in range(len(node.inputs))]
        if any(d is None for d in ins):
            raise OpError("an input is missing")
        n = self.check(node.attrs, ins)
        return self.shapes(node.attrs, ins, n)

    def shapes(self, attrs, ins: list[TensorDesc], n: int | None) -> list[TensorDesc]:
        x = ins[0]
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def data_bytes(self, attrs, ins: list[TensorDesc]) -> int:
        return sum(d.nbytes for d in ins)

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return TilingResult(1, 0, b"")

    def work(self, ctx: TilingContext) -> Work:
        """The bytes the collective moves on one rank (no vector work): what a caller that prices every op sees.
        The transfer's time is the link model's (om_run/sim), not a kernel's."""
        moved = self.data_bytes(ctx.attrs, [d for d in ctx.inputs if d is not None])
        dtype = next((d.dtype for d in list(ctx.inputs) + list(ctx.outputs) if d is not None), "float32")
        return Work(bytes=moved, dtype=dtype, out_elems=0)

    def compute(self, args: KernelArgs, inputs: list) -> list[np.ndarray]:
        n = group_size(args.attrs) or 1
        if n != 1 or self.peer:
            raise OpError(local_refusal(self.op_type, "?", args.attrs) or f"{self.op_type} needs a group of {n}")
        outs = self.one_rank(args.attrs, [np.asarray(x) for x in inputs])
        return [np.asarray(o).astype(d.dtype, copy=False).reshape(d.shape) for o, d in zip(outs, args.outputs)]

    def one_rank(self, attrs, xs: list[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError(self.op_type)


def _first_dim(x: TensorDesc, what: str) -> int:
    if not x.shape:
        raise OpError(f"{what} of a scalar: the input needs a first dimension")
    return x.shape[0]


def _known_size(n: int | None, what: str) -> int:
    """AllGather and ReduceScatter shape their output by the group's size: it must be given."""
    if n is None:
        raise OpError(f"{what} needs the group's size: rank_size >= 1 (or rank_ids)")
    return n


@register
class HcomAllReduce(HcomOp):
    """y = the element-wise reduction of the ranks' x (rank after rank, in its dtype), on every rank."""
    op_type = "HcomAllReduce"
    inputs = ("x",)
    attrs = {**COMMON, "reduction": REQUIRED, "fusion": 1}
    dtypes = REDUCE_DTYPES

    def one_rank(self, attrs, xs):
        return cm.all_reduce(xs, self.attr(attrs, "reduction"))


@register
class HcomAllGather(HcomOp):
    """y = the ranks' x concatenated along the first axis: dim 0 times the group's size."""
    op_type = "HcomAllGather"
    inputs = ("x",)
    attrs = {**COMMON, "rank_size": REQUIRED}

    def shapes(self, attrs, ins, n):
        x, n = ins[0], _known_size(n, "AllGather")
        d0 = _first_dim(x, "AllGather")
        return [TensorDesc((d0 * n if d0 >= 0 else -1,) + tuple(x.shape[1:]), x.dtype, x.format, x.origin_format)]

    def data_bytes(self, attrs, ins):
        return sum(d.nbytes for d in ins) * (group_size(attrs) or 1)

    def one_rank(self, attrs, xs):
        return cm.all_gather(xs)


@register
class HcomReduceScatter(HcomOp):
    """y = part r (of the group's size, along the first axis) of the ranks' reduction, on rank r."""
    op_type = "HcomReduceScatter"
    inputs = ("x",)
    attrs = {**COMMON, "rank_size": REQUIRED, "reduction": REQUIRED}
    dtypes = REDUCE_DTYPES

    def shapes(self, attrs, ins, n):
        x, n = ins[0], _known_size(n, "ReduceScatter")
        d0 = _first_dim(x, "ReduceScatter")
        if d0 >= 0 and d0 % n:
            raise OpError(f"the first dimension {d0} of {list(x.shape)} does not split into rank_size {n} parts")
        return [TensorDesc((d0 // n if d0 >= 0 else -1,) + tuple(x.shape[1:]), x.dtype, x.format, x.origin_format)]

    def one_rank(self, attrs, xs):
        return cm.reduce_scatter(xs, self.attr(attrs, "reduction"))


@register
class HcomBroadcast(HcomOp):
    """Every rank's y_i = the root's x_i, for each of its tensors (GE's dynamic input and output)."""
    op_type = "HcomBroadcast"
    inputs = ("x*",)
    outputs = ("y*",)
    attrs = {**COMMON, "root_rank": REQUIRED}

    def shapes(self, attrs, ins, n):
        if not ins:
            raise OpError("HcomBroadcast needs at least one input")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format) for x in ins]

    def one_rank(self, attrs, xs):
        return [cm.broadcast([x], 0)[0] for x in xs]


@register
class HcomAllToAll(HcomOp):
    """Rank j's y = part j of every rank's x (along the first axis), in rank order: the same shape as x."""
    op_type = "HcomAllToAll"
    inputs = ("x",)

    def shapes(self, attrs, ins, n):
        x = ins[0]
        d0 = _first_dim(x, "AllToAll")
        if n is not None and d0 >= 0 and d0 % n:
            raise OpError(f"the first dimension {d0} of {list(x.shape)} does not split into {n} ranks")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def one_rank(self, attrs, xs):
        return cm.all_to_all(xs)


@register
class HcomSend(HcomOp):
    """x to rank dest_rank of the group, matched there by the HcomReceive of the same sr_tag: no output."""
    op_type = "HcomSend"
    inputs = ("x",)
    outputs = ()
    attrs = {**COMMON, "sr_tag": REQUIRED, "dest_rank": REQUIRED}
    peer = "dest_rank"

    def shapes(self, attrs, ins, n):
        return []


@register
class HcomReceive(HcomOp):
    """y (of the `shape` and `dtype` attributes) from rank src_rank of the group, sent by its HcomSend of sr_tag."""
    op_type = "HcomReceive"
    inputs = ()
    attrs = {**COMMON, "sr_tag": REQUIRED, "src_rank": REQUIRED, "shape": REQUIRED, "dtype": REQUIRED}
    peer = "src_rank"

    def received(self, attrs) -> TensorDesc:
        shape, dtype = self.attr(attrs, "shape"), self.attr(attrs, "dtype")
        if not isinstance(shape, (list, tuple)) or not all(_is_int(d) and d >= 0 for d in shape):
            raise OpError(f"attribute shape must be a list of dims >= 0, got {shape!r}")
        if dtype not in MOVE_DTYPES:
            raise OpError(f"attribute dtype {dtype!r} is not one HCCL's HcomReceive takes ({', '.join(MOVE_DTYPES)})")
        return TensorDesc(tuple(int(d) for d in shape), dtype)

    def shapes(self, attrs, ins, n):
        return [self.received(attrs)]

    def data_bytes(self, attrs, ins):
        d = self.received(attrs)
        return prod(d.shape) * dtype_by_name(d.dtype).itemsize


HCOM_OPS = (HcomAllReduce, HcomAllGather, HcomReduceScatter, HcomBroadcast, HcomAllToAll, HcomSend, HcomReceive)
_SPECS: dict[str, HcomOp] = {cls.op_type: cls() for cls in HCOM_OPS}
HCOM_OP_TYPES = tuple(_SPECS)
