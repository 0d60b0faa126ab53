"""Index and data-movement adapters: Constant, ConstantOfShape, Shape, Cast, Gather, Split, Slice, Tile, Expand,
Pad, DepthToSpace, Range. Parameters that GE ops take as attributes must be constants here."""
from __future__ import annotations

import numpy as np

from ....ir.dtypes import dtype_from_onnx, no_ascend_type
from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from ..onnx_lite import TensorProto


def const_ints(ctx: NodeCtx, i: int, what: str) -> list[int] | None:
    if ctx.input(i) is None:
        return None
    v = ctx.const(i)
    if v is None:
        raise AdapterError(f"{what} (input {i}) must be a constant")
    return [int(x) for x in np.asarray(v).reshape(-1)]


@onnx_op("Constant")
class Constant(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        for key, make in (("value", lambda v: np.asarray(v)), ("value_float", lambda v: np.array(v, np.float32)),
                          ("value_floats", lambda v: np.array(v, np.float32)),
                          ("value_int", lambda v: np.array(v, np.int64)),
                          ("value_ints", lambda v: np.array(v, np.int64))):
            if key in ctx.attrs:
                return [ctx.make_const("value", make(ctx.attrs[key]))]
        raise AdapterError("Constant needs one of value, value_float(s), value_int(s) (sparse/string not supported)")


@onnx_op("ConstantOfShape")
class ConstantOfShape(OnnxOp):
    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        value = ctx.attr("value")
        arr = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
        return ctx.emit("Fill", [ctx.input(0)], {"value": arr[0].item() if arr.size else 0.0,
                                                 "dtype": arr.dtype.name})


@onnx_op("Shape")
class Shape(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("Shape", [ctx.input(0)])

    @classmethod
    def _impl_v15(cls, ctx: NodeCtx):
        attrs = {"start": int(ctx.attr("start", 0))}
        if ctx.attr("end") is not None:
            attrs["end"] = int(ctx.attr("end"))
        return ctx.emit("Shape", [ctx.input(0)], attrs)


@onnx_op("Size")
class Size(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return [ctx.make_const("size", np.array(ctx.input(0).desc.numel, np.int64))]


@onnx_op("Cast")
class Cast(OnnxOp):
    @classmethod
    def _impl_v6(cls, ctx: NodeCtx):
        to = int(ctx.attr("to"))
        dt = dtype_from_onnx(to)
        if dt is None:
            name = no_ascend_type(to)
            raise AdapterError(f"Cast to {name}: GE's DataType enum has no {name}" if name
                               else f"Cast to ONNX type {to} is not supported")
        return ctx.emit("Cast", [ctx.input(0)], {"dst_type": dt.name, **_cast_rules(ctx)})

    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        to = ctx.attr("to")
        if isinstance(to, str):
            ctx.attrs["to"] = TensorProto.DataType.Value(to.upper())
        return cls._impl_v6(ctx)


def _cast_rules(ctx: NodeCtx) -> dict:
    """Cast-19's saturate (float8 targets) and Cast-24's round_mode (float8 e8m0), when the node sets them."""
    out = {}
    if ctx.attr("saturate") is not None:
        out["saturate"] = bool(ctx.attr("saturate"))
    if ctx.attr("round_mode") is not None:
        out["round_mode"] = str(ctx.attr("round_mode"))
    return out


@onnx_op("CastLike")
class CastLike(OnnxOp):
    @classmethod
    def _impl_v15(cls, ctx: NodeCtx):
        return ctx.emit("Cast", [ctx.input(0)], {"dst_type": ctx.input(1).desc.dtype, **_cast_rules(ctx)})


@onnx_op("Gather")
class Gather(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("GatherV2D", [ctx.input(0), ctx.input(1)], {"axis": int(ctx.attr("axis", 0))})


def _split(ctx: NodeCtx, sizes: list[int] | None, n_out: int):
    x = ctx.input(0)
    axis = int(ctx.attr("axis", 0))
    attrs = {"split_dim": axis, "num_split": n_out}
    if sizes is not None:
        attrs["size_splits"] = sizes
    elif ctx.attr("num_outputs") is not None:   # opset 18: the last chunk may be smaller
        dim = x.desc.shape[axis]
        if dim < 0:      # known at run time: the kernel sizes the chunks
            attrs["split_ceil"] = True
        else:
            chunk = -(-dim // n_out)
            attrs["size_splits"] = [chunk] * (n_out - 1) + [dim - chunk * (n_out - 1)]
    return ctx.emit("SplitD", [x], attrs, n_out=n_out)


@onnx_op("Split")
class Split(OnnxOp):
    @classmethod
    def _impl_v2(cls, ctx: NodeCtx):
        split = ctx.attr("split")
        return _split(ctx, [int(s) for s in split] if split else None, len(ctx.node.output))

    _impl_v1 = _impl_v2

    @classmethod
    def _impl_v13(cls, ctx: NodeCtx):
        if not ctx.known(1):   # sizes from the graph: dynamic
            return ctx.emit("SplitV", [ctx.input(0), ctx.input(1)], {"split_dim": int(ctx.attr("axis", 0)),
                                                                    "num_split": len(ctx.node.output)},
                            n_out=len(ctx.node.output))
        return _split(ctx, const_ints(ctx, 1, "split"), len(ctx.node.output))


@onnx_op("Slice")
class Slice(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("StridedSliceD", [ctx.input(0)], {"begin": list(ctx.attr("starts")),
                                                         "end": list(ctx.attr("ends")), "axes": ctx.attr("axes")})

    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        if not all(ctx.known(i) for i in range(1, 5)):   # starts/ends/axes/steps from the graph: dynamic
            return ctx.emit("StridedSliceV2", [ctx.input(i) for i in range(5)])
        return ctx.emit("StridedSliceD", [ctx.input(0)], {
            "begin": const_ints(ctx, 1, "starts"), "end": const_ints(ctx, 2, "ends"),
            "axes": const_ints(ctx, 3, "axes"), "strides": const_ints(ctx, 4, "steps")})


@onnx_op("Tile")
class Tile(OnnxOp):
    @classmethod
    def _impl_v6(cls, ctx: NodeCtx):
        if not ctx.known(1):
            return ctx.emit("Tile", [ctx.input(0), ctx.input(1)])   # repeats from the graph: dynamic
        return ctx.emit("TileD", [ctx.input(0)], {"multiples": const_ints(ctx, 1, "repeats")})


@onnx_op("Expand")
class Expand(OnnxOp):
    @classmethod
    def _impl_v8(cls, ctx: NodeCtx):
        return ctx.emit("Expand", [ctx.input(0), ctx.input(1)])


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


def _pad(ctx: NodeCtx, pads: list[int], value, axes: list[int] | None = None):
    x = ctx.input(0)
    rank = len(x.desc.shape)
    mode = ctx.attr("mode", "constant")
    if mode not in _PAD_MODES:
        raise AdapterError(f"Pad mode '{mode}' is not supported")
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    if len(pads) != 2 * len(axes):
        raise AdapterError(f"pads {pads} do not match {len(axes)} axes")
    paddings = [[0, 0] for _ in range(rank)]
    for k, a in enumerate(axes):
        paddings[a] = [pads[k], pads[k + len(axes)]]
    return ctx.emit("PadV3D", [x], {"paddings": [v for pair in paddings for v in pair], "mode": _PAD_MODES[mode],
                                    "constant_values": float(value or 0.0)})


@onnx_op("Pad")
class Pad(OnnxOp):
    @classmethod
    def _impl_v2(cls, ctx: NodeCtx):
        return _pad(ctx, [int(p) for p in ctx.attr("pads")], ctx.attr("value", 0.0))

    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        ctx.attrs.setdefault("pads", ctx.attr("paddings"))
        return cls._impl_v2(ctx)

    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        if not all(ctx.known(i) for i in (1, 2, 3)):   # pads / value / axes from the graph: dynamic
            mode = ctx.attr("mode", "constant")
            if mode not in _PAD_MODES:
                raise AdapterError(f"Pad mode '{mode}' is not supported")
            return ctx.emit("PadV3", [ctx.input(i) for i in range(4)], {"mode": _PAD_MODES[mode]})
        value = ctx.const(2)
        return _pad(ctx, const_ints(ctx, 1, "pads"), None if value is None or np.asarray(value).size == 0
                    else np.asarray(value).reshape(-1)[0], const_ints(ctx, 3, "axes"))


@onnx_op("DepthToSpace")
class DepthToSpace(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("DepthToSpace", [ctx.input(0)], {"block_size": int(ctx.attr("blocksize")), "mode": "DCR"})

    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        if int(ctx.attr("blocksize")) < 1:
            raise AdapterError(f"blocksize {ctx.attr('blocksize')} must be >= 1")
        return ctx.emit("DepthToSpace", [ctx.input(0)], {"block_size": int(ctx.attr("blocksize")),
                                                         "mode": ctx.attr("mode", "DCR")})


@onnx_op("Range")
class Range(OnnxOp):
    @classmethod
    def _impl_v11(cls, ctx: NodeCtx):
        vals = [ctx.const(i) for i in range(3)]
        if any(v is None for v in vals):   # bounds from the graph: the length is known when it runs
            return ctx.emit("Range", [ctx.input(i) for i in range(3)])
        if any(np.asarray(v).size != 1 for v in vals):
            raise AdapterError("start, limit and delta must be scalars")
        start, limit, delta = (np.asarray(v).reshape(-1)[0] for v in vals)
        if not all(np.isfinite(float(x)) for x in (start, limit, delta)) or delta == 0:
            raise AdapterError(f"start {start}, limit {limit} and delta {delta} do not define a range")
        count = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
        dtype = np.asarray(vals[0]).dtype
        ctx.const_budget(count, dtype.itemsize, "Range")
        return [ctx.make_const("range", np.arange(start, limit, delta, dtype=dtype))]


