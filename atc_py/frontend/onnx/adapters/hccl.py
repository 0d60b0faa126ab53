"""GE's HCCL collectives in the custom ONNX domain `ascend` (opset 1), the project's one custom domain (beside
IncreFlashAttention, PagedAttention, ...): HcomAllReduce, HcomAllGather, HcomReduceScatter, HcomBroadcast,
HcomAllToAll, HcomSend, HcomReceive. Each node is its GE op, attributes by GE's names (atc_py/ops/hccl.py checks
them): group, reduction, rank_size, rank_ids, root_rank, sr_tag, dest_rank, src_rank, fusion, fusion_id;
HcomReceive's shape (ints) and dtype (an ONNX TensorProto element type, or a dtype name such as "float16").
HcomBroadcast takes and gives any number of tensors; HcomSend has no output."""
from __future__ import annotations

from ....ir.dtypes import dtype_from_onnx
from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op

PASSED = ("group", "reduction", "rank_size", "rank_ids", "root_rank", "sr_tag", "dest_rank", "src_rank", "fusion",
          "fusion_id", "shape")


def _attrs(ctx: NodeCtx) -> dict:
    """The GE attributes the node sets (the op's defaults stand for the rest)."""
    out = {k: ctx.attr(k) for k in PASSED if ctx.attr(k) is not None}
    if "shape" in out:
        out["shape"] = list(out["shape"])
    if "rank_ids" in out:
        out["rank_ids"] = list(out["rank_ids"])
    return out


def _emit(ctx: NodeCtx, op_type: str, n_out: int):
    return ctx.emit(op_type, [ctx.input(i) for i in range(ctx.n_inputs)], _attrs(ctx), n_out=n_out)


class _Collective(OnnxOp):
    ge_type = ""

    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return _emit(ctx, cls.ge_type, 1)


@onnx_op("HcomAllReduce", domain="ascend")
class HcomAllReduce(_Collective):
    ge_type = "HcomAllReduce"


@onnx_op("HcomAllGather", domain="ascend")
class HcomAllGather(_Collective):
    ge_type = "HcomAllGather"


@onnx_op("HcomReduceScatter", domain="ascend")
class HcomReduceScatter(_Collective):
    ge_type = "HcomReduceScatter"


@onnx_op("HcomAllToAll", domain="ascend")
class HcomAllToAll(_Collective):
    ge_type = "HcomAllToAll"


@onnx_op("HcomBroadcast", domain="ascend")
class HcomBroadcast(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return _emit(ctx, "HcomBroadcast", ctx.n_inputs)


@onnx_op("HcomSend", domain="ascend")
class HcomSend(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        if len(ctx.node.output) and any(ctx.node.output):
            raise AdapterError("HcomSend has no output")
        return _emit(ctx, "HcomSend", 0)


@onnx_op("HcomReceive", domain="ascend")
class HcomReceive(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        attrs = _attrs(ctx)
        dtype = ctx.attr("dtype")
        if isinstance(dtype, int) and not isinstance(dtype, bool):
            dt = dtype_from_onnx(dtype)
            if dt is None:
                raise AdapterError(f"dtype {dtype} is not an ONNX element type Ascend has")
            dtype = dt.name
        if dtype is not None:
            attrs["dtype"] = dtype
        return ctx.emit("HcomReceive", [], attrs)
