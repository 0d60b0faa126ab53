"""Normalisations with statistics per channel, (n, c) plane or (n, group) of channels: BNInfer (inference
BatchNorm), InstanceNorm, GroupNorm (per-channel affine after per-group statistics) and LRN (local response
normalisation across neighbouring channels).

Each op splits its independent planes, groups or images over the vector cores and computes the ones its blocks
cover; statistics are computed in fp32 (fp64 for double inputs), as the kernels accumulate."""
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
    Work,
    cores_for,
    covered,
    prod,
    split_rows,
)
from .core.registry import register
from .elementwise import FLOAT_TYPES

BN_TILING = TilingStruct(("n", "Q"), ("c", "Q"), ("plane", "Q"), ("planes_per_block", "Q"), ("epsilon", "f"))


@register
class BNInfer(OpSpec):
    op_type = "BNInfer"
    inputs = ("x", "scale", "offset", "mean", "variance")
    attrs = {"epsilon": 1e-5}
    formats = {"x": "NC1HWC0", "y": "NC1HWC0"}      # TBE's BNInfer runs on 5HD (its parameters per C1 x C0)
    dtypes = ("float32", "float16", "float64")
    tiling_struct = BN_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if len(x.shape) < 2:
            raise OpError(f"BNInfer takes N,C,... input, got {list(x.shape)}")
        for i in range(1, 5):
            d = node.input_desc(i)
            if d is None or d.shape != (x.shape[1],):
                raise OpError(f"input {self.inputs[i]} must have shape [{x.shape[1]}]")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        n, c = x.shape[0], x.shape[1]
        block_dim, per = split_rows(n * c, cores_for(self, ctx.soc))
        data = BN_TILING.pack(n=n, c=c, plane=prod(x.shape[2:]), planes_per_block=per,
                              epsilon=float(self.attr(ctx.attrs, "epsilon")))
        return TilingResult(block_dim, 0, data)

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x, scale, offset, mean, var = inputs
        k = (scale / np.sqrt(var.astype(np.float32) + np.float32(t["epsilon"]))).astype(np.float32)
        b = offset.astype(np.float32) - mean.astype(np.float32) * k
        planes = x.reshape(t["n"] * t["c"], t["plane"])
        end = covered(planes.shape[0], t["planes_per_block"], args.block_dim)   # elementwise per plane: one call
        if end == planes.shape[0] and planes.size == t["n"] * t["c"] * t["plane"]:
            # every plane covered: x * k + b per channel by broadcasting, in place in one result array (the
            # same two roundings per element as below, without per-plane gathers of k and b or temporaries)
            xs = planes.reshape(t["n"], t["c"], t["plane"])
            out = np.multiply(xs, k[None, :, None], dtype=np.result_type(xs.dtype, k.dtype))
            np.add(out, b[None, :, None], out=out)
            return [out.reshape(args.outputs[0].shape).astype(args.outputs[0].dtype, copy=False)]
        out = np.zeros_like(planes)
        ch = np.arange(end) % t["c"]
        out[:end] = planes[:end] * k[ch, None] + b[ch, None]
        return [out.reshape(args.outputs[0].shape).astype(args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 2  # multiply-add per element
        return w


LRN_TILING = TilingStruct(("n", "Q"), ("c", "Q"), ("plane", "Q"), ("images_per_block", "Q"), ("size", "I"),
                          ("alpha", "f"), ("beta", "f"), ("bias", "f"))


@register
class LRN(OpSpec):
    """Local response normalisation across channels (ONNX LRN): y = x / (bias + alpha/size * sum(x^2))^beta."""
    op_type = "LRN"
    inputs = ("x",)
    tiling_struct = LRN_TILING
    attrs = {"depth_radius": 2, "alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": 5}

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if len(x.shape) < 3:
            raise OpError(f"LRN takes N,C,spatial... input, got {list(x.shape)}")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        block_dim, per = split_rows(x.shape[0], cores_for(self, ctx.soc))
        a = ctx.attrs
        data = LRN_TILING.pack(n=x.shape[0], c=x.shape[1], plane=prod(x.shape[2:]), images_per_block=per,
                               size=int(self.attr(a, "size")), alpha=float(self.attr(a, "alpha")),
                               beta=float(self.attr(a, "beta")), bias=float(self.attr(a, "bias")))
        return TilingResult(block_dim, 0, data)

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x = inputs[0].reshape(t["n"], t["c"], t["plane"]).astype(np.float32)
        out = np.zeros_like(x)
        size = t["size"]
        lo_pad, hi_pad = (size - 1) // 2, size - 1 - (size - 1) // 2
        end = covered(t["n"], t["images_per_block"], args.block_dim)   # images are independent: one pass
        if end:
            sq = np.pad(x[:end] ** 2, ((0, 0), (lo_pad, hi_pad), (0, 0)))
            csum = np.cumsum(np.concatenate([np.zeros_like(sq[:, :1]), sq], axis=1), axis=1)
            window = csum[:, size:size + t["c"]] - csum[:, :t["c"]]
            out[:end] = x[:end] / (t["bias"] + t["alpha"] / size * window) ** t["beta"]
        return [out.reshape(args.outputs[0].shape).astype(args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * (int(self.attr(ctx.attrs, "size")) + 4)
        return w


@register
class InstanceNorm(OpSpec):
    """y = scale * (x - mean) / sqrt(var + eps) + bias with mean/var per (n, c) plane (ONNX
    InstanceNormalization); one block per group of planes."""
    op_type = "InstanceNorm"
    inputs = ("x", "gamma", "beta")
    attrs = {"epsilon": 1e-5}
    dtypes = ("float32", "float16", "float64")
    tiling_struct = BN_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if len(x.shape) < 3:
            raise OpError(f"InstanceNorm takes N,C,D1,... input, got {list(x.shape)}")
        for i in (1, 2):
            if node.input_desc(i).shape != (x.shape[1],):
                raise OpError(f"input {self.inputs[i]} must have shape [{x.shape[1]}]")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        block_dim, per = split_rows(x.shape[0] * x.shape[1], cores_for(self, ctx.soc))
        return TilingResult(block_dim, 0, BN_TILING.pack(n=x.shape[0], c=x.shape[1], plane=prod(x.shape[2:]),
                                                         planes_per_block=per,
                                                         epsilon=float(self.attr(ctx.attrs, "epsilon"))))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x, gamma, beta = inputs
        acc = np.float64 if x.dtype == np.float64 else np.float32
        planes = x.reshape(t["n"] * t["c"], t["plane"]).astype(acc)
        out = np.zeros_like(planes)
        eps = float(self.attr(args.attrs, "epsilon"))
        end = covered(planes.shape[0], t["planes_per_block"], args.block_dim)   # planes are independent: one pass
        if end:
            p = planes[:end]
            ch = np.arange(end) % t["c"]
            mean = p.mean(axis=1, keepdims=True)
            var = ((p - mean) ** 2).mean(axis=1, keepdims=True)
            out[:end] = (p - mean) / np.sqrt(var + eps) * gamma[ch, None] + beta[ch, None]
        return [out.reshape(args.outputs[0].shape).astype(args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops *= 5
        return w


GN_TILING = TilingStruct(("n", "Q"), ("c", "Q"), ("groups", "Q"), ("plane", "Q"), ("units_per_block", "Q"),
                         ("epsilon", "f"))


@register
class GroupNorm(OpSpec):
    """Normalise each (n, group) of C / num_groups channels, then the per-channel gamma and beta (ONNX
    GroupNormalization-21; the frontend expands opset 18's per-group scale and bias to channels)."""
    op_type = "GroupNorm"
    inputs = ("x", "gamma", "beta")
    outputs = ("y", "mean", "variance")
    attrs = {"num_groups": 1, "epsilon": 1e-5, "data_format": "NCHW", "is_training": False}
    dtypes = FLOAT_TYPES
    tiling_struct = GN_TILING

    def _geom(self, attrs, x, g, b):
        groups = int(self.attr(attrs, "num_groups"))
        if len(x) < 2 or groups < 1 or x[1] % groups:
            raise OpError(f"num_groups {groups} does not divide the channels of {list(x)}")
        if tuple(g) != (x[1],) or tuple(b) != (x[1],):
            raise OpError(f"gamma {list(g)} and beta {list(b)} must be [{x[1]}]")
        return x[0], x[1], groups, prod(x[2:])

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        n, _, groups, _ = self._geom(node.attrs, x.shape, node.input_desc(1).shape, node.input_desc(2).shape)
        stat = TensorDesc((n, groups), "float32", "ND", "ND")
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format), stat, stat]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        n, c, groups, plane = self._geom(ctx.attrs, *(d.shape for d in ctx.inputs[:3]))
        block_dim, per = split_rows(n * groups, cores_for(self, ctx.soc))
        return TilingResult(block_dim, 0, GN_TILING.pack(n=n, c=c, groups=groups, plane=plane, units_per_block=per,
                                                         epsilon=float(self.attr(ctx.attrs, "epsilon"))))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x, gamma, beta = inputs
        acc = np.float64 if x.dtype == np.float64 else np.float32
        rows = t["n"] * t["groups"]
        units = x.reshape(rows, x.size // rows if rows else 0).astype(acc)   # -1 fails on a batch of 0
        mean = np.zeros((units.shape[0], 1), acc)
        var = np.zeros((units.shape[0], 1), acc)
        out = np.zeros_like(units)
        end = covered(units.shape[0], t["units_per_block"], args.block_dim)   # groups are independent: one pass
        if end:
            u = units[:end]
            mean[:end] = u.mean(axis=1, keepdims=True)
            var[:end] = np.square(u - mean[:end]).mean(axis=1, keepdims=True)
            out[:end] = (u - mean[:end]) / np.sqrt(var[:end] + acc(t["epsilon"]))
        y = out.reshape(t["n"], t["c"], t["plane"]) * gamma.astype(acc)[:, None] + beta.astype(acc)[:, None]
        y.reshape(units.shape)[end:] = 0
        stat = (t["n"], t["groups"])
        return [y.reshape(args.outputs[0].shape).astype(args.outputs[0].dtype),
                mean.reshape(stat).astype(np.float32), var.reshape(stat).astype(np.float32)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * 7   # mean, sub, square, mean, rsqrt-mul, scale, shift
        w.vector_class = "norm"
        return w
