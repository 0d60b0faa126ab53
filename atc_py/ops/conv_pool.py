"""Convolution and pooling (NCHW): Conv2D, MaxPoolV3, AvgPoolV2, GlobalAveragePool."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .base import (AIC, KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work,
                   ceil_div, cores_for, covered, split_rows)
from .registry import register

CONV_TILING = TilingStruct(("n", "I"), ("cin", "I"), ("h", "I"), ("w", "I"), ("cout", "I"), ("kh", "I"),
                           ("kw", "I"), ("ho", "I"), ("wo", "I"), ("groups", "I"), ("cout_per_block", "I"),
                           ("sh", "H"), ("sw", "H"), ("dh", "H"), ("dw", "H"),
                           ("pt", "H"), ("pb", "H"), ("pl", "H"), ("pr", "H"))
POOL_TILING = TilingStruct(("planes", "Q"), ("planes_per_block", "Q"), ("h", "I"), ("w", "I"), ("ho", "I"),
                           ("wo", "I"), ("kh", "H"), ("kw", "H"), ("sh", "H"), ("sw", "H"),
                           ("pt", "H"), ("pb", "H"), ("pl", "H"), ("pr", "H"), ("dh", "H"), ("dw", "H"))


def out_dim(size: int, k: int, s: int, d: int, p0: int, p1: int, ceil_mode: bool = False) -> int:
    eff = d * (k - 1) + 1
    span = size + p0 + p1 - eff
    if span < 0:
        raise OpError(f"window {eff} is larger than the padded input {size + p0 + p1}")
    o = (ceil_div(span, s) if ceil_mode else span // s) + 1
    if ceil_mode and (o - 1) * s >= size + p0:  # last window must start inside input or top padding
        o -= 1
    return o


def hw4(v, name) -> tuple[int, int]:
    if len(v) != 4:
        raise OpError(f"attribute {name} must have 4 values (NCHW), got {list(v)}")
    return int(v[2]), int(v[3])


def gather_windows(x: np.ndarray, kh, kw, sh, sw, dh, dw, ho, wo) -> np.ndarray:
    """(kh, kw, ..., ho, wo) strided views of padded planes x[..., H, W]."""
    cols = np.empty((kh, kw) + x.shape[:-2] + (ho, wo), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[i, j] = x[..., i * dh: i * dh + sh * (ho - 1) + 1: sh, j * dw: j * dw + sw * (wo - 1) + 1: sw]
    return cols


@register
class Conv2D(OpSpec):
    op_type = "Conv2D"
    inputs = ("x", "filter", "bias?")
    attrs = {"strides": [1, 1, 1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1, 1, 1], "groups": 1,
             "data_format": "NCHW"}
    core_type = AIC
    tiling_struct = CONV_TILING

    def _geom(self, x, w, attrs):
        if len(x) != 4 or len(w) != 4:
            raise OpError(f"Conv2D takes 4-D x and filter, got {list(x)} and {list(w)}")
        g = int(self.attr(attrs, "groups"))
        n, c, h, wd = x
        cout, cin_g, kh, kw = w
        if g <= 0 or c != cin_g * g or cout % g:
            raise OpError(f"channels do not match: x {list(x)}, filter {list(w)}, groups {g}")
        sh, sw = hw4(self.attr(attrs, "strides"), "strides")
        dh, dw = hw4(self.attr(attrs, "dilations"), "dilations")
        pt, pb, pl, pr = (int(p) for p in self.attr(attrs, "pads"))
        ho = out_dim(h, kh, sh, dh, pt, pb)
        wo = out_dim(wd, kw, sw, dw, pl, pr)
        return dict(n=n, cin=c, h=h, w=wd, cout=cout, kh=kh, kw=kw, ho=ho, wo=wo, groups=g,
                    sh=sh, sw=sw, dh=dh, dw=dw, pt=pt, pb=pb, pl=pl, pr=pr)

    def infer(self, node: Node) -> list[TensorDesc]:
        x, w = node.input_desc(0), node.input_desc(1)
        g = self._geom(x.shape, w.shape, node.attrs)
        return [TensorDesc((g["n"], g["cout"], g["ho"], g["wo"]), x.dtype, "NCHW", "NCHW")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        g = self._geom(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.attrs)
        _, _, fn = ctx.soc.mkn_for(ctx.inputs[0].dtype)
        block_dim, per = split_rows(g["cout"], ctx.soc.cube_cores, fn)
        return TilingResult(block_dim, 0, CONV_TILING.pack(cout_per_block=per, **g))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x, w, bias = inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None
        acc = np.float32 if x.dtype != np.float64 else np.float64
        xp = np.pad(x.astype(acc), ((0, 0), (0, 0), (t["pt"], t["pb"]), (t["pl"], t["pr"])))
        cols = gather_windows(xp, t["kh"], t["kw"], t["sh"], t["sw"], t["dh"], t["dw"], t["ho"], t["wo"])
        # (kh, kw, N, C, ho, wo) -> (N, C, kh, kw, P)
        cols = cols.transpose(2, 3, 0, 1, 4, 5).reshape(t["n"], t["cin"], t["kh"] * t["kw"], t["ho"] * t["wo"])
        cin_g, og = t["cin"] // t["groups"], t["cout"] // t["groups"]
        wf = w.astype(acc).reshape(t["cout"], -1)
        out = np.zeros((t["n"], t["cout"], t["ho"] * t["wo"]), dtype=acc)
        # the blocks cover output channels [0, block_dim * cout_per_block): one GEMM per image and group
        covered = min(t["cout"], args.block_dim * t["cout_per_block"])
        for gi in range(0, -(-covered // og)):
            c0, c1 = gi * og, min(covered, (gi + 1) * og)
            xg = cols[:, gi * cin_g:(gi + 1) * cin_g].reshape(t["n"], -1, t["ho"] * t["wo"])
            for n in range(t["n"]):
                out[n, c0:c1] = wf[c0:c1] @ xg[n]
        if bias is not None:
            out += bias.astype(acc).reshape(1, -1, 1)
        return [out.reshape(args.outputs[0].shape).astype(args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        g = self._geom(ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.attrs)
        fm, fk, fn = ctx.soc.mkn_for(ctx.inputs[0].dtype)
        kdim = (g["cin"] // g["groups"]) * g["kh"] * g["kw"]
        fractals = g["groups"] * g["n"] * ceil_div(g["ho"] * g["wo"], fm) * ceil_div(kdim, fk) * \
            ceil_div(g["cout"] // g["groups"], fn)
        moved = sum(d.nbytes for d in ctx.inputs if d is not None) + ctx.outputs[0].nbytes
        return Work(fractals=fractals, bytes=moved, dtype=ctx.inputs[0].dtype)


class PoolBase(OpSpec):
    inputs = ("x",)
    tiling_struct = POOL_TILING
    attrs = {"ksize": None, "strides": [1, 1, 1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1, 1, 1],
             "ceil_mode": False, "data_format": "NCHW"}

    def _geom(self, shape, attrs):
        if len(shape) != 4:
            raise OpError(f"pooling takes 4-D NCHW input, got {list(shape)}")
        n, c, h, w = shape
        kh, kw = hw4(self.attr(attrs, "ksize"), "ksize")
        sh, sw = hw4(self.attr(attrs, "strides"), "strides")
        dh, dw = hw4(self.attr(attrs, "dilations"), "dilations")
        pt, pb, pl, pr = (int(p) for p in self.attr(attrs, "pads"))
        cm = bool(self.attr(attrs, "ceil_mode"))
        return dict(n=n, c=c, h=h, w=w, kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw, pt=pt, pb=pb, pl=pl, pr=pr,
                    ho=out_dim(h, kh, sh, dh, pt, pb, cm), wo=out_dim(w, kw, sw, dw, pl, pr, cm))

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        g = self._geom(x.shape, node.attrs)
        return [TensorDesc((g["n"], g["c"], g["ho"], g["wo"]), x.dtype, "NCHW", "NCHW")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        g = self._geom(ctx.inputs[0].shape, ctx.attrs)
        planes = g["n"] * g["c"]
        block_dim, per = split_rows(planes, cores_for(self, ctx.soc))
        keep = {k: g[k] for k in POOL_TILING.names if k in g}
        return TilingResult(block_dim, 0, POOL_TILING.pack(planes=planes, planes_per_block=per, **keep))

    def windows(self, t, planes: np.ndarray, fill: float) -> np.ndarray:
        # pad enough on the bottom/right for ceil-mode windows that run past the explicit padding
        need_h = (t["ho"] - 1) * t["sh"] + t["dh"] * (t["kh"] - 1) + 1 - (t["h"] + t["pt"])
        need_w = (t["wo"] - 1) * t["sw"] + t["dw"] * (t["kw"] - 1) + 1 - (t["w"] + t["pl"])
        xp = np.pad(planes, ((0, 0), (t["pt"], max(t["pb"], need_h)), (t["pl"], max(t["pr"], need_w))),
                    constant_values=fill)
        return gather_windows(xp, t["kh"], t["kw"], t["sh"], t["sw"], t["dh"], t["dw"], t["ho"], t["wo"])

    def reduce(self, t, planes: np.ndarray, attrs) -> np.ndarray:
        raise NotImplementedError

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x = inputs[0].reshape(-1, t["h"], t["w"])
        out = np.zeros((t["planes"], t["ho"], t["wo"]), dtype=x.dtype)
        # the blocks cover planes [0, block_dim * planes_per_block): one vectorised pass over them
        covered = min(t["planes"], args.block_dim * t["planes_per_block"])
        if covered > 0:
            out[:covered] = self.reduce(t, x[:covered], args.attrs)
        return [out.reshape(args.outputs[0].shape)]

    def work(self, ctx: TilingContext) -> Work:
        g = self._geom(ctx.inputs[0].shape, ctx.attrs)
        w = super().work(ctx)
        w.vector_ops = ctx.outputs[0].numel * g["kh"] * g["kw"]
        return w


@register
class MaxPoolV3(PoolBase):
    op_type = "MaxPoolV3"

    def reduce(self, t, planes, attrs):
        return self.windows(t, planes, -np.inf).max(axis=(0, 1))


@register
class AvgPoolV2(PoolBase):
    op_type = "AvgPoolV2"
    attrs = {**PoolBase.attrs, "exclusive": True}
    _counts: dict = {}

    def reduce(self, t, planes, attrs):
        total = self.windows(t, planes, 0.0).sum(axis=(0, 1), dtype=np.float32)
        return (total / self.counts(t, bool(self.attr(attrs, "exclusive")))).astype(planes.dtype)

    def counts(self, t, exclusive: bool) -> np.ndarray:
        """Cells per window: without padding (exclusive), or with the explicit padding but not the extra
        ceil-mode cells. Depends on the geometry only, so it is computed once per tiling."""
        key = (tuple(sorted(t.items())), exclusive)
        count = self._counts.get(key)
        if count is None:
            if exclusive:
                ones = np.ones((1, t["h"], t["w"]), dtype=np.float32)
                count = self.windows(t, ones, 0.0).sum(axis=(0, 1))
            else:
                hp, wp = t["h"] + t["pt"] + t["pb"], t["w"] + t["pl"] + t["pr"]
                ones = np.ones((1, hp, wp), dtype=np.float32)
                count = self.windows(dict(t, h=hp, w=wp, pt=0, pb=0, pl=0, pr=0), ones, 0.0).sum(axis=(0, 1))
            if len(self._counts) < 256:
                self._counts[key] = count
        return count


GAP_TILING = TilingStruct(("planes", "Q"), ("plane_size", "Q"), ("planes_per_block", "Q"))


@register
class GlobalAveragePool(OpSpec):
    op_type = "GlobalAveragePool"
    inputs = ("x",)
    tiling_struct = GAP_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if len(x.shape) < 3:
            raise OpError(f"GlobalAveragePool takes N,C,spatial... input, got {list(x.shape)}")
        return [TensorDesc(x.shape[:2] + (1,) * (len(x.shape) - 2), x.dtype, x.format, x.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x = ctx.inputs[0]
        planes = x.shape[0] * x.shape[1]
        block_dim, per = split_rows(planes, cores_for(self, ctx.soc))
        return TilingResult(block_dim, 0, GAP_TILING.pack(planes=planes, plane_size=x.numel // max(planes, 1),
                                                          planes_per_block=per))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x = inputs[0].reshape(t["planes"], t["plane_size"])
        out = np.zeros(t["planes"], dtype=x.dtype)
        end = covered(t["planes"], t["planes_per_block"], args.block_dim)   # planes are independent: one call
        out[:end] = x[:end].mean(axis=1, dtype=np.float32)
        return [out.reshape(args.outputs[0].shape)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel
        return w
