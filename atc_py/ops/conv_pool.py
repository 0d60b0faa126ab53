"""Convolution and pooling (NCHW): Conv2D, MaxPoolV3, AvgPoolV2, GlobalAveragePool.

Conv2D's tiling splits the output over batch x output rows x output channels (whole groups when grouped), as
CANN's convolution tiling does, choosing the grid whose largest block costs least at the SoC's fractal rate and
per-core port rates: a 64-channel layer uses every cube core, not 4 of them. Each block reads its input rows
(with the window's halo) and its filters and writes its output tile."""
from __future__ import annotations

import functools
import math

import numpy as np

from ..ir.formats import C04, SMALL_CHANNEL
from ..ir.graph import Node, TensorDesc
from .core.base import (
    AIC,
    KernelArgs,
    OpError,
    OpSpec,
    TilingContext,
    TilingResult,
    TilingStruct,
    Work,
    ceil_div,
    check_bias,
    cores_for,
    covered,
    direct_output,
    split_rows,
)
from .core.gemm import grouped_matmul
from .core.host_pool import cuts, run_pieces, scratch
from .core.registry import register
from .stem_fusion import aipp_attrs, conv_input, conv_input_desc, fused_vector_ops, output_shape, pooled

CONV_TILING = TilingStruct(("n", "I"), ("cin", "I"), ("h", "I"), ("w", "I"), ("cout", "I"), ("kh", "I"),
                           ("kw", "I"), ("ho", "I"), ("wo", "I"), ("groups", "I"), ("cout_per_block", "I"),
                           ("n_per_block", "I"), ("ho_per_block", "I"), ("blocks_n", "I"), ("blocks_h", "I"),
                           ("blocks_c", "I"),
                           ("sh", "H"), ("sw", "H"), ("dh", "H"), ("dw", "H"),
                           ("pt", "H"), ("pb", "H"), ("pl", "H"), ("pr", "H"))
POOL_TILING = TilingStruct(("planes", "Q"), ("planes_per_block", "Q"), ("h", "I"), ("w", "I"), ("ho", "I"),
                           ("wo", "I"), ("kh", "H"), ("kw", "H"), ("sh", "H"), ("sw", "H"),
                           ("pt", "H"), ("pb", "H"), ("pl", "H"), ("pr", "H"), ("dh", "H"), ("dw", "H"))


INT_CUBE = ("int8", "uint8", "int32")   # quantized cube ops: int8/uint8 data, int32 bias and result


def int_operands(x: np.ndarray, w: np.ndarray, offset_x, offset_w, w_axis: int):
    """x - offset_x and w - offset_w (broadcast along w_axis) in float64, where int8 products sum exactly."""
    xs = x.astype(np.float64) - float(offset_x)
    ow = np.asarray(offset_w if offset_w is not None else 0, np.float64)
    if ow.size > 1:
        shape = [1] * w.ndim
        shape[w_axis] = -1
        ow = ow.reshape(shape)
    return xs, w.astype(np.float64) - ow


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


def pad_planes(x: np.ndarray, pt: int, pb: int, pl: int, pr: int, fill: float = 0.0, dtype=None) -> np.ndarray:
    """x[..., H, W] padded with `fill`, converted to `dtype` in the same copy. One allocation and one copy:
    np.pad spends ~100 us of Python per call, more than a small kernel's arithmetic."""
    dtype = np.dtype(dtype or x.dtype)
    if not (pt or pb or pl or pr):
        return x.astype(dtype, copy=False)
    h, w = x.shape[-2:]
    out = np.full(x.shape[:-2] + (h + pt + pb, w + pl + pr), fill, dtype=dtype)
    out[..., pt:pt + h, pl:pl + w] = x
    return out


def window_tap(xp: np.ndarray, i: int, j: int, sh, sw, dh, dw, ho, wo) -> np.ndarray:
    """The strided view of padded planes xp[..., H, W] that window cell (i, j) sees at every output position."""
    return xp[..., i * dh: i * dh + sh * (ho - 1) + 1: sh, j * dw: j * dw + sw * (wo - 1) + 1: sw]


# reductions whose result does not depend on the order of the taps (exact, no rounding): separable
ORDER_FREE = (np.maximum, np.minimum, np.fmax, np.fmin)


def reduce_windows(xp: np.ndarray, ufunc, out: np.ndarray, kh, kw, sh, sw, dh, dw, ho, wo) -> np.ndarray:
    """out[..., ho, wo] = ufunc over the kh x kw window cells, one numpy call per cell and no window copy
    (gathering all windows and reducing over small strided axes cost ~20x more). Max/min pooling is
    separable (the same values in any order): the kw column taps of every padded row first, then the kh row
    taps of those — kh + kw calls, and the second pass reads whole rows (3x3 stride 2: ~1.3x faster)."""
    if ufunc in ORDER_FREE and kh > 1 and kw > 1:
        rows = scratch("pool_rows", xp.shape[:-2] + (xp.shape[-2], wo), out.dtype)
        for j in range(kw):
            tap = xp[..., :, j * dw: j * dw + sw * (wo - 1) + 1: sw]
            if j == 0:
                np.copyto(rows, tap, casting="unsafe")
            else:
                ufunc(rows, tap, out=rows, casting="unsafe")
        for i in range(kh):
            tap = rows[..., i * dh: i * dh + sh * (ho - 1) + 1: sh, :]
            if i == 0:
                np.copyto(out, tap, casting="unsafe")
            else:
                ufunc(out, tap, out=out, casting="unsafe")
        return out
    for i in range(kh):
        for j in range(kw):
            tap = window_tap(xp, i, j, sh, sw, dh, dw, ho, wo)
            if i == 0 and j == 0:
                np.copyto(out, tap, casting="unsafe")
            else:
                ufunc(out, tap, out=out, casting="unsafe")
    return out


def im2col(xp: np.ndarray, kh, kw, sh, sw, dh, dw, ho, wo) -> np.ndarray:
    """(N, C, kh, kw, ho * wo) columns of padded NCHW xp in GEMM order: one strided view, one copy."""
    xp = np.ascontiguousarray(xp)
    n, c = xp.shape[:2]
    s_n, s_c, s_h, s_w = xp.strides
    # np.ndarray over xp's buffer: the same view as stride_tricks.as_strided without its ~5 us of Python
    windows = np.ndarray((n, c, kh, kw, ho, wo), xp.dtype, xp, 0, (s_n, s_c, dh * s_h, dw * s_w, sh * s_h, sw * s_w))
    return windows.reshape(n, c, kh, kw, ho * wo)   # the reshape of this strided view is the copy


# im2col in two copies (row shifts first) below this output width: numpy's strided copy runs its inner loop
# over one output row, which costs more than the copy when the rows are short (a 14-wide row: 1.7x slower)
ROW_SHIFT_MAX_WO = 32


def im2col_scratch(xp: np.ndarray, kh, kw, sh, sw, dh, dw, ho, wo) -> np.ndarray:
    """im2col into the thread's scratch buffer: the same values as the strided view, copied into reused memory
    (im2col_into: one strided copy, or for stride-1 rows shorter than ROW_SHIFT_MAX_WO the kw column shifts of
    every padded row first, then each tap's rows as one contiguous run of ho*wo)."""
    n, c = xp.shape[:2]
    return im2col_into(scratch("cols", (n, c, kh, kw, ho * wo), xp.dtype), xp, kh, kw, sh, sw, dh, dw, ho, wo)


def pad_into(out: np.ndarray, x: np.ndarray, pt: int, pb: int, pl: int, pr: int) -> np.ndarray:
    """x[..., H, W] zero-padded into `out` (borders zeroed, the interior copied and converted in one pass)."""
    h, w = x.shape[-2:]
    if pt:
        out[..., :pt, :] = 0
    if pb:
        out[..., pt + h:, :] = 0
    if pl:
        out[..., pt:pt + h, :pl] = 0
    if pr:
        out[..., pt:pt + h, pl + w:] = 0
    np.copyto(out[..., pt:pt + h, pl:pl + w], x, casting="unsafe")
    return out


def im2col_into(cols: np.ndarray, xp: np.ndarray, kh, kw, sh, sw, dh, dw, ho, wo) -> np.ndarray:
    """im2col's copy into `cols` (N, C, kh, kw, ho * wo), e.g. a channel range of a larger buffer: one strided
    copy, or for stride-1 rows shorter than ROW_SHIFT_MAX_WO two (the kw column shifts of every padded row, into
    this thread's scratch, then each tap's rows as one contiguous run)."""
    n, c = xp.shape[:2]
    s_n, s_c, s_h, s_w = xp.strides
    if sh == 1 and kh > 1 and kw > 1 and wo <= ROW_SHIFT_MAX_WO:
        hp = xp.shape[2]
        shifted = scratch("shifted", (n, c, kw, hp, wo), xp.dtype)
        np.copyto(shifted, np.ndarray((n, c, kw, hp, wo), xp.dtype, xp, 0, (s_n, s_c, dw * s_w, s_h, sw * s_w)))
        r_n, r_c, r_j, r_h, r_w = shifted.strides
        np.copyto(cols, np.ndarray((n, c, kh, kw, ho * wo), xp.dtype, shifted, 0, (r_n, r_c, dh * r_h, r_j, r_w)))
        return cols
    windows = np.ndarray((n, c, kh, kw, ho, wo), xp.dtype, xp, 0, (s_n, s_c, dh * s_h, dw * s_w, sh * s_h, sw * s_w))
    np.copyto(cols.reshape(n, c, kh, kw, ho, wo), windows)
    return cols


def conv_columns(x: np.ndarray, t: dict, acc) -> np.ndarray:
    """The GEMM operand of a convolution, (N, C, kh * kw, ho * wo) in `acc`: x itself (1x1, stride 1, no pads, same
    dtype), else padding and im2col (or the dtype conversion) into this thread's scratch — cut over the planes
    (image x channel) for the host pool, or over output rows when there are few planes (from a smaller size when
    they convert float16: heavy). Copies only: the same values however it is cut (host_pool.cuts)."""
    n, c = x.shape[:2]
    planes = n * c
    kh, kw, sh, sw, dh, dw, ho, wo = (t[k] for k in ("kh", "kw", "sh", "sw", "dh", "dw", "ho", "wo"))
    pads = (t["pt"], t["pb"], t["pl"], t["pr"])
    p = ho * wo
    x = np.ascontiguousarray(x).reshape(1, planes, t["h"], t["w"])   # planes are independent: one axis of them
    if (kh, kw, sh, sw) == (1, 1, 1, 1) and not any(pads):
        if x.dtype == acc:
            return x.reshape(n, c, 1, p)
        cols = scratch("cols", (planes, p), acc)
        ranges = cuts(planes, cols.nbytes, heavy=x.dtype != acc)
        flat = x.reshape(planes, p)
        run_pieces(len(ranges), lambda i: np.copyto(cols[slice(*ranges[i])], flat[slice(*ranges[i])],
                                                     casting="unsafe"))
        return cols.reshape(n, c, 1, p)
    geom = (kh, kw, sh, sw, dh, dw, ho, wo)
    xp = scratch("pad", (1, planes, t["h"] + pads[0] + pads[1], t["w"] + pads[2] + pads[3]), acc) \
        if any(pads) or x.dtype != acc else x
    cols = scratch("cols", (1, planes, kh, kw, p), acc)
    ranges = cuts(planes, cols.nbytes, heavy=x.dtype != acc)
    if len(ranges) == 1 or planes >= 8 * len(ranges):      # plane ranges: each pads its planes, then copies their columns

        def piece(i):
            cs = slice(*ranges[i])
            if xp is not x:
                pad_into(xp[:, cs], x[:, cs], *pads)
            im2col_into(cols[:, cs], xp[:, cs], *geom)
        run_pieces(len(ranges), piece)
        return cols.reshape(n, c, kh * kw, p)
    if xp is not x:     # few planes (a first layer): pad them all, then output-row ranges of the columns
        pad_into(xp, x, *pads)
    ranges = cuts(ho, cols.nbytes, heavy=x.dtype != acc)
    s_n, s_c, s_h, s_w = xp.strides
    windows = np.ndarray((1, planes, kh, kw, ho, wo), xp.dtype, xp, 0, (s_n, s_c, dh * s_h, dw * s_w, sh * s_h, sw * s_w))
    rows = cols.reshape(1, planes, kh, kw, ho, wo)
    run_pieces(len(ranges), lambda i: np.copyto(rows[..., slice(*ranges[i]), :], windows[..., slice(*ranges[i]), :]))
    return cols.reshape(n, c, kh * kw, p)


HEAD_ESTIMATE_CYCLES = 2000   # what a block costs beyond its cube and data movement, for choosing the grid


def group_extension(cin_g: int, cout_g: int, groups: int, c0: int, n0: int) -> tuple[int, int, int]:
    """How CANN's Conv2D lays a grouped filter out in FRACTAL_Z: `e` consecutive groups share one block of
    channels so that each block's input channels fill whole C0s and its outputs whole 16s, e = min(lcm(lcm(cin_g,
    C0) / cin_g, lcm(cout_g, 16) / cout_g), groups) (the filter between the groups of a block is zeros). Returns
    (blocks, input channels of a block padded to C0, its output channels padded to 16): a depthwise 3x3
    convolution (cin_g = cout_g = 1) does 9 K fractals per 16 channels; a group of 24 channels computes as 48.
    Without groups: one block of the padded channels."""
    if groups <= 1:
        return 1, ceil_div(cin_g, c0) * c0, ceil_div(cout_g, n0) * n0
    e = min(math.lcm(math.lcm(cin_g, c0) // cin_g, math.lcm(cout_g, n0) // cout_g), groups)
    return ceil_div(groups, e), ceil_div(e * cin_g, c0) * c0, ceil_div(e * cout_g, n0) * n0


def strided_row_read(g: dict, c04: bool) -> bool:
    """CANN's Conv2D loads only the input rows a 1-row filter uses when it strides over rows without padding
    (its `strideh_opti_flag`: k_h == 1, stride_h > 1, all pads 0, not in C04 mode; the feature map goes to L1
    with (H - 1) // stride_h + 1 rows): a ResNet downsample convolution reads half its input, not all of it."""
    return g["kh"] == 1 and g["sh"] > 1 and not (g["pt"] or g["pb"] or g["pl"] or g["pr"] or c04)


@functools.lru_cache(maxsize=4096)
def conv_grid(n: int, cin: int, w: int, cout: int, kh: int, kw: int, ho: int, wo: int, groups: int, sh: int,
              dh: int, mkn: tuple, itemsize: int, out_itemsize: int, cores: int, ddr_rate: int, l0c: int,
              c04: bool = False, row_skip: bool = False) -> dict:
    """The batch x rows x channels grid whose largest block is cheapest (cube fractals against bytes at the
    core's DDR port rate, plus a head) and that block's work. The cube works on the filter's FRACTAL_Z: channels
    padded to C0 per kernel tap (C04: the taps and 4 channels packed along K), groups in extended blocks.
    `row_skip` (strided_row_read): a block loads one input row per output row."""
    fm, fk, fn = mkn
    if min(n, cout, ho, wo) <= 0:    # an empty output (batch 0): one block with nothing to do
        return dict(n_per=max(n, 0), h_per=max(ho, 0), c_per=max(cout, 0), blocks_n=1, blocks_h=1, blocks_c=1,
                    fractals=0, bytes=0, tiles=0, in_rows=0, cin_blk=cin)
    blocks, cin_b, og = group_extension(cin // groups, cout // groups, groups, fk, fn)
    kdim = ceil_div(kh * kw * C04, fk) * fk if c04 else cin_b * kh * kw
    cout = blocks * og                        # the extended output channels the cube computes
    cunit = og if blocks > 1 else fn          # channels come in whole blocks of groups, else in N granules
    cunits = ceil_div(cout, cunit)
    base_m, base_n = fm * 8, max(fn, (l0c // 2) // (fm * 8 * 4) // fn * fn)
    best = None
    for bc in range(1, min(cores, cunits) + 1):
        c_per = ceil_div(cunits, bc) * cunit
        blocks_c = ceil_div(cout, c_per)
        for bn in range(1, min(n, cores // blocks_c) + 1):
            n_per = ceil_div(n, bn)
            blocks_n = ceil_div(n, n_per)
            for bh in range(1, min(ho, cores // (blocks_c * blocks_n)) + 1):
                h_per = ceil_div(ho, bh)
                blocks_h = ceil_div(ho, h_per)
                m_rows = h_per * wo
                g_blk = c_per // og if blocks > 1 else 1
                fractals = n_per * ceil_div(m_rows, fm) * ceil_div(kdim, fk) * ceil_div(min(c_per, og), fn) * g_blk
                in_rows = h_per if row_skip else \
                    min((h_per - 1) * sh + (kh - 1) * dh + 1, (ho - 1) * sh + (kh - 1) * dh + 1)
                cin_blk = cin if blocks == 1 else min(cin, g_blk * cin_b)
                moved = (n_per * cin_blk * in_rows * w + c_per * kdim) * itemsize + n_per * c_per * m_rows * out_itemsize
                cost = (max(fractals, moved / max(1, ddr_rate)) + HEAD_ESTIMATE_CYCLES, blocks_n * blocks_h * blocks_c)
                if best is None or cost < best[0]:
                    tiles = n_per * ceil_div(m_rows, base_m) * ceil_div(c_per, base_n)
                    best = (cost, dict(n_per=n_per, h_per=h_per, c_per=c_per, blocks_n=blocks_n, blocks_h=blocks_h,
                                       blocks_c=blocks_c, fractals=fractals, bytes=moved, tiles=tiles,
                                       in_rows=in_rows, cin_blk=cin_blk))
    return best[1]


@register
class Conv2D(OpSpec):
    """fp32/fp16, and int8/uint8 as CANN's quantized Conv2D: int32 bias and result, the data offset
    `offset_x` and the filter offset input `offset_w` (scalar or per output channel) subtracted first."""
    op_type = "Conv2D"
    # residual: conv_add_fusion put the residual Add after this conv into its epilogue (fused_add)
    inputs = ("x", "filter", "bias?", "residual?", "offset_w?")
    formats = {"x": "NC1HWC0", "filter": "FRACTAL_Z", "residual": "NC1HWC0", "y": "NC1HWC0"}
    # fused_relu: relu_fusion put a following Relu into this kernel's epilogue (on the fp32 result)
    attrs = {"strides": [1, 1, 1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1, 1, 1], "groups": 1,
             "data_format": "NCHW", "fused_relu": False, "fused_add": False, "offset_x": 0}
    core_type = AIC
    dtypes = ("float32", "float16", "bfloat16") + INT_CUBE   # bf16 (Ascend 910B) widened to fp32 like fp16
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
        w = node.input_desc(1)
        x = conv_input_desc(node.input_desc(0), w, node.attrs)     # a fused AIPP's map of the image
        g = self._geom(x.shape, w.shape, node.attrs)
        shape = output_shape((g["n"], g["cout"], g["ho"], g["wo"]), node.attrs)   # pooled, when fused
        if (x.dtype in INT_CUBE) != (w.dtype in INT_CUBE):
            raise OpError(f"x ({x.dtype}) and filter ({w.dtype}) must both be float or both be integer")
        out = "int32" if x.dtype in INT_CUBE else x.dtype
        check_bias(node, 2, g["cout"])
        res = node.inputs[3] if len(node.inputs) > 3 else None
        if res is not None and (tuple(res.desc.shape) != shape or res.desc.dtype != out):
            raise OpError(f"residual {res.desc.dtype}{list(res.desc.shape)} is not the output's {out}{list(shape)}")
        return [TensorDesc(shape, out, "NCHW", "NCHW")]

    def _grid(self, ctx: TilingContext) -> tuple[dict, dict]:
        x, soc = conv_input_desc(ctx.inputs[0], ctx.inputs[1], ctx.attrs), ctx.soc
        g = self._geom(x.shape, ctx.inputs[1].shape, ctx.attrs)
        c04 = bool(ctx.attrs.get(SMALL_CHANNEL))
        grid = conv_grid(g["n"], g["cin"], g["w"], g["cout"], g["kh"], g["kw"], g["ho"], g["wo"], g["groups"],
                         g["sh"], g["dh"], tuple(soc.mkn_for(x.dtype)), np.dtype(x.dtype).itemsize,
                         np.dtype(ctx.outputs[0].dtype).itemsize, soc.cube_cores, soc.ddr_rate, soc.l0_c_size,
                         c04, strided_row_read(g, c04))
        return g, grid

    def tiling(self, ctx: TilingContext) -> TilingResult:
        g, grid = self._grid(ctx)
        block_dim = grid["blocks_n"] * grid["blocks_h"] * grid["blocks_c"]
        return TilingResult(block_dim, 0, CONV_TILING.pack(
            cout_per_block=grid["c_per"], n_per_block=grid["n_per"], ho_per_block=grid["h_per"],
            blocks_n=grid["blocks_n"], blocks_h=grid["blocks_h"], blocks_c=grid["blocks_c"], **g))

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        w, bias = inputs[1], inputs[2] if len(inputs) > 2 else None
        x = conv_input(inputs[0], args.attrs, args.outputs[0].dtype)   # AIPP's map is in the convolution's dtype
        acc = np.float32 if x.dtype != np.float64 else np.float64
        if x.dtype.kind in "iu":   # quantized: exact integer sums
            acc = np.float64
            x, w = int_operands(x, w, self.attr(args.attrs, "offset_x"), inputs[4] if len(inputs) > 4 else None, 0)
        n, groups, p, cout = t["n"], t["groups"], t["ho"] * t["wo"], t["cout"]
        cin_g, og = t["cin"] // groups, cout // groups
        k = cin_g * t["kh"] * t["kw"]
        cols = conv_columns(x, t, acc).reshape(n, groups, k, p)
        wf = w.astype(acc, copy=False).reshape(groups, og, k)
        out_dtype = np.dtype(args.outputs[0].dtype)
        dst = direct_output(args, out_dtype, inputs)     # the output's landing view, when the kernel may write it
        final = dst if dst is not None else np.empty((n, cout, t["ho"], t["wo"]), out_dtype)
        acc_out = final if out_dtype == acc else scratch("conv_acc", final.shape, acc)
        out3, final3 = acc_out.reshape(n, cout, p), final.reshape(n, cout, p)
        bias3 = bias.astype(acc, copy=False).reshape(1, cout, 1) if bias is not None else None
        residual = inputs[3] if len(inputs) > 3 else None
        res3 = residual.reshape(n, cout, p) if residual is not None else None
        relu = bool(args.attrs.get("fused_relu"))
        blocks = t["blocks_n"] * t["blocks_h"] * t["blocks_c"]
        whole = args.block_dim >= blocks   # else the tiles past the launch's blocks stay zero (below)

        def epilogue(block):   # on each GEMM piece's block while it is in cache; the fp32 result, then the cast
            y = out3[block]
            if bias3 is not None:
                y += bias3[:, block[1]]
            if res3 is not None:
                y += res3[block].astype(acc, copy=False)
            if whole:
                if relu:
                    np.maximum(y, 0, out=y)
                if acc_out is not final:
                    np.copyto(final3[block], y, casting="unsafe")
        grouped_matmul(wf, cols, acc_out.reshape(n, groups, og, p), epilogue)
        if not whole:
            keep = np.zeros((n, cout, t["ho"], t["wo"]), bool)
            for b in range(max(0, args.block_dim)):
                rest, cb = divmod(b, t["blocks_c"])
                ib, hb = divmod(rest, t["blocks_h"])
                keep[ib * t["n_per_block"]:(ib + 1) * t["n_per_block"],
                     cb * t["cout_per_block"]:(cb + 1) * t["cout_per_block"],
                     hb * t["ho_per_block"]:(hb + 1) * t["ho_per_block"]] = True
            out3[~keep.reshape(n, cout, p)] = 0
            self.epilogue(args.attrs, out3)   # on the fp32 result, before the cast
            if acc_out is not final:
                np.copyto(final3, out3, casting="unsafe")
        return [pooled(final, args.attrs)]

    def scratch_needs(self, t, attrs, inputs, outputs):
        x = np.dtype(inputs[1].dtype if aipp_attrs(attrs) is not None else inputs[0].dtype)
        acc = np.dtype(np.float64 if x == np.float64 or x.kind in "iu" else np.float32)
        size = acc.itemsize
        planes, p = t["n"] * t["cin"], t["ho"] * t["wo"]
        pads = (t["pt"], t["pb"], t["pl"], t["pr"])
        caller, pieces = {}, {}
        if (t["kh"], t["kw"], t["sh"], t["sw"]) == (1, 1, 1, 1) and not any(pads):
            if x != acc:
                caller["cols"] = planes * p * size
        else:
            hp, wp = t["h"] + pads[0] + pads[1], t["w"] + pads[2] + pads[3]
            if any(pads) or x != acc:
                caller["pad"] = planes * hp * wp * size
            caller["cols"] = planes * t["kh"] * t["kw"] * p * size
            ranges = cuts(planes, caller["cols"], heavy=x != acc)   # as conv_columns cuts them (same budget)
            if t["sh"] == 1 and t["kh"] > 1 and t["kw"] > 1 and t["wo"] <= ROW_SHIFT_MAX_WO and ranges:
                per = max(hi - lo for lo, hi in ranges)
                pieces["shifted"] = per * t["kw"] * hp * t["wo"] * size
        if np.dtype(outputs[0].dtype) != acc:
            caller["conv_acc"] = t["n"] * t["cout"] * p * size
        return caller, pieces

    def work(self, ctx: TilingContext) -> Work:
        g, grid = self._grid(ctx)
        x, y = ctx.inputs[0], ctx.outputs[0]
        xc = conv_input_desc(x, ctx.inputs[1], ctx.attrs)      # what the cube reads (a fused AIPP's map)
        fm, fk, fn = ctx.soc.mkn_for(xc.dtype)
        kdim = (g["cin"] // g["groups"]) * g["kh"] * g["kw"]
        blocks, cin_b, og = group_extension(g["cin"] // g["groups"], g["cout"] // g["groups"], g["groups"], fk, fn)
        k_cube = ceil_div(g["kh"] * g["kw"] * C04, fk) * fk if ctx.attrs.get(SMALL_CHANNEL) else \
            cin_b * g["kh"] * g["kw"]
        fractals = blocks * g["n"] * ceil_div(g["ho"] * g["wo"], fm) * ceil_div(k_cube, fk) * ceil_div(og, fn)
        bias = ctx.inputs[2] if len(ctx.inputs) > 2 else None
        residual = ctx.inputs[3] if len(ctx.inputs) > 3 else None
        # every channel block reads its rows of the input (halo included), every batch x row block the filters
        # (a fused AIPP's: the image's bytes, each read as often); all of the input at least, unless a strided
        # 1-row filter skips rows (its grid's in_rows count only the rows read)
        in_bytes = x.nbytes * grid["in_rows"] * grid["blocks_h"] * grid["blocks_c"] * grid["cin_blk"] \
            // (g["h"] * g["cin"])
        if not strided_row_read(g, bool(ctx.attrs.get(SMALL_CHANNEL))):
            in_bytes = max(in_bytes, x.nbytes)
        moved = (in_bytes + ctx.inputs[1].nbytes * grid["blocks_n"] * grid["blocks_h"]
                 + (bias.nbytes if bias is not None else 0) + y.nbytes + (residual.nbytes if residual is not None else 0))
        blocks = grid["blocks_n"] * grid["blocks_h"] * grid["blocks_c"]
        vector = (y.numel if residual is not None else 0) + fused_vector_ops(ctx.attrs, xc.numel, y.numel)
        return Work(fractals=fractals, vector_ops=vector, bytes=moved, dtype=xc.dtype,
                    flops=2 * g["n"] * g["ho"] * g["wo"] * g["cout"] * kdim, cube_tiles=grid["tiles"] * blocks,
                    out_elems=y.numel)

    def block_work(self, ctx: TilingContext, block_dim: int) -> Work:
        g, grid = self._grid(ctx)
        kdim = (g["cin"] // g["groups"]) * g["kh"] * g["kw"]
        out_elems = grid["n_per"] * grid["c_per"] * grid["h_per"] * g["wo"]
        residual = ctx.inputs[3] if len(ctx.inputs) > 3 else None
        extra = out_elems * np.dtype(residual.dtype).itemsize if residual is not None else 0
        x, y = ctx.inputs[0], ctx.outputs[0]
        xc = conv_input_desc(x, ctx.inputs[1], ctx.attrs)
        vector = out_elems if residual is not None else 0
        if xc is not x or y.numel != g["n"] * g["cout"] * g["ho"] * g["wo"]:   # AIPP / pool fused: the image in,
            isz = np.dtype(xc.dtype).itemsize                                  # the pooled map out
            in_part = grid["n_per"] * grid["cin_blk"] * grid["in_rows"] * g["w"] * isz
            out_part = out_elems * np.dtype(y.dtype).itemsize
            pooled_elems = out_elems * y.numel // (g["n"] * g["cout"] * g["ho"] * g["wo"])
            extra += in_part * x.nbytes // xc.nbytes - in_part + pooled_elems * np.dtype(y.dtype).itemsize - out_part
            vector += fused_vector_ops(ctx.attrs, out_elems * xc.numel // (g["n"] * g["cout"] * g["ho"] * g["wo"]),
                                       pooled_elems)
        return Work(fractals=grid["fractals"], vector_ops=vector, bytes=grid["bytes"] + extra, dtype=xc.dtype,
                    flops=2 * out_elems * kdim, cube_tiles=grid["tiles"], out_elems=out_elems)


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

    def padded(self, t, planes: np.ndarray, fill: float, dtype=None) -> np.ndarray:
        """Planes padded as the pads say, plus the bottom/right cells that ceil-mode windows run past."""
        need_h = (t["ho"] - 1) * t["sh"] + t["dh"] * (t["kh"] - 1) + 1 - (t["h"] + t["pt"])
        need_w = (t["wo"] - 1) * t["sw"] + t["dw"] * (t["kw"] - 1) + 1 - (t["w"] + t["pl"])
        return pad_planes(planes, t["pt"], max(t["pb"], need_h), t["pl"], max(t["pr"], need_w), fill, dtype)

    def window_reduce(self, t, xp: np.ndarray, ufunc, dtype) -> np.ndarray:
        out = np.empty(xp.shape[:-2] + (t["ho"], t["wo"]), dtype=dtype)
        return reduce_windows(xp, ufunc, out, t["kh"], t["kw"], t["sh"], t["sw"], t["dh"], t["dw"], t["ho"], t["wo"])

    def reduce(self, t, planes: np.ndarray, attrs) -> np.ndarray:
        raise NotImplementedError

    def compute(self, args: KernelArgs, inputs):
        t = args.tiling
        x = inputs[0].reshape(-1, t["h"], t["w"])
        out = np.zeros((t["planes"], t["ho"], t["wo"]), dtype=x.dtype)
        # the blocks cover planes [0, block_dim * planes_per_block): one vectorised pass over them
        covered = min(t["planes"], args.block_dim * t["planes_per_block"])
        # planes are independent: pieces of them on the host pool (the same values however they are cut)
        ranges = cuts(covered, x[:covered].nbytes)

        def piece(i):
            lo, hi = ranges[i]
            out[lo:hi] = self.reduce(t, x[lo:hi], args.attrs)
        run_pieces(len(ranges), piece)
        return [out.reshape(args.outputs[0].shape)]

    def work(self, ctx: TilingContext) -> Work:
        g = self._geom(ctx.inputs[0].shape, ctx.attrs)
        w = super().work(ctx)
        w.vector_ops = ctx.outputs[0].numel * g["kh"] * g["kw"]
        return w


@register
class MaxPoolV3(PoolBase):
    op_type = "MaxPoolV3"
    formats = {"x": "NC1HWC0", "y": "NC1HWC0"}
    dtypes = ("float32", "float16", "float64", "int8", "uint8")   # ONNX MaxPool-12 adds the 8-bit integers

    def reduce(self, t, planes, attrs):
        # fp16 planes are widened once (exactly) and the max taken in fp32: the result is one of the inputs, so
        # narrowing it back is exact too, and numpy's emulated fp16 maximum would convert at every tap
        work = np.float32 if planes.dtype == np.float16 else planes.dtype
        low = np.iinfo(work).min if np.dtype(work).kind in "iu" else -np.inf   # padding never wins the max
        return self.window_reduce(t, self.padded(t, planes, low, work), np.maximum, work)


    def scratch_needs(self, t, attrs, inputs, outputs):
        if not (t["kh"] > 1 and t["kw"] > 1):
            return {}, {}
        work = np.dtype(np.float32 if inputs[0].dtype == "float16" else inputs[0].dtype)
        covered = t["planes"]
        ranges = cuts(covered, covered * t["h"] * t["w"] * np.dtype(inputs[0].dtype).itemsize)
        need_h = (t["ho"] - 1) * t["sh"] + t["dh"] * (t["kh"] - 1) + 1 - (t["h"] + t["pt"])
        hp = t["h"] + t["pt"] + max(t["pb"], need_h)
        per = max((hi - lo for lo, hi in ranges), default=0)
        return {}, {"pool_rows": per * hp * t["wo"] * work.itemsize}


@register
class AvgPoolV2(PoolBase):
    op_type = "AvgPoolV2"
    formats = {"x": "NC1HWC0", "y": "NC1HWC0"}
    attrs = {**PoolBase.attrs, "exclusive": True}
    _counts: dict = {}

    def reduce(self, t, planes, attrs):
        # the sum is fp32 either way: widen fp16 planes once, not at each of the kh * kw taps
        work = np.float32 if planes.dtype == np.float16 else planes.dtype
        total = self.window_reduce(t, self.padded(t, planes, 0.0, work), np.add, np.float32)
        total /= self.counts(t, bool(self.attr(attrs, "exclusive")))
        return total

    def counts(self, t, exclusive: bool) -> np.ndarray:
        """Cells per window: without padding (exclusive), or with the explicit padding but not the extra
        ceil-mode cells. Depends on the geometry only, so it is computed once per tiling."""
        key = (tuple(sorted(t.items())), exclusive)
        count = self._counts.get(key)
        if count is None:
            if exclusive:
                ones = np.ones((1, t["h"], t["w"]), dtype=np.float32)
                count = self.window_reduce(t, self.padded(t, ones, 0.0), np.add, np.float32)
            else:
                hp, wp = t["h"] + t["pt"] + t["pb"], t["w"] + t["pl"] + t["pr"]
                ones = np.ones((1, hp, wp), dtype=np.float32)
                bare = dict(t, h=hp, w=wp, pt=0, pb=0, pl=0, pr=0)
                count = self.window_reduce(bare, self.padded(bare, ones, 0.0), np.add, np.float32)
            if len(self._counts) < 256:
                self._counts[key] = count
        return count


GAP_TILING = TilingStruct(("planes", "Q"), ("plane_size", "Q"), ("planes_per_block", "Q"))


@register
class GlobalAveragePool(OpSpec):
    op_type = "GlobalAveragePool"
    formats = {"x": "NC1HWC0", "y": "NC1HWC0"}
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
        if end:
            out[:end] = x[:end].mean(axis=1, dtype=np.float32)
        return [out.reshape(args.outputs[0].shape)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = ctx.inputs[0].numel
        return w
