"""The collectives of Huawei's TensorFlow adapter (tf_adapter's hcom_ops: HcomAllReduce, HcomAllGather,
HcomBroadcast, HcomReduceScatter, HcomSend, HcomReceive), each its GE op (atc_py/ops/hccl.py checks the attributes).
Their TensorFlow attributes are GE's names: reduction, group, fusion, fusion_id, rank_size, root_rank, sr_tag,
dest_rank, src_rank; HcomReceive's `shape` (a TensorShapeProto) and `T` (its dtype). HcomBroadcast takes a list of
tensors (T: list(type)) and gives one output per tensor; HcomSend has no output."""
from __future__ import annotations

from ..values import dtype_name
from . import TfAdapterError, tf_op

PASSED = ("group", "reduction", "rank_size", "root_rank", "sr_tag", "dest_rank", "src_rank", "fusion", "fusion_id")


def _attrs(ctx) -> dict:
    return {k: ctx.attr(k) for k in PASSED if k in ctx.node.attr}


@tf_op("HcomAllReduce", "HcomAllGather", "HcomReduceScatter")
def collective(ctx):
    return ctx.emit(ctx.node.op, [ctx.input(0)], _attrs(ctx))


@tf_op("HcomBroadcast")
def broadcast(ctx):
    n = ctx.n_inputs
    if n == 0:
        raise TfAdapterError("HcomBroadcast needs at least one input")
    return ctx.emit("HcomBroadcast", [ctx.input(i) for i in range(n)], _attrs(ctx), n_out=n)


@tf_op("HcomSend")
def send(ctx):
    return ctx.emit("HcomSend", [ctx.input(0)], _attrs(ctx), n_out=0)


@tf_op("HcomReceive")
def receive(ctx):
    shape = ctx.attr("shape")
    if "shape" not in ctx.node.attr or shape is None:
        raise TfAdapterError("HcomReceive needs its shape attribute (a known rank)")
    if "T" not in ctx.node.attr:
        raise TfAdapterError("HcomReceive needs its dtype attribute T")
    return ctx.emit("HcomReceive", [], {**_attrs(ctx), "shape": list(shape), "dtype": dtype_name(ctx.attr("T"))})
