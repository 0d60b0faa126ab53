"""Window ops with indices or transposed windows, any spatial rank: MaxPoolWithArgmaxV2 (ONNX MaxPool with its
Indices output: flat indices into the input, row-major or column-major per storage_order), MaxUnpool (scatter
back through those indices; an output_shape input decides the shape) and Conv3DTransposeD (ONNX ConvTranspose
on 5-D input; the N-D kernel also resolves negative pads, i.e. output_shape larger than the full result)."""
from __future__ import annotations

import itertools

import numpy as np

from ..ir.graph import Node, TensorDesc
from .conv_pool import out_dim
from .core.base import AIC, REQUIRED, KernelArgs, OpError, TilingContext, Work, ceil_div, check_bias, prod
from .core.registry import register
from .core.row_split import RowSplitOp, ints


def _window_geom(op, attrs, shape):
    nsp = len(shape) - 2
    if nsp < 1:
        raise OpError(f"pooling takes N, C and spatial dims, got {list(shape)}")
    k = ints(op.attr(attrs, "ksize"), nsp, "kernel_shape")
    s = ints(op.attr(attrs, "strides") or [1] * nsp, nsp, "strides")
    d = ints(op.attr(attrs, "dilations") or [1] * nsp, nsp, "dilations")
    p = ints(op.attr(attrs, "pads") or [0] * 2 * nsp, 2 * nsp, "pads")   # ONNX order: begins, then ends
    if min(k + s + d) < 1 or min(p) < 0:
        raise OpError(f"kernel {k}, strides {s}, dilations {d} must be >= 1 and pads {p} >= 0")
    cm = bool(op.attr(attrs, "ceil_mode"))
    out = [out_dim(shape[2 + i], k[i], s[i], d[i], p[i], p[i + nsp], cm) for i in range(nsp)]
    return k, s, d, p, out


@register
class MaxPoolWithArgmaxV2(RowSplitOp):
    """Max pooling and, per output, the flat index of the chosen input cell (the first maximum in window
    order; padding never wins): (n * C + c) * prod(spatial) + the spatial offset, row-major, or column-major
    over H, W when storage_order is 1."""
    op_type = "MaxPoolWithArgmaxV2"
    inputs = ("x",)
    outputs = ("y", "argmax")
    attrs = {"ksize": REQUIRED, "strides": None, "pads": None, "dilations": None, "ceil_mode": False,
             "storage_order": 0}
    dtypes = ("float32", "float16", "float64", "int8", "uint8", "int64")

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        out = _window_geom(self, node.attrs, x.shape)[4]
        shape = tuple(x.shape[:2]) + tuple(out)
        return [TensorDesc(shape, x.dtype, x.format, x.origin_format),
                TensorDesc(shape, "int64", x.format, x.origin_format)]

    def rows(self, ctx: TilingContext) -> int:
        return prod(ctx.inputs[0].shape[:2])

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        k, s, d, p, out = _window_geom(self, args.attrs, x.shape)
        nsp, sp = len(k), x.shape[2:]
        planes = x.reshape((-1,) + sp)
        end = self.covered_rows(args)
        best = np.full((end,) + tuple(out), -np.inf)
        where = np.full((end,) + tuple(out), -1, np.int64)
        grids = np.meshgrid(*[np.arange(o) for o in out], indexing="ij")
        col_major = int(self.attr(args.attrs, "storage_order")) == 1
        for tap in itertools.product(*[range(kk) for kk in k]):
            pos = [grids[i] * s[i] - p[i] + tap[i] * d[i] for i in range(nsp)]
            inside = np.all([(q >= 0) & (q < sp[i]) for i, q in enumerate(pos)], axis=0)
            clipped = [np.clip(q, 0, sp[i] - 1) for i, q in enumerate(pos)]
            vals = np.where(inside, planes[(slice(0, end),) + tuple(clipped)], -np.inf)
            better = vals > best
            if col_major and nsp == 2:
                flat = clipped[0] + clipped[1] * sp[0]
            else:
                flat = np.ravel_multi_index(tuple(clipped), sp)
            best = np.where(better, vals, best)
            where = np.where(better & inside, flat, where)
        y = np.zeros((planes.shape[0],) + tuple(out), x.dtype)
        idx = np.zeros((planes.shape[0],) + tuple(out), np.int64)
        y[:end] = best
        idx[:end] = where + (np.arange(end) * prod(sp)).reshape((-1,) + (1,) * nsp)
        return [y.reshape(args.outputs[0].shape), idx.reshape(args.outputs[1].shape)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = 3 * ctx.outputs[0].numel * prod(ints(self.attr(ctx.attrs, "ksize")))
        return w


@register
class MaxUnpool(RowSplitOp):
    """y (zeros) with x scattered to the flat indices MaxPool gave, over the default unpooled shape
    ((in - 1) * stride - pads + kernel) padded with zeros up to output_shape when that input is given: the
    indices address the default shape, as ONNX's node case spells out (onnxruntime addresses output_shape's
    layout instead; the two agree whenever output_shape is the default shape)."""
    op_type = "MaxUnpool"
    inputs = ("x", "indices", "output_shape?")
    attrs = {"ksize": REQUIRED, "strides": None, "pads": None}
    infer_depend = frozenset({2})
    dtypes = ("float32", "float16", "float64", "int64", "int32")

    def _default(self, attrs, shape):
        nsp = len(shape) - 2
        k = ints(self.attr(attrs, "ksize"), nsp, "kernel_shape")
        s = ints(self.attr(attrs, "strides") or [1] * nsp, nsp, "strides")
        p = ints(self.attr(attrs, "pads") or [0] * 2 * nsp, 2 * nsp, "pads")
        out = [(shape[2 + i] - 1) * s[i] - p[i] - p[i + nsp] + k[i] for i in range(nsp)]
        if min(out, default=1) < 1:
            raise OpError(f"unpooled size {out} is not positive")
        return tuple(shape[:2]) + tuple(out)

    def infer(self, node: Node) -> list[TensorDesc]:
        x, idx = node.input_desc(0), node.input_desc(1)
        if tuple(idx.shape) != tuple(x.shape) or len(x.shape) < 3:
            raise OpError(f"indices {list(idx.shape)} must have the shape of x {list(x.shape)}")
        base = self._default(node.attrs, x.shape)
        if len(node.inputs) > 2 and node.inputs[2] is not None:
            value = node.const_input(2)
            if value is None:
                return [TensorDesc((-1,) * len(x.shape), x.dtype, x.format, x.origin_format)]
            shape = tuple(ints(value, len(x.shape), "output_shape"))
            if any(a < b for a, b in zip(shape, base)):
                raise OpError(f"output_shape {list(shape)} is smaller than the unpooled shape {list(base)}")
            base = shape
        return [TensorDesc(base, x.dtype, x.format, x.origin_format)]

    def rows(self, ctx: TilingContext) -> int:
        return int(ctx.inputs[0].shape[0])

    def compute(self, args: KernelArgs, inputs):
        x, idx = inputs[0], inputs[1]
        base = self._default(args.attrs, x.shape)
        flat = np.zeros(prod(base), x.dtype)
        per_image = prod(x.shape[1:])
        end = self.covered_rows(args) * per_image
        i = idx.reshape(-1)[:end].astype(np.int64)
        if np.any((i < 0) | (i >= flat.size)):
            raise OpError(f"index {i[(i < 0) | (i >= flat.size)][0]} is outside the unpooled tensor of {flat.size}")
        flat[i] = x.reshape(-1)[:end]
        out = np.zeros(args.outputs[0].shape, x.dtype)
        out[tuple(slice(0, b) for b in base)] = flat.reshape(base)
        return [out]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = max(ctx.outputs[0].numel, 0) + ctx.inputs[0].numel
        return w


def conv_transpose_nd(x, w, bias, strides, dil, pads_lo, out, groups) -> np.ndarray:
    """ConvTranspose of x [N, Cin, *sp] with w [Cin, Cout/g, *k] into out spatial sizes, the result's first
    cell at full-result position pads_lo (negative: zeros in front)."""
    n, cin = x.shape[:2]
    og, nsp = w.shape[1], len(strides)
    k, sp = w.shape[2:], x.shape[2:]
    full = [(sp[i] - 1) * strides[i] + dil[i] * (k[i] - 1) + 1 for i in range(nsp)]
    lead = [max(0, -p) for p in pads_lo]
    size = [lead[i] + max(full[i], pads_lo[i] + out[i]) for i in range(nsp)]
    acc = np.float64 if x.dtype == np.float64 else np.float32
    buf = np.zeros((n, og * groups) + tuple(size), acc)
    cg = cin // groups
    for g in range(groups):
        xg = x[:, g * cg:(g + 1) * cg].astype(acc)
        wg = w[g * cg:(g + 1) * cg].astype(acc)
        for tap in itertools.product(*[range(kk) for kk in k]):
            contrib = np.tensordot(xg, wg[(slice(None), slice(None)) + tap], axes=([1], [0]))   # (N, *sp, og)
            contrib = np.moveaxis(contrib, -1, 1)
            window = tuple(slice(lead[i] + tap[i] * dil[i], lead[i] + tap[i] * dil[i] + strides[i] * (sp[i] - 1) + 1,
                                 strides[i]) for i in range(nsp))
            buf[(slice(None), slice(g * og, (g + 1) * og)) + window] += contrib
    res = buf[(slice(None), slice(None)) + tuple(slice(lead[i] + pads_lo[i], lead[i] + pads_lo[i] + out[i])
                                                   for i in range(nsp))]
    if bias is not None:
        res = res + bias.astype(acc).reshape((1, -1) + (1,) * nsp)
    return res


@register
class Conv3DTransposeD(RowSplitOp):
    """ONNX ConvTranspose on N, C, D, H, W: filter [Cin, Cout/g, kd, kh, kw]; pads [d0, d1, h0, h1, w0, w1]
    (GE order; the frontend resolves output_shape / auto_pad into them, negative when the output is larger)."""
    op_type = "Conv3DTransposeD"
    inputs = ("x", "filter", "bias?")
    attrs = {"strides": [1] * 5, "pads": [0] * 6, "dilations": [1] * 5, "groups": 1, "output_padding": [0] * 5,
             "data_format": "NCDHW"}
    core_type = AIC

    def _geom(self, x, w, attrs):
        if len(x) != 5 or len(w) != 5:
            raise OpError(f"Conv3DTransposeD takes 5-D x and filter, got {list(x)} and {list(w)}")
        g = int(self.attr(attrs, "groups"))
        if g <= 0 or x[1] != w[0] or w[0] % g:
            raise OpError(f"channels do not match: x {list(x)}, filter {list(w)}, groups {g}")
        s = ints(self.attr(attrs, "strides"))[-3:]
        d = ints(self.attr(attrs, "dilations"))[-3:]
        op = ints(self.attr(attrs, "output_padding"))[-3:]
        p = ints(self.attr(attrs, "pads"), 6, "pads")
        lo = [p[0], p[2], p[4]]
        out = [(x[2 + i] - 1) * s[i] - p[2 * i] - p[2 * i + 1] + d[i] * (w[2 + i] - 1) + 1 + op[i] for i in range(3)]
        if min(out) <= 0 or min(s + d) < 1:
            raise OpError(f"output spatial size {out} is not positive")
        return g, s, d, lo, out

    def infer(self, node: Node) -> list[TensorDesc]:
        x, w = node.input_desc(0), node.input_desc(1)
        g, *_, out = self._geom(x.shape, w.shape, node.attrs)
        check_bias(node, 2, w.shape[1] * g)
        return [TensorDesc((x.shape[0], w.shape[1] * g, *out), x.dtype, "NCDHW", "NCDHW")]

    def rows(self, ctx: TilingContext) -> int:
        return int(ctx.outputs[0].shape[0])

    def compute(self, args: KernelArgs, inputs):
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        g, s, d, lo, out = self._geom(x.shape, w.shape, args.attrs)
        end = self.covered_rows(args)
        res = np.zeros(args.outputs[0].shape, args.outputs[0].dtype)
        if end:
            res[:end] = conv_transpose_nd(x[:end], w, bias, s, d, lo, out, g)
        return [res]

    def work(self, ctx: TilingContext) -> Work:
        x, w = ctx.inputs[0], ctx.inputs[1]
        fm, fk, fn = ctx.soc.mkn_for(x.dtype)
        fractals = x.shape[0] * ceil_div(prod(x.shape[2:]), fm) * ceil_div(x.shape[1], fk) * \
            ceil_div(prod(w.shape[1:]), fn)
        return Work(fractals=fractals, bytes=sum(d.nbytes for d in ctx.inputs if d is not None) +
                    ctx.outputs[0].nbytes, dtype=x.dtype)
