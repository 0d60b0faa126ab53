"""3-D convolution and pooling (NCDHW: Conv3D, MaxPool3D, AvgPool3D) and the transposed 2-D convolution
(Conv2DTransposeD). 1-D convolutions and pools are 2-D ones with H = 1 (the frontend reshapes).

Pads are [front, back, top, bottom, left, right] as GE's 3-D ops take them. Tiling splits output channels
(conv) or N×C planes (pool) over blocks; kernels compute only what the blocks cover."""
from __future__ import annotations

import itertools

import numpy as np

from ..ir.graph import Node, TensorDesc
from .conv_pool import out_dim
from .core.base import (
    AIC,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    Work,
    ceil_div,
    check_bias,
    cores_for,
    prod,
    split_rows,
)
from .core.registry import register
from .window_ops import conv_transpose_nd

ND_TILING = TilingStruct(("rows", "Q"), ("rows_per_block", "Q"))


def spatial_attrs(attrs: dict, get, nsp: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """(kernel, strides, dilations, pads as [(lo, hi)]) of an NC+spatial op with 2+nsp-long attrs."""
    def tail(name, default):
        v = [int(x) for x in (get(attrs, name) or default)]
        return v[-nsp:]
    pads = [int(p) for p in get(attrs, "pads")]
    if len(pads) != 2 * nsp:
        raise OpError(f"pads {pads} must have {2 * nsp} values")
    return tail("ksize", []), tail("strides", [1] * nsp), tail("dilations", [1] * nsp), \
        [(pads[2 * i], pads[2 * i + 1]) for i in range(nsp)]


def cout_tiling(ctx: TilingContext) -> TilingResult:
    """Output channels over the cube cores in blocks of the cube's N granule."""
    cout = ctx.outputs[0].shape[1]
    _, _, fn = ctx.soc.mkn_for(ctx.inputs[0].dtype)
    block_dim, per = split_rows(cout, ctx.soc.cube_cores, fn)
    return TilingResult(block_dim, 0, ND_TILING.pack(rows=cout, rows_per_block=per))


def windows_nd(xp: np.ndarray, kernel, strides, dil, out) -> np.ndarray:
    """(*kernel, *lead, *out) strided views of the padded trailing dims of xp."""
    nsp = len(kernel)
    cols = np.empty(tuple(kernel) + xp.shape[:-nsp] + tuple(out), dtype=xp.dtype)
    for pos in itertools.product(*(range(k) for k in kernel)):
        sl = tuple(slice(p * d, p * d + s * (o - 1) + 1, s) for p, d, s, o in zip(pos, dil, strides, out))
        cols[pos] = xp[(Ellipsis,) + sl]
    return cols


@register
class Conv3D(OpSpec):
    op_type = "Conv3D"
    inputs = ("x", "filter", "bias?")
    attrs = {"strides": [1] * 5, "pads": [0] * 6, "dilations": [1] * 5, "groups": 1, "data_format": "NCDHW"}
    formats = {"x": "NDC1HWC0", "filter": "FRACTAL_Z_3D", "y": "NDC1HWC0"}
    core_type = AIC
    tiling_struct = ND_TILING

    def _geom(self, x, w, attrs):
        if len(x) != 5 or len(w) != 5:
            raise OpError(f"Conv3D takes 5-D x and filter, got {list(x)} and {list(w)}")
        g = int(self.attr(attrs, "groups"))
        if g <= 0 or x[1] != w[1] * g or w[0] % g:
            raise OpError(f"channels do not match: x {list(x)}, filter {list(w)}, groups {g}")
        _, strides, dil, pads = spatial_attrs({**attrs, "ksize": [1, 1] + list(w[2:])}, self.attr, 3)
        out = [out_dim(x[2 + i], w[2 + i], strides[i], dil[i], *pads[i]) for i in range(3)]
        return g, list(w[2:]), strides, dil, pads, out

    def infer(self, node: Node) -> list[TensorDesc]:
        x, w = node.input_desc(0), node.input_desc(1)
        out = self._geom(x.shape, w.shape, node.attrs)[5]
        check_bias(node, 2, w.shape[0])
        return [TensorDesc((x.shape[0], w.shape[0], *out), x.dtype, "NCDHW", "NCDHW")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return cout_tiling(ctx)

    def compute(self, args, inputs):
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        g, kernel, strides, dil, pads, out = self._geom(x.shape, w.shape, args.attrs)
        acc = np.float64 if x.dtype == np.float64 else np.float32
        xp = np.pad(x.astype(acc), [(0, 0), (0, 0)] + pads)
        cols = windows_nd(xp, kernel, strides, dil, out)          # (kd,kh,kw, N, C, od,oh,ow)
        n, cin, cout = x.shape[0], x.shape[1], w.shape[0]
        cols = np.moveaxis(cols, (3, 4), (0, 1)).reshape(n, cin, prod(kernel), prod(out))
        cin_g, og = cin // g, cout // g
        wf = w.astype(acc).reshape(cout, -1)
        res = np.zeros((n, cout, prod(out)), acc)
        covered = min(cout, args.block_dim * args.tiling["rows_per_block"])
        for gi in range(ceil_div(covered, og)):
            c0, c1 = gi * og, min(covered, (gi + 1) * og)
            xg = cols[:, gi * cin_g:(gi + 1) * cin_g].reshape(n, cin_g * prod(kernel), prod(out))
            res[:, c0:c1] = np.einsum("ok,nkp->nop", wf[c0:c1], xg)
        if bias is not None:
            res += bias.astype(acc).reshape(1, -1, 1)
        return [res.reshape(args.outputs[0].shape).astype(args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        x, w, y = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
        fm, fk, fn = ctx.soc.mkn_for(x.dtype)
        g = int(self.attr(ctx.attrs, "groups"))
        fractals = g * x.shape[0] * ceil_div(prod(y.shape[2:]), fm) * ceil_div(prod(w.shape[1:]), fk) * \
            ceil_div(w.shape[0] // g, fn)
        return Work(fractals=fractals, bytes=sum(d.nbytes for d in ctx.inputs if d is not None) + y.nbytes,
                    dtype=x.dtype)


@register
class Conv2DTransposeD(OpSpec):
    """Transposed conv (ONNX ConvTranspose): filter [Cin, Cout/g, kh, kw]; output = (i-1)*s - pads +
    d*(k-1) + 1 + output_padding per spatial dim (the frontend resolves output_shape into pads)."""
    op_type = "Conv2DTransposeD"
    inputs = ("x", "filter", "bias?")
    attrs = {"strides": [1, 1, 1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1, 1, 1], "groups": 1,
             "output_padding": [0, 0, 0, 0], "data_format": "NCHW"}
    core_type = AIC
    tiling_struct = ND_TILING

    def _geom(self, x, w, attrs):
        if len(x) != 4 or len(w) != 4:
            raise OpError(f"Conv2DTransposeD takes 4-D x and filter, got {list(x)} and {list(w)}")
        g = int(self.attr(attrs, "groups"))
        if g <= 0 or x[1] != w[0] or w[0] % g:
            raise OpError(f"channels do not match: x {list(x)}, filter {list(w)}, groups {g}")
        s = [int(v) for v in self.attr(attrs, "strides")][-2:]
        d = [int(v) for v in self.attr(attrs, "dilations")][-2:]
        op = [int(v) for v in self.attr(attrs, "output_padding")][-2:]
        p = [int(v) for v in self.attr(attrs, "pads")]
        pads = [(p[0], p[1]), (p[2], p[3])]
        out = [(x[2 + i] - 1) * s[i] - sum(pads[i]) + d[i] * (w[2 + i] - 1) + 1 + op[i] for i in range(2)]
        if min(out) <= 0:
            raise OpError(f"output spatial size {out} is not positive")
        return g, s, d, pads, op, out

    def infer(self, node: Node) -> list[TensorDesc]:
        x, w = node.input_desc(0), node.input_desc(1)
        g, *_, out = self._geom(x.shape, w.shape, node.attrs)
        check_bias(node, 2, w.shape[1] * g)
        return [TensorDesc((x.shape[0], w.shape[1] * g, *out), x.dtype, "NCHW", "NCHW")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return cout_tiling(ctx)

    def compute(self, args, inputs):
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        g, s, d, pads, op, out = self._geom(x.shape, w.shape, args.attrs)
        # the N-D kernel; negative pads (an output_shape past the full result) put zeros at the edges
        res = conv_transpose_nd(x, w, bias, s, d, [pads[0][0], pads[1][0]], out, g)
        covered = min(res.shape[1], args.block_dim * args.tiling["rows_per_block"])
        res[:, covered:] = 0   # output channels past the blocks' range stay zero
        return [res.astype(args.outputs[0].dtype)]

    def work(self, ctx: TilingContext) -> Work:
        x, w = ctx.inputs[0], ctx.inputs[1]
        fm, fk, fn = ctx.soc.mkn_for(x.dtype)
        fractals = x.shape[0] * ceil_div(prod(x.shape[2:]), fm) * ceil_div(x.shape[1], fk) * \
            ceil_div(prod(w.shape[1:]), fn)
        return Work(fractals=fractals, bytes=sum(d.nbytes for d in ctx.inputs if d is not None) +
                    ctx.outputs[0].nbytes, dtype=x.dtype)


class Pool3DBase(OpSpec):
    inputs = ("x",)
    attrs = {"ksize": None, "strides": [1] * 5, "pads": [0] * 6, "dilations": [1] * 5, "ceil_mode": False,
             "data_format": "NCDHW"}
    formats = {"x": "NDC1HWC0", "y": "NDC1HWC0"}
    dtypes = ("float32", "float16", "float64")
    tiling_struct = ND_TILING

    def _geom(self, shape, attrs):
        if len(shape) != 5:
            raise OpError(f"3-D pooling takes 5-D NCDHW input, got {list(shape)}")
        kernel, strides, dil, pads = spatial_attrs(attrs, self.attr, 3)
        cm = bool(self.attr(attrs, "ceil_mode"))
        out = [out_dim(shape[2 + i], kernel[i], strides[i], dil[i], *pads[i], cm) for i in range(3)]
        return kernel, strides, dil, pads, out

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        out = self._geom(x.shape, node.attrs)[4]
        return [TensorDesc((*x.shape[:2], *out), x.dtype, "NCDHW", "NCDHW")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        planes = prod(ctx.inputs[0].shape[:2])
        block_dim, per = split_rows(planes, cores_for(self, ctx.soc))
        return TilingResult(block_dim, 0, ND_TILING.pack(rows=planes, rows_per_block=per))

    def padded(self, x, kernel, strides, dil, pads, out, fill):
        extra = [max(0, (o - 1) * s + d * (k - 1) + 1 - (n + p[0]) - p[1])
                 for o, s, d, k, n, p in zip(out, strides, dil, kernel, x.shape[1:], pads)]
        return np.pad(x, [(0, 0)] + [(p[0], p[1] + e) for p, e in zip(pads, extra)], constant_values=fill)

    def compute(self, args, inputs):
        x = inputs[0]
        kernel, strides, dil, pads, out = self._geom(x.shape, args.attrs)
        planes = x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])
        covered = min(planes.shape[0], args.block_dim * args.tiling["rows_per_block"])
        res = np.zeros((planes.shape[0], *out), x.dtype)
        if covered:
            res[:covered] = self.reduce(planes[:covered], kernel, strides, dil, pads, out, args.attrs)
        return [res.reshape(args.outputs[0].shape)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.outputs[0].numel * prod(self._geom(ctx.inputs[0].shape, ctx.attrs)[0])
        return w


@register
class MaxPool3D(Pool3DBase):
    op_type = "MaxPool3D"

    def reduce(self, planes, kernel, strides, dil, pads, out, attrs):
        xp = self.padded(planes, kernel, strides, dil, pads, out, -np.inf)
        return windows_nd(xp, kernel, strides, dil, out).max(axis=(0, 1, 2))


@register
class AvgPool3D(Pool3DBase):
    op_type = "AvgPool3D"
    attrs = {**Pool3DBase.attrs, "count_include_pad": False}

    def reduce(self, planes, kernel, strides, dil, pads, out, attrs):
        xp = self.padded(planes, kernel, strides, dil, pads, out, 0.0)
        total = windows_nd(xp, kernel, strides, dil, out).sum(axis=(0, 1, 2))
        if self.attr(attrs, "count_include_pad"):
            ones = np.zeros((1,) + tuple(n + p[0] + p[1] for n, p in zip(planes.shape[1:], pads)))
            ones[...] = 1.0
            ones = self.padded(ones, kernel, strides, dil, [(0, 0)] * 3, out, 0.0)
        else:
            ones = self.padded(np.ones((1,) + planes.shape[1:]), kernel, strides, dil, pads, out, 0.0)
        count = windows_nd(ones, kernel, strides, dil, out).sum(axis=(0, 1, 2))
        return (total / count).astype(planes.dtype)
