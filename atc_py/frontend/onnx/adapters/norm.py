"""Normalisation adapters: BatchNormalization -> BNInfer, InstanceNormalization, LayerNormalization (LayerNormV3
when its Mean / InvStdDev outputs are used), RMSNormalization, GroupNormalization, MeanVarianceNormalization -> MVNV2,
LpNormalization -> LpNorm and a division, LRN."""
from __future__ import annotations

import numpy as np

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op


@onnx_op("BatchNormalization")
class BatchNormalization(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        if ctx.attr("is_test", 1) == 0:
            raise AdapterError("training-mode BatchNormalization is not supported before opset 14")
        if int(ctx.attr("training_mode", 0)) != 0:
            return _batch_statistics(ctx)
        if any(o for o in ctx.node.output[1:]):
            raise AdapterError("BatchNormalization running-statistics outputs are not supported")
        ins = [ctx.input(i) for i in range(5)]
        return ctx.emit("BNInfer", ins, {"epsilon": float(ctx.attr("epsilon", 1e-5))})

    _impl_v14 = _impl_v1


def _batch_statistics(ctx: NodeCtx):
    """training_mode=1 (opset 14+): normalised by the batch's own mean and (population) variance over every axis
    but the channel's, and the running statistics updated as input * momentum + batch * (1 - momentum) — the
    reductions and elementwise ops GE's BNTrainingReduce / BNTrainingUpdate compute, as separate nodes."""
    x, scale, bias, mean_in, var_in = (ctx.input(i) for i in range(5))
    rank = len(x.desc.shape)
    if rank < 2:
        raise AdapterError(f"the input has rank {rank}; BatchNormalization needs N and C")
    dt = np.dtype(x.desc.dtype)
    axes = [0] + list(range(2, rank))
    channel = ctx.make_const("channel_shape", np.array([1, -1] + [1] * (rank - 2), np.int64))
    flat = ctx.make_const("flat_shape", np.array([-1], np.int64))
    reduce = {"axes": axes, "keep_dims": True}
    mean = ctx.emit("ReduceMeanD", [x], reduce, suffix="batch_mean")[0]
    centred = ctx.emit("Sub", [x, mean], suffix="centred")[0]
    square = ctx.emit("Mul", [centred, centred], suffix="square")[0]
    var = ctx.emit("ReduceMeanD", [square], reduce, suffix="batch_var")[0]
    eps = ctx.make_const("epsilon", np.array(float(ctx.attr("epsilon", 1e-5)), dt))
    std = ctx.emit("Sqrt", [ctx.emit("Add", [var, eps], suffix="var_eps")[0]], suffix="std")[0]
    normed = ctx.emit("RealDiv", [centred, std], suffix="normed")[0]
    scale_c = ctx.emit("Reshape", [scale, channel], suffix="scale_c")[0]
    bias_c = ctx.emit("Reshape", [bias, channel], suffix="bias_c")[0]
    y = ctx.emit("Add", [ctx.emit("Mul", [normed, scale_c], suffix="scaled")[0], bias_c])[0]
    outs = [y]
    momentum = float(ctx.attr("momentum", 0.9))
    keep = ctx.make_const("momentum", np.array(momentum, dt))
    take = ctx.make_const("one_minus_momentum", np.array(1.0 - momentum, dt))
    for k, (running, batch) in enumerate(((mean_in, mean), (var_in, var)), start=1):
        if k >= len(ctx.node.output) or not ctx.node.output[k]:
            break
        old = ctx.emit("Mul", [running, keep], suffix=f"running_{k}_kept")[0]
        new = ctx.emit("Mul", [ctx.emit("Reshape", [batch, flat], suffix=f"batch_{k}")[0], take],
                       suffix=f"running_{k}_taken")[0]
        outs.append(ctx.emit("Add", [old, new], suffix=f"running_{k}")[0])
    return outs


@onnx_op("LayerNormalization")
class LayerNormalization(OnnxOp):
    @classmethod
    def _impl_v17(cls, ctx: NodeCtx):
        axis = int(ctx.attr("axis", -1))
        attrs = {"begin_norm_axis": axis, "begin_params_axis": axis, "epsilon": float(ctx.attr("epsilon", 1e-5))}
        if any(o for o in ctx.node.output[1:]):   # Mean / InvStdDev used: LayerNormV3 outputs mean and rstd
            return ctx.emit("LayerNormV3", [ctx.input(0), ctx.input(1), ctx.input(2)], attrs, n_out=3)
        return ctx.emit("LayerNorm", [ctx.input(0), ctx.input(1), ctx.input(2)], attrs, n_out=3)[:1]



@onnx_op("InstanceNormalization")
class InstanceNormalization(OnnxOp):
    @classmethod
    def _impl_v6(cls, ctx: NodeCtx):
        return ctx.emit("InstanceNorm", [ctx.input(0), ctx.input(1), ctx.input(2)],
                        {"epsilon": float(ctx.attr("epsilon", 1e-5))})



@onnx_op("RMSNormalization")
class RMSNormalization(OnnxOp):
    @classmethod
    def _impl_v23(cls, ctx: NodeCtx):
        attrs = {"epsilon": float(ctx.attr("epsilon", 1e-5)), "begin_norm_axis": int(ctx.attr("axis", -1))}
        return ctx.emit("RmsNorm", [ctx.input(0), ctx.input(1)], attrs, n_out=2)[:1]


@onnx_op("GroupNormalization")
class GroupNormalization(OnnxOp):
    @classmethod
    def _impl_v18(cls, ctx: NodeCtx):
        """Opset 18: scale and bias per group; channel c takes its group's (c // (C / num_groups))."""
        x = ctx.input(0)
        groups = int(ctx.attr("num_groups"))
        c = x.desc.shape[1] if len(x.desc.shape) > 1 else 0
        if groups < 1 or not c or c % groups:
            raise AdapterError(f"num_groups {groups} does not divide the channels of {list(x.desc.shape)}")
        per_channel = ctx.make_const("group_of_channel", np.arange(c, dtype=np.int64) // (c // groups))
        scale = ctx.emit("GatherV2D", [ctx.input(1), per_channel], {"axis": 0}, suffix="scale")[0]
        bias = ctx.emit("GatherV2D", [ctx.input(2), per_channel], {"axis": 0}, suffix="bias")[0]
        return cls._emit(ctx, x, scale, bias, groups)

    @classmethod
    def _impl_v21(cls, ctx: NodeCtx):
        return cls._emit(ctx, ctx.input(0), ctx.input(1), ctx.input(2), int(ctx.attr("num_groups")))

    @staticmethod
    def _emit(ctx: NodeCtx, x, scale, bias, groups: int):
        return ctx.emit("GroupNorm", [x, scale, bias], {"num_groups": groups,
                                                        "epsilon": float(ctx.attr("epsilon", 1e-5))}, n_out=3)[:1]


@onnx_op("MeanVarianceNormalization")
class MeanVarianceNormalization(OnnxOp):
    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        axes = [int(a) for a in ctx.attr("axes", [0, 2, 3])]
        return ctx.emit("MVNV2", [ctx.input(0)], {"axes": axes, "eps": 1e-9})


@onnx_op("LpNormalization")
class LpNormalization(OnnxOp):
    """x / ||x||_p along axis: LpNorm (dims kept) then a division, as CANN's plugin builds it."""

    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        p = int(ctx.attr("p", 2))
        if p not in (1, 2):
            raise AdapterError(f"p = {p}: LpNormalization supports 1 and 2")
        x = ctx.input(0)
        norm = ctx.emit("LpNorm", [x], {"p": p, "axes": [int(ctx.attr("axis", -1))], "keepdim": True},
                        suffix="norm")[0]
        return ctx.emit("RealDiv", [x, norm])


@onnx_op("LRN")
class LRN(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        size = int(ctx.attr("size"))
        return ctx.emit("LRN", [ctx.input(0)], {"size": size, "depth_radius": (size - 1) // 2,
                                                "alpha": float(ctx.attr("alpha", 1e-4)),
                                                "beta": float(ctx.attr("beta", 0.75)),
                                                "bias": float(ctx.attr("bias", 1.0))})
