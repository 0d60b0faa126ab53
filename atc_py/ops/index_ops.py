"""Data-movement ops with constant parameters: GatherV2D, SplitD, StridedSliceD, TileD, Expand, PadV3D, Shape,
DepthToSpace.

Tiling splits the output elements over blocks (the elementwise tiling); the kernel forms the moved tensor
and each block writes its chunk, so the output is complete only if the tiling covers it."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .activation import norm_axis
from .core.base import OpError, OpSpec, TilingContext, TilingResult, Work
from .core.elementwise_tiling import ELEMWISE_TILING, elementwise_tiling, run_blocks
from .core.registry import register
from .elementwise import MOVE_TYPES

ANY = MOVE_TYPES


class MoveOp(OpSpec):
    """Base: output 0 (and any further outputs) written block by block from `move`."""
    dtypes = ANY
    tiling_struct = ELEMWISE_TILING

    def move(self, attrs, inputs, outputs) -> list[np.ndarray]:
        raise NotImplementedError

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 2, False)

    def compute(self, args, inputs):
        moved = self.move(args.attrs, inputs, args.outputs)
        first = run_blocks(args, [np.asarray(moved[0], order="C").reshape(-1)], lambda v: v, args.outputs[0].dtype)
        return [first] + [np.asarray(m, order="C").reshape(d.shape) for m, d in zip(moved[1:], args.outputs[1:])]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = 0  # pure data movement
        return w


@register
class GatherV2D(MoveOp):
    op_type = "GatherV2D"
    inputs = ("x", "indices")
    attrs = {"axis": 0}

    def infer(self, node: Node) -> list[TensorDesc]:
        x, idx = node.input_desc(0), node.input_desc(1)
        if idx.dtype not in ("int32", "int64"):
            raise OpError(f"indices must be int32/int64, got {idx.dtype}")
        axis = norm_axis(int(self.attr(node, "axis")), len(x.shape))
        shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
        return [TensorDesc(tuple(shape), x.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        x, idx = inputs
        axis = norm_axis(int(self.attr(attrs, "axis")), x.ndim)
        n = x.shape[axis]
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise OpError(f"an index is outside [-{n}, {n - 1}]")
        return [np.take(x, np.where(idx < 0, idx + n, idx), axis=axis)]

    def work(self, ctx: TilingContext) -> Work:
        """It reads the rows its indices select (one per output row), not the whole table, and writes them."""
        w = super().work(ctx)
        w.bytes = 2 * ctx.outputs[0].nbytes + ctx.inputs[1].nbytes
        return w


@register
class SplitD(MoveOp):
    op_type = "SplitD"
    inputs = ("x",)
    outputs = ("y*",)
    # split_ceil: ONNX's num_outputs over a dim known only at run time: chunks of ceil(dim / n), the last smaller
    attrs = {"split_dim": 0, "size_splits": None, "num_split": 1, "split_ceil": False}

    def _sizes(self, attrs, shape):
        axis = norm_axis(int(self.attr(attrs, "split_dim")), len(shape))
        sizes = self.attr(attrs, "size_splits")
        n = int(self.attr(attrs, "num_split"))
        if sizes is None and shape[axis] < 0:
            return axis, [-1] * n
        if sizes is None and self.attr(attrs, "split_ceil"):
            chunk = -(-shape[axis] // n)
            sizes = [chunk] * (n - 1) + [shape[axis] - chunk * (n - 1)]
            if sizes[-1] < 0:
                raise OpError(f"dim {shape[axis]} does not split into {n} chunks of {chunk}")
        if sizes is None:
            if shape[axis] % n:
                raise OpError(f"dim {shape[axis]} does not split into {n} equal parts")
            sizes = [shape[axis] // n] * n
        sizes = [int(s) for s in sizes]
        if sum(sizes) != shape[axis] and shape[axis] >= 0:
            raise OpError(f"split sizes {sizes} do not add up to dim {shape[axis]}")
        return axis, sizes

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        axis, sizes = self._sizes(node.attrs, x.shape)
        return [TensorDesc(tuple(s if i == axis else d for i, d in enumerate(x.shape)), x.dtype, "ND", "ND")
                for s in sizes]

    def move(self, attrs, inputs, outputs):
        axis, sizes = self._sizes(attrs, inputs[0].shape)
        return np.split(inputs[0], np.cumsum(sizes)[:-1], axis=axis)


def slice_spec(shape, starts, ends, axes, steps) -> tuple[tuple[slice, ...], tuple[int, ...]]:
    """ONNX Slice semantics with clamping → numpy slices and the output shape."""
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else [norm_axis(int(a), rank) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    sl = [slice(None)] * rank
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st == 0:
            raise OpError("slice step 0")
        lo, hi, st = slice(int(s), int(e), st).indices(shape[a])
        sl[a] = slice(lo, hi if hi >= 0 else None, st)   # indices' stop -1 (walk past 0) is None as a slice
    out = tuple(len(range(*s.indices(d))) for s, d in zip(sl, shape))
    return tuple(sl), out


@register
class StridedSliceD(MoveOp):
    """ONNX Slice with constant starts/ends/axes/steps (GE's StridedSliceD family)."""
    op_type = "StridedSliceD"
    inputs = ("x",)
    attrs = {"begin": None, "end": None, "axes": None, "strides": None}

    def _spec(self, attrs, shape):
        return slice_spec(shape, self.attr(attrs, "begin"), self.attr(attrs, "end"), self.attr(attrs, "axes"),
                          self.attr(attrs, "strides"))

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        return [TensorDesc(self._spec(node.attrs, x.shape)[1], x.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        return [inputs[0][self._spec(attrs, inputs[0].shape)[0]]]


@register
class TileD(MoveOp):
    op_type = "TileD"
    inputs = ("x",)
    attrs = {"multiples": None}

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        m = [int(v) for v in self.attr(node, "multiples")]
        if len(m) != len(x.shape) or any(v < 0 for v in m):
            raise OpError(f"multiples {m} do not match rank {len(x.shape)}")
        return [TensorDesc(tuple(d * k for d, k in zip(x.shape, m)), x.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        return [np.tile(inputs[0], [int(v) for v in self.attr(attrs, "multiples")])]


def expand_shape(x_shape, target) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(tuple(x_shape), tuple(int(t) for t in target)))
    except ValueError:
        raise OpError(f"shape {list(x_shape)} cannot expand to {list(target)}") from None


@register
class Expand(MoveOp):
    """ONNX Expand: broadcast x to `shape` (numpy rules). The output shape depends on the *value* of the shape
    input: a constant folds into the compile-time shape, otherwise the dims are unknown (-1) and the node
    runs in a dynamic partition whose host executor infers them from the value (`infer_depend`)."""
    op_type = "Expand"
    inputs = ("x", "shape")
    infer_depend = frozenset({1})

    def infer(self, node: Node) -> list[TensorDesc]:
        x, s = node.input_desc(0), node.input_desc(1)
        target = node.const_input(1)
        if target is None:
            n = s.shape[0] if s.shape else 0
            return [TensorDesc((-1,) * max(n, len(x.shape)), x.dtype, "ND", "ND")]
        return [TensorDesc(expand_shape(x.shape, np.asarray(target).reshape(-1)), x.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        return [np.broadcast_to(inputs[0], outputs[0].shape)]


@register
class PadV3D(MoveOp):
    """Pad with constant/reflect/edge modes; paddings [before0, after0, before1, after1, ...] (negative =
    crop)."""
    op_type = "PadV3D"
    inputs = ("x",)
    attrs = {"paddings": None, "mode": "constant", "constant_values": 0.0}

    def _pads(self, attrs, rank):
        flat = [int(v) for v in self.attr(attrs, "paddings")]
        p = [flat[i:i + 2] for i in range(0, len(flat), 2)]
        if len(p) != rank:
            raise OpError(f"paddings {p} do not match rank {rank}")
        return p

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        mode = self.attr(node, "mode")
        if mode not in ("constant", "reflect", "edge", "wrap"):
            raise OpError(f"pad mode '{mode}' is not supported")
        p = self._pads(node.attrs, len(x.shape))
        shape = tuple(d + a + b for d, (a, b) in zip(x.shape, p))
        if any(d < 0 for d in shape):
            raise OpError(f"paddings {p} crop more than {list(x.shape)}")
        return [TensorDesc(shape, x.dtype, x.format, x.origin_format)]

    def move(self, attrs, inputs, outputs):
        x = inputs[0]
        p = self._pads(attrs, x.ndim)
        crop = tuple(slice(max(0, -a), d - max(0, -b)) for d, (a, b) in zip(x.shape, p))
        x = x[crop]
        pos = [(max(0, a), max(0, b)) for a, b in p]
        mode = self.attr(attrs, "mode")
        if mode == "constant":
            return [np.pad(x, pos, mode="constant", constant_values=self.attr(attrs, "constant_values"))]
        return [np.pad(x, pos, mode=mode)]


@register
class Shape(OpSpec):
    """The input's shape as int64 (folded to a constant whenever the input shape is static)."""
    op_type = "Shape"
    inputs = ("x",)
    attrs = {"start": 0, "end": None}
    dtypes = ANY
    tiling_struct = ELEMWISE_TILING

    def _range(self, attrs, rank):
        start = int(self.attr(attrs, "start"))
        end = self.attr(attrs, "end")
        return slice(start, None if end is None else int(end))

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        n = len(range(*self._range(node.attrs, len(x.shape)).indices(len(x.shape))))
        return [TensorDesc((n,), "int64", "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 1, False)

    def compute(self, args, inputs):
        return [np.array(inputs[0].shape[self._range(args.attrs, inputs[0].ndim)], np.int64)]


@register
class DepthToSpace(MoveOp):
    op_type = "DepthToSpace"
    inputs = ("x",)
    attrs = {"block_size": 2, "mode": "DCR"}

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        b = int(self.attr(node, "block_size"))
        if len(x.shape) != 4 or x.shape[1] % (b * b):
            raise OpError(f"DepthToSpace needs NCHW with C divisible by {b * b}, got {list(x.shape)}")
        n, c, h, w = x.shape
        return [TensorDesc((n, c // (b * b), h * b, w * b), x.dtype, x.format, x.origin_format)]

    def move(self, attrs, inputs, outputs):
        x = inputs[0]
        b = int(self.attr(attrs, "block_size"))
        n, c, h, w = x.shape
        if self.attr(attrs, "mode") == "DCR":
            t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return [t.reshape(outputs[0].shape)]
