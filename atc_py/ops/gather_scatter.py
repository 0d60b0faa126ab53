"""Gathers and scatters by index tensors: GatherElements, GatherNd, ScatterElements, TensorScatterUpdate /
Add / Mul / Max / Min (ONNX ScatterND with its reductions), OneHot, and Scatter (ONNX TensorScatter: a KV-cache
write at per-batch positions, linear or circular). CANN's op types.

Like the other data-movement ops (index_ops.MoveOp) the tiling splits the output elements over blocks; the
kernel forms the result and each block writes its chunk, so the output is complete only if the tiling covers
it. Indices are checked against the dims they index (an index outside is the user's error, not a fault);
negative indices count from the end, as ONNX says."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .activation import norm_axis
from .core.base import OpError
from .core.registry import register
from .index_ops import MoveOp

INDEX_TYPES = ("int32", "int64")


def wrap_indices(idx: np.ndarray, n: int, what: str) -> np.ndarray:
    """idx with negative entries counted from the end; OpError if any is outside [-n, n)."""
    idx = np.asarray(idx).astype(np.int64)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx[(idx < -n) | (idx >= n)].reshape(-1)[0]
        raise OpError(f"{what} {int(bad)} is outside [-{n}, {n - 1}]")
    return np.where(idx < 0, idx + n, idx)


def _index_desc(node: Node, i: int, what: str = "indices") -> TensorDesc:
    d = node.input_desc(i)
    if d is None or d.dtype not in INDEX_TYPES:
        raise OpError(f"{what} must be int32/int64, got {None if d is None else d.dtype}")
    return d


def _element_index(idx: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """The full index tuple of ONNX's *Elements ops: idx along `axis`, the position itself on the other axes."""
    grids = np.meshgrid(*[np.arange(d) for d in idx.shape], indexing="ij", sparse=True)
    return tuple(idx if a == axis else g for a, g in enumerate(grids))


@register
class GatherElements(MoveOp):
    """y[i][j][k] = x[idx[i][j][k]][j][k] (along `dim`); y has the indices' shape."""
    op_type = "GatherElements"
    inputs = ("x", "index")
    attrs = {"dim": 0}

    def infer(self, node: Node) -> list[TensorDesc]:
        x, idx = node.input_desc(0), _index_desc(node, 1)
        norm_axis(int(self.attr(node, "dim")), len(x.shape))
        if len(idx.shape) != len(x.shape):
            raise OpError(f"indices {list(idx.shape)} and data {list(x.shape)} differ in rank")
        return [TensorDesc(idx.shape, x.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        x, idx = inputs
        axis = norm_axis(int(self.attr(attrs, "dim")), x.ndim)
        for a, (di, dx) in enumerate(zip(idx.shape, x.shape)):
            if a != axis and di > dx:
                raise OpError(f"indices {list(idx.shape)} exceed data {list(x.shape)} on axis {a}")
        idx = wrap_indices(idx, x.shape[axis], "index")
        return [x[_element_index(idx, axis)]]


@register
class GatherNd(MoveOp):
    """Slices of x addressed by the last axis of the indices, after `batch_dims` shared leading dims."""
    op_type = "GatherNd"
    inputs = ("x", "indices")
    attrs = {"batch_dims": 0}

    def _geom(self, x_shape, i_shape, attrs):
        b = int(self.attr(attrs, "batch_dims"))
        if not i_shape or not 0 <= b < min(len(x_shape), len(i_shape)):
            raise OpError(f"batch_dims {b} does not fit data {list(x_shape)} and indices {list(i_shape)}")
        if tuple(x_shape[:b]) != tuple(i_shape[:b]):
            raise OpError(f"the first {b} dims of data {list(x_shape)} and indices {list(i_shape)} differ")
        k = i_shape[-1]
        if not 1 <= k <= len(x_shape) - b:
            raise OpError(f"indices' last dim {k} must be in [1, {len(x_shape) - b}]")
        return b, k

    def infer(self, node: Node) -> list[TensorDesc]:
        x, idx = node.input_desc(0), _index_desc(node, 1)
        b, k = self._geom(x.shape, idx.shape, node.attrs)
        return [TensorDesc(tuple(idx.shape[:-1]) + tuple(x.shape[b + k:]), x.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        x, idx = inputs
        b, k = self._geom(x.shape, idx.shape, attrs)
        batch = int(np.prod(x.shape[:b], dtype=np.int64))
        xs = x.reshape((batch,) + x.shape[b:])
        ids = np.asarray(idx).astype(np.int64).reshape(batch, -1, k)
        cols = tuple(wrap_indices(ids[..., j], x.shape[b + j], f"index on axis {b + j}") for j in range(k))
        rows = np.arange(batch)[:, None]
        return [xs[(rows,) + cols].reshape(outputs[0].shape)]


_REDUCE_AT = {"none": None, "update": None, "add": np.add, "mul": np.multiply, "max": np.maximum,
              "min": np.minimum}


def _scatter(out: np.ndarray, where: tuple, updates: np.ndarray, reduction: str) -> None:
    fn = _REDUCE_AT[reduction]
    if fn is None:
        out[where] = updates
    else:
        fn.at(out, where, updates)


@register
class ScatterElements(MoveOp):
    """data with updates written at the element positions the indices give along `axis`; `reduction`
    combines an update with what is there (none: replace; add, mul, max, min)."""
    op_type = "ScatterElements"
    inputs = ("data", "indices", "updates")
    attrs = {"axis": 0, "reduction": "none"}

    def infer(self, node: Node) -> list[TensorDesc]:
        x, idx, upd = node.input_desc(0), _index_desc(node, 1), node.input_desc(2)
        norm_axis(int(self.attr(node, "axis")), len(x.shape))
        if self.attr(node, "reduction") not in _REDUCE_AT:
            raise OpError(f"reduction '{self.attr(node, 'reduction')}' is not one of none, add, mul, max, min")
        if idx.shape != upd.shape or len(idx.shape) != len(x.shape) or upd.dtype != x.dtype:
            raise OpError(f"indices {list(idx.shape)} and updates {upd.dtype}{list(upd.shape)} must match each "
                          f"other and the rank and dtype of data {x.dtype}{list(x.shape)}")
        return [TensorDesc(x.shape, x.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        x, idx, upd = inputs
        axis = norm_axis(int(self.attr(attrs, "axis")), x.ndim)
        for a, (di, dx) in enumerate(zip(idx.shape, x.shape)):
            if a != axis and di > dx:
                raise OpError(f"indices {list(idx.shape)} exceed data {list(x.shape)} on axis {a}")
        out = np.array(x, copy=True)
        _scatter(out, _element_index(wrap_indices(idx, x.shape[axis], "index"), axis), upd,
                 str(self.attr(attrs, "reduction")))
        return [out]


class TensorScatterBase(MoveOp):
    """ONNX ScatterND: updates written at the slices of data the indices' last axis addresses."""
    inputs = ("x", "indices", "updates")
    reduction = "none"

    def infer(self, node: Node) -> list[TensorDesc]:
        x, idx, upd = node.input_desc(0), _index_desc(node, 1), node.input_desc(2)
        k = idx.shape[-1] if idx.shape else 0
        if not 1 <= k <= len(x.shape):
            raise OpError(f"indices' last dim {k} must be in [1, {len(x.shape)}]")
        want = tuple(idx.shape[:-1]) + tuple(x.shape[k:])
        if tuple(upd.shape) != want or upd.dtype != x.dtype:
            raise OpError(f"updates must be {x.dtype}{list(want)}, got {upd.dtype}{list(upd.shape)}")
        return [TensorDesc(x.shape, x.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        x, idx, upd = inputs
        k = idx.shape[-1]
        ids = np.asarray(idx).astype(np.int64).reshape(int(np.prod(idx.shape[:-1], dtype=np.int64)), k)
        where = tuple(wrap_indices(ids[:, j], x.shape[j], f"index on axis {j}") for j in range(k))
        out = np.array(x, copy=True)
        _scatter(out, where, upd.reshape((ids.shape[0],) + x.shape[k:]), self.reduction)
        return [out]


for _name, _red in (("TensorScatterUpdate", "none"), ("TensorScatterAdd", "add"), ("TensorScatterMul", "mul"),
                    ("TensorScatterMax", "max"), ("TensorScatterMin", "min")):
    register(type(_name, (TensorScatterBase,), {"op_type": _name, "reduction": _red,
                                                 "__doc__": f"{_name}: ScatterND with reduction '{_red}'."}))


@register
class OneHot(MoveOp):
    """on_value where the index along the new `axis` equals x (negative x counts from depth), off_value
    elsewhere; an index outside [-depth, depth) gives an all-off row. The output's size along `axis` is the
    *value* of depth: a depth computed by the graph makes the node value-dependent (dynamic partition)."""
    op_type = "OneHot"
    inputs = ("x", "depth", "on_value", "off_value")
    attrs = {"axis": -1}
    infer_depend = frozenset({1})

    @staticmethod
    def _depth(v) -> int:
        arr = np.asarray(v).reshape(-1)
        if arr.size != 1:
            raise OpError(f"depth must hold one value, got {arr.size}")
        d = int(arr[0])
        if d < 0:
            raise OpError(f"depth {d} is negative")
        return d

    def infer(self, node: Node) -> list[TensorDesc]:
        x, on, off = node.input_desc(0), node.input_desc(2), node.input_desc(3)
        if on.numel != 1 or off.numel != 1 or on.dtype != off.dtype:
            raise OpError(f"on_value and off_value must be single values of one dtype, got {on.dtype}{list(on.shape)}"
                          f" and {off.dtype}{list(off.shape)}")
        axis = norm_axis(int(self.attr(node, "axis")), len(x.shape) + 1)
        depth = node.const_input(1)
        n = -1 if depth is None else self._depth(depth)
        return [TensorDesc(tuple(x.shape[:axis]) + (n,) + tuple(x.shape[axis:]), on.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        x, depth, on, off = inputs
        n = self._depth(depth)
        axis = norm_axis(int(self.attr(attrs, "axis")), x.ndim + 1)
        idx = np.asarray(x).astype(np.int64)
        idx = np.where(idx < 0, idx + n, idx)
        hot = np.expand_dims(idx, axis) == np.arange(n).reshape((1,) * axis + (n,) + (1,) * (x.ndim - axis))
        dt = outputs[0].dtype
        return [np.where(hot, np.asarray(on).reshape(()), np.asarray(off).reshape(())).astype(dt)]


@register
class Scatter(MoveOp):
    """ONNX TensorScatter (an in-place KV-cache write): for each batch b, the `update` rows go to `var` along
    `axis` from position write_indices[b] (0 without it); mode 'circular' wraps positions modulo the cache
    length. CANN's Scatter (var, indices, updates, axis, reduce='update') with the mode as an attribute."""
    op_type = "Scatter"
    inputs = ("var", "updates", "indices?")
    attrs = {"axis": -2, "reduce": "update", "mode": "linear"}

    def _axis(self, attrs, var, upd) -> int:
        if len(var) != len(upd) or len(var) < 2:
            raise OpError(f"cache {list(var)} and update {list(upd)} must have one rank >= 2")
        axis = norm_axis(int(self.attr(attrs, "axis")), len(var))
        if axis == 0:
            raise OpError("axis 0 is the batch axis, not a sequence axis")
        for a, (dv, du) in enumerate(zip(var, upd)):
            if (a != axis and dv != du) or (a == axis and du > dv):
                raise OpError(f"update {list(upd)} does not fit cache {list(var)} along axis {axis}")
        return axis

    def infer(self, node: Node) -> list[TensorDesc]:
        var, upd = node.input_desc(0), node.input_desc(1)
        self._axis(node.attrs, var.shape, upd.shape)
        if self.attr(node, "mode") not in ("linear", "circular") or self.attr(node, "reduce") != "update":
            raise OpError(f"mode '{self.attr(node, 'mode')}' / reduce '{self.attr(node, 'reduce')}' are not "
                          "linear|circular / update")
        if upd.dtype != var.dtype:
            raise OpError(f"update is {upd.dtype}, the cache {var.dtype}")
        idx = node.input_desc(2)
        if idx is not None and (idx.dtype not in INDEX_TYPES or idx.shape != (var.shape[0],)):
            raise OpError(f"write_indices must be int64[{var.shape[0]}], got {idx.dtype}{list(idx.shape)}")
        return [TensorDesc(var.shape, var.dtype, "ND", "ND")]

    def move(self, attrs, inputs, outputs):
        var, upd = inputs[0], inputs[1]
        axis = self._axis(attrs, var.shape, upd.shape)
        starts = np.zeros(var.shape[0], np.int64) if len(inputs) < 3 or inputs[2] is None \
            else np.asarray(inputs[2]).astype(np.int64).reshape(-1)
        length, seq = var.shape[axis], upd.shape[axis]
        pos = starts[:, None] + np.arange(seq)[None, :]                      # [batch, seq]
        if self.attr(attrs, "mode") == "circular":
            pos %= max(length, 1)
        elif pos.size and (pos.min() < 0 or pos.max() >= length):
            raise OpError(f"write positions {int(pos.min())}..{int(pos.max())} fall outside the cache length "
                          f"{length}")
        out = np.array(var, copy=True)
        moved_out, moved_upd = np.moveaxis(out, axis, 1), np.moveaxis(upd, axis, 1)   # [batch, seq, ...] views
        for b in range(var.shape[0]):
            moved_out[b, pos[b]] = moved_upd[b]
        return [out]
