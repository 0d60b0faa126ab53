"""Array adapters: Identity, Reshape, Transpose, ExpandDims, Squeeze, ConcatV2, Split, SplitV, Pack, Unpack,
StridedSlice, Slice, Pad/PadV2/MirrorPad, Fill, Shape, GatherV2, Tile."""
from __future__ import annotations

import numpy as np

from . import TfAdapterError, tf_op


@tf_op("Identity", "StopGradient", "PreventGradient", "Snapshot")
def identity(ctx):
    """Identity of a constant is the constant (frozen variables read through Identity); others become GE
    Identity nodes, which the identity pass removes."""
    x = ctx.input(0)
    return [x] if x.is_const else ctx.emit("Identity", [x])


@tf_op("IdentityN")
def identity_n(ctx):
    return [ctx.emit("Identity", [ctx.input(i)], suffix=f"{i}")[0] for i in range(ctx.n_inputs)]


@tf_op("Reshape")
def reshape(ctx):
    return ctx.emit("Reshape", [ctx.input(0), ctx.input(1)])


@tf_op("Transpose")
def transpose(ctx):
    return ctx.emit("TransposeD", [ctx.input(0)], {"perm": ctx.const_ints(1, "perm")})


@tf_op("ExpandDims")
def expand_dims(ctx):
    axis = ctx.const_ints(1, "dim")[0]
    rank = len(ctx.input(0).desc.shape) + 1
    return ctx.emit("Unsqueeze", [ctx.input(0)], {"axes": [axis % rank]})


@tf_op("Squeeze")
def squeeze(ctx):
    return ctx.emit("Squeeze", [ctx.input(0)], {"axes": [int(a) for a in ctx.attr("squeeze_dims", [])]})


@tf_op("ConcatV2")
def concat_v2(ctx):
    n = ctx.n_inputs - 1
    return ctx.emit("ConcatD", [ctx.input(i) for i in range(n)], {"concat_dim": ctx.const_ints(n, "axis")[0]})


@tf_op("Split")
def split(ctx):
    n = int(ctx.attr("num_split"))
    return ctx.emit("SplitD", [ctx.input(1)], {"split_dim": ctx.const_ints(0, "axis")[0], "num_split": n}, n_out=n)


@tf_op("SplitV")
def split_v(ctx):
    x = ctx.input(0)
    axis = ctx.const_ints(2, "axis")[0]
    sizes = ctx.const_ints(1, "size_splits")
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = x.desc.shape[axis] - (sum(sizes) + 1)
    return ctx.emit("SplitD", [x], {"split_dim": axis, "size_splits": sizes, "num_split": len(sizes)},
                    n_out=len(sizes))


@tf_op("Pack")
def pack(ctx):
    xs = [ctx.input(i) for i in range(ctx.n_inputs)]
    axis = int(ctx.attr("axis", 0)) % (len(xs[0].desc.shape) + 1)
    ys = [ctx.emit("Unsqueeze", [x], {"axes": [axis]}, suffix=f"expand{k}")[0] for k, x in enumerate(xs)]
    return ctx.emit("ConcatD", ys, {"concat_dim": axis})


@tf_op("Unpack")
def unpack(ctx):
    x = ctx.input(0)
    axis = int(ctx.attr("axis", 0)) % len(x.desc.shape)
    n = x.desc.shape[axis]
    parts = ctx.emit("SplitD", [x], {"split_dim": axis, "num_split": n}, suffix="split", n_out=n) if n > 1 else [x]
    return [ctx.emit("Squeeze", [p], {"axes": [axis]}, suffix=f"squeeze{k}")[0] for k, p in enumerate(parts)]


@tf_op("Slice")
def slice_(ctx):
    x = ctx.input(0)
    begin, size = ctx.const_ints(1, "begin"), ctx.const_ints(2, "size")
    end = [d if s == -1 else b + s for b, s, d in zip(begin, size, x.desc.shape)]
    return ctx.emit("StridedSliceD", [x], {"begin": begin, "end": end})


@tf_op("StridedSlice")
def strided_slice(ctx):
    """Masks are resolved here into per-axis begin/end/stride plus the axes to insert and drop."""
    x = ctx.input(0)
    begin, end, strides = ctx.const_ints(1, "begin"), ctx.const_ints(2, "end"), ctx.const_ints(3, "strides")
    bm, em = int(ctx.attr("begin_mask", 0)), int(ctx.attr("end_mask", 0))
    ell, new, shrink = int(ctx.attr("ellipsis_mask", 0)), int(ctx.attr("new_axis_mask", 0)), \
        int(ctx.attr("shrink_axis_mask", 0))
    if ell:
        raise TfAdapterError("StridedSlice ellipsis_mask is not supported")
    shape = list(x.desc.shape)
    axes, b_out, e_out, s_out, squeeze, unsq = [], [], [], [], [], []
    dim = 0
    for k in range(len(begin)):
        if new >> k & 1:
            unsq.append(k)
            continue
        st = strides[k]
        big = 2 ** 62
        b = (-big if st > 0 else big) if bm >> k & 1 else begin[k]
        e = (big if st > 0 else -big) if em >> k & 1 else end[k]
        if shrink >> k & 1:
            b = b + shape[dim] if b < 0 else b
            e, st = b + 1, 1
            squeeze.append(dim)
        axes.append(dim)
        b_out.append(b)
        e_out.append(e)
        s_out.append(st)
        dim += 1
    y = ctx.emit("StridedSliceD", [x], {"begin": b_out, "end": e_out, "axes": axes, "strides": s_out},
                 suffix="slice" if (squeeze or unsq) else "")[0]
    if squeeze:
        y = ctx.emit("Squeeze", [y], {"axes": squeeze}, suffix="shrink" if unsq else "")[0]
    if unsq:
        y = ctx.emit("Unsqueeze", [y], {"axes": unsq})[0]
    return [y]


@tf_op("Pad", "PadV2", "MirrorPad")
def pad(ctx):
    p = ctx.const(1)
    if p is None:
        raise TfAdapterError("paddings must be a constant")
    mode = "constant"
    if ctx.node.op == "MirrorPad":
        m = ctx.attr("mode", "REFLECT")
        if m != "REFLECT":
            raise TfAdapterError(f"MirrorPad mode {m} is not supported")
        mode = "reflect"
    value = float(ctx.const(2).item()) if ctx.node.op == "PadV2" and ctx.const(2) is not None else 0.0
    return ctx.emit("PadV3D", [ctx.input(0)], {"paddings": [int(v) for v in np.asarray(p).reshape(-1)],
                                               "mode": mode, "constant_values": value})


@tf_op("Fill")
def fill(ctx):
    value = ctx.const(1)
    if value is None:
        raise TfAdapterError("the fill value must be a constant")
    return ctx.emit("Fill", [ctx.input(0)], {"value": value.item(), "dtype": value.dtype.name})


@tf_op("Shape")
def shape(ctx):
    y = ctx.emit("Shape", [ctx.input(0)], suffix="int64")[0]
    out = "int64" if int(ctx.attr("out_type", 3)) == 9 else "int32"
    return ctx.emit("Cast", [y], {"dst_type": out}) if out != "int64" else ctx.emit("Identity", [y])


@tf_op("GatherV2")
def gather_v2(ctx):
    return ctx.emit("GatherV2D", [ctx.input(0), ctx.input(1)], {"axis": ctx.const_ints(2, "axis")[0]})


@tf_op("Tile")
def tile(ctx):
    return ctx.emit("TileD", [ctx.input(0)], {"multiples": ctx.const_ints(1, "multiples")})


@tf_op("PlaceholderWithDefault")
def placeholder_with_default(ctx):
    """A frozen inference graph feeds nothing into it: the default (its input) is the value."""
    return identity(ctx)
