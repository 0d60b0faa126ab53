"""Normalisation: BNInfer (inference BatchNorm, per channel) and LayerNorm (over trailing axes)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from ..platform.soc import SocSpec
from .core.base import (KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work, cores_for,
                        covered, prod, split_rows)
from .core.impl_modes import HIGH_PERFORMANCE
from .core.registry import register

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


@register
class LayerNorm(OpSpec):
    op_type = "LayerNorm"
    inputs = ("x", "gamma", "beta?")
    outputs = ("y", "mean", "variance")
    attrs = {"begin_norm_axis": -1, "begin_params_axis": -1, "epsilon": 1e-5}
    impl_default = HIGH_PERFORMANCE
    tiling_struct = TilingStruct(("outer", "Q"), ("axis_len", "Q"), ("inner", "Q"), ("rows_per_block", "Q"),
                                 ("epsilon", "f"))

    def _axis(self, attrs, rank) -> int:
        a = int(self.attr(attrs, "begin_norm_axis"))
        if not -rank <= a < rank:
            raise OpError(f"begin_norm_axis {a} is out of range for rank {rank}")
        return a % rank

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        axis = self._axis(node.attrs, len(x.shape))
        g = node.input_desc(1)
        try:
            np.broadcast_shapes(x.shape[axis:], g.shape)
        except ValueError:
            raise OpError(f"gamma shape {list(g.shape)} does not match normalised dims {list(x.shape[axis:])}") from None
        stat = TensorDesc(x.shape[:axis] + (1,) * (len(x.shape) - axis), "float32", x.format, x.origin_format)
        return [TensorDesc(x.shape, x.dtype, x.format, x.origin_format), stat, stat]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        axis = self._axis(ctx.attrs, len(x.shape))
        rows, length = prod(x.shape[:axis]), prod(x.shape[axis:])
        block_dim, per = split_rows(rows, cores_for(self, ctx.soc))
        data = self.tiling_struct.pack(outer=rows, axis_len=length, inner=1, rows_per_block=per,
                                       epsilon=float(self.attr(ctx.attrs, "epsilon")))
        return TilingResult(block_dim, 0, data)

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x, gamma, beta = inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None
        # fp32 inside, or what the SoC and the implementation mode give (passes/soc_kernels.py: fp16 on Ascend310)
        inside = np.dtype(args.attrs.get("_internal_dtype") or "float32")
        eps = inside.type(t["epsilon"])
        flat = x.reshape(t["outer"], t["axis_len"])
        out = np.zeros((t["outer"], t["axis_len"]), dtype=inside)
        means = np.zeros((t["outer"], 1), dtype=np.float32)
        vars_ = np.zeros((t["outer"], 1), dtype=np.float32)
        end = covered(t["outer"], t["rows_per_block"], args.block_dim)   # rows are independent: one pass
        if end:
            r = flat[:end].astype(inside)
            mean = r.mean(axis=1, keepdims=True, dtype=inside)
            centred = r - mean
            var = np.square(centred).mean(axis=1, keepdims=True, dtype=inside)
            out[:end] = centred / np.sqrt(var + eps)
            means[:end], vars_[:end] = mean, var
        shape = args.outputs[0].shape
        y = out.reshape(shape) * gamma.astype(inside)
        if beta is not None:
            y = y + beta.astype(inside)
        return [y.astype(args.outputs[0].dtype), means.reshape(args.outputs[1].shape),
                vars_.reshape(args.outputs[2].shape)]

    def inside_dtype(self, dtype: str, soc: SocSpec, mode: str) -> str | None:
        """TBE's LayerNorm on fp16 input computes in fp32 if the SoC has fp32 vexp and the mode is high_performance
        (ATC's default), or with high_precision; else in fp16 (Ascend310 by default). compute() works in fp32
        unless told: the attribute is needed when that changes, or when high precision was asked for."""
        if dtype != "float16":
            return None
        vexp = soc.intrinsic_dtypes("vexp")
        inside = "float32" if ((vexp is None or "float32" in vexp) and mode == "high_performance") \
            or mode == "high_precision" else "float16"
        return inside if inside == "float16" or mode == "high_precision" else None

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel * 6  # mean, sub, square, mean, rsqrt-mul, affine
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
