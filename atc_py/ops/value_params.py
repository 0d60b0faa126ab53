"""Ops whose parameters arrive as tensors (ONNX allows Reduce axes, Tile repeats, Pad pads, Slice starts/ends,
Split sizes, TopK k, Unsqueeze axes, Resize scales/sizes... to be computed by the graph).

GE's parsers keep such inputs as inputs (ReduceSum(x, axes)) and a const-to-attr pass turns constant ones
into attributes (ReduceSumD). The frontend does the same: a parameter whose value is known at import
(value_fold) goes into the attribute form; otherwise it emits the form registered here, which takes the
parameter as an input whose *value* decides the output shape (`infer_depend`): its dims are unknown at
compile time, the node runs in the dynamic-shape partition, and the host executor infers and runs it with
the value (the host executor's dynamic-shape scheduling). Each is a thin wrapper over its attribute form: same infer, tiling and kernel once the
parameter values are turned into attributes (`to_attrs`)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir.dtypes import is_float
from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work
from .core.registry import get_op, register

UNKNOWN_RANK = (-2,)


def ints(v) -> list[int] | None:
    return None if v is None else [int(a) for a in np.asarray(v).reshape(-1)]


class ValueParamOp(OpSpec):
    """`base`: the attribute form's op type; `params`: input index -> parameter name; `to_attrs(values, attrs,
    in_descs)` -> the attribute form's attrs; `out_rank(in_descs, param_descs, attrs)`: the output rank when
    the values are unknown (None: unknown rank)."""
    unknown_rank_aware = True
    base = ""
    params: dict[int, str] = {}
    out_dtypes: tuple[str | None, ...] | None = None   # per output while the parameters are unknown (None: x's)

    @property
    def spec(self) -> OpSpec:
        return get_op(self.base)

    def to_attrs(self, values: dict[str, object], attrs: dict, in_descs: list) -> dict:
        return {**attrs, **values}

    def out_rank(self, x: TensorDesc, node: Node) -> int | None:
        return None

    # -- the split between data inputs and parameter inputs -------------------------------------------------
    def _split(self, items: list) -> tuple[list, dict[int, object]]:
        data = [v for i, v in enumerate(items) if i not in self.params]
        return data, {i: items[i] for i in self.params if i < len(items)}

    def _base_node(self, node: Node, values: dict[str, object]) -> Node:
        data, _ = self._split(list(node.inputs))
        proxy = Node(node.name, self.base, self.to_attrs(values, dict(node.attrs), [v.desc if v is not None else None
                                                                                     for v in data]))
        proxy.inputs = data
        proxy.outputs = node.outputs
        return proxy

    def infer(self, node: Node) -> list[TensorDesc]:
        values, known = {}, True
        for i, name in self.params.items():
            if i >= len(node.inputs) or node.inputs[i] is None:
                continue
            v = node.const_input(i)
            if v is None:
                known = False
            else:
                values[name] = v
        if known:
            return self.spec.infer(self._base_node(node, values))
        x = node.input_desc(0)
        rank = self.out_rank(x, node)
        shape = UNKNOWN_RANK if rank is None else (-1,) * rank
        dtypes = self.out_dtypes or ()
        return [TensorDesc(shape, (dtypes[k] if k < len(dtypes) else None) or x.dtype, "ND", "ND")
                for k in range(len(node.outputs))]

    def _values(self, inputs: list) -> dict[str, object]:
        _, params = self._split(inputs)
        return {self.params[i]: v for i, v in params.items() if v is not None}

    def _base_ctx(self, ctx: TilingContext) -> TilingContext:
        """The attribute form's tiling context: the parameters' values (read by the host executor for InferShape,
        handed to tiling as `depend_values`) become its attributes, as they do for the kernel. Without them the
        attribute form would tile with its attribute defaults (TopK's k=1 whatever K the graph computed)."""
        data, _ = self._split(list(ctx.inputs))
        values = {self.params[i]: v for i, v in ctx.depend_values.items() if i in self.params and v is not None}
        return TilingContext(data, ctx.outputs, self.to_attrs(values, dict(ctx.attrs), data), ctx.soc, {},
                             ctx.byte_scale)

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return self.spec.tiling(self._base_ctx(ctx))

    def compute(self, args: KernelArgs, inputs):
        data, _ = self._split(list(inputs))
        attrs = self.to_attrs(self._values(inputs), dict(args.attrs), [np.asarray(d) if d is not None else None
                                                                        for d in data])
        base_args = KernelArgs(args.tiling, args.tiling_key, args.block_dim, attrs, args.outputs)
        return self.spec.compute(base_args, data)

    def work(self, ctx: TilingContext) -> Work:
        return self.spec.work(self._base_ctx(ctx))


# what the tensor-parameter form shares with its attribute form
for _name in ("dtypes", "outputs", "core_type", "engine", "tiling_struct", "tiling_keys", "no_task"):
    setattr(ValueParamOp, _name, property(lambda self, n=_name: getattr(self.spec, n)))


def value_param(op_type: str, base: str, params: dict[int, str], inputs: tuple[str, ...],
                to_attrs: Callable | None = None, out_rank: Callable | None = None, attrs: dict | None = None,
                out_dtypes: tuple[str | None, ...] | None = None):
    """Register `op_type`, the tensor-parameter form of `base`. `out_dtypes`: each output's dtype while the
    parameters are unknown (None: the data input's), for a base whose outputs are not all of x's dtype."""
    body = {"op_type": op_type, "base": base, "params": params, "inputs": inputs,
            "infer_depend": frozenset(params), "tiling_depend": frozenset(params), "attrs": dict(attrs or {}),
            "__doc__": f"{op_type}: {base} with {', '.join(params.values())} as input(s) (value-dependent shape)."}
    if to_attrs is not None:
        body["to_attrs"] = lambda self, values, a, descs: to_attrs(values, a, descs)
    if out_rank is not None:
        body["out_rank"] = lambda self, x, node: out_rank(x, node)
    if out_dtypes is not None:
        body["out_dtypes"] = tuple(out_dtypes)
    cls = type(op_type, (ValueParamOp,), body)
    register(cls)
    return cls


# -- reductions: ReduceSum(x, axes) ... -> ReduceSumD(x){axes} ----------------------------------------------------
def _reduce_attrs(values, attrs, descs):
    out = dict(attrs)
    if "axes" in values:
        out["axes"] = ints(values["axes"])
    return out


def _reduce_rank(x, node):
    if x.shape == UNKNOWN_RANK:
        return None
    if node.attrs.get("keep_dims", False):
        return len(x.shape)
    axes = node.input_desc(1) if len(node.inputs) > 1 else None
    if axes is not None and len(axes.shape) == 1 and axes.shape[0] > 0:
        return len(x.shape) - axes.shape[0]
    return None


for _name in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"):
    value_param(_name, f"{_name}D", {1: "axes"}, ("x", "axes?"), _reduce_attrs, _reduce_rank,
                {"keep_dims": False, "noop_with_empty_axes": False})


# -- shape and data movement ---------------------------------------------------------------------------------------
def _same_rank(x, node):
    return None if x.shape == UNKNOWN_RANK else len(x.shape)


value_param("Tile", "TileD", {1: "multiples"}, ("x", "multiples"),
            lambda v, a, d: {**a, **({"multiples": ints(v["multiples"])} if "multiples" in v else {})}, _same_rank)


def _slice_attrs(values, attrs, descs):
    out = dict(attrs)
    for key in ("begin", "end", "axes", "strides"):
        if key in values:
            out[key] = ints(values[key])
    return out


value_param("StridedSliceV2", "StridedSliceD", {1: "begin", 2: "end", 3: "axes", 4: "strides"},
            ("x", "begin", "end", "axes?", "strides?"), _slice_attrs, _same_rank)


def _split_attrs(values, attrs, descs):
    out = dict(attrs)
    if "size_splits" in values:
        out["size_splits"] = ints(values["size_splits"])
    return out


value_param("SplitV", "SplitD", {1: "size_splits"}, ("x", "size_splits"), _split_attrs, _same_rank,
            {"split_dim": 0, "num_split": 1})


def _topk_attrs(values, attrs, descs):
    out = dict(attrs)
    if "k" in values:
        k = ints(values["k"])
        if len(k) != 1:
            raise OpError(f"K must hold one value, got {k}")
        out["k"] = k[0]
    return out


value_param("TopK", "TopKV2", {1: "k"}, ("x", "k"), _topk_attrs, _same_rank,
            {"dim": -1, "largest": True, "sorted": True}, out_dtypes=(None, "int64"))


def _axes_attrs(values, attrs, descs):
    return {**attrs, **({"axes": ints(values["axes"])} if "axes" in values else {})}


value_param("UnsqueezeV3", "Unsqueeze", {1: "axes"}, ("x", "axes"), _axes_attrs,
            lambda x, node: None if x.shape == UNKNOWN_RANK or len(node.input_desc(1).shape) != 1
            or node.input_desc(1).shape[0] < 0 else len(x.shape) + node.input_desc(1).shape[0])
value_param("SqueezeV3", "Squeeze", {1: "axes"}, ("x", "axes?"), _axes_attrs,
            lambda x, node: None if x.shape == UNKNOWN_RANK or len(node.inputs) < 2 or node.inputs[1] is None
            or len(node.input_desc(1).shape) != 1 or node.input_desc(1).shape[0] < 0
            else len(x.shape) - node.input_desc(1).shape[0])


def _pad_attrs(values, attrs, descs):
    """ONNX pads [x1_begin, x2_begin, ..., x1_end, ...] (over `axes` if given) -> GE paddings per axis."""
    out = dict(attrs)
    if "pads" in values:
        pads = ints(values["pads"])
        rank = len(descs[0].shape) if hasattr(descs[0], "shape") else np.ndim(descs[0])
        axes = ints(values.get("axes")) or list(range(rank))
        if len(pads) != 2 * len(axes):
            raise OpError(f"pads {pads} do not match {len(axes)} axes")
        flat = [0] * (2 * rank)
        for k, a in enumerate(axes):
            a = a + rank if a < 0 else a
            if not 0 <= a < rank:
                raise OpError(f"pad axis {a} is out of range for rank {rank}")
            flat[2 * a], flat[2 * a + 1] = pads[k], pads[k + len(axes)]
        out["paddings"] = flat
    if "constant_value" in values and values["constant_value"] is not None:
        cv = np.asarray(values["constant_value"]).reshape(-1)
        out["constant_values"] = float(cv[0]) if cv.size else 0.0
    return out


value_param("PadV3", "PadV3D", {1: "pads", 2: "constant_value", 3: "axes"},
            ("x", "pads", "constant_value?", "axes?"), _pad_attrs, _same_rank, {"mode": "constant"})


@register
class Range(OpSpec):
    """ONNX Range(start, limit, delta): its length is max(ceil((limit - start) / delta), 0), known only with
    the values (constant bounds are folded at import; these run in the dynamic partition). AICPU, as GE's."""
    op_type = "Range"
    inputs = ("start", "limit", "delta")
    infer_depend = frozenset({0, 1, 2})
    engine = "AICPU"
    dtypes = ("float32", "float64", "float16", "bfloat16", "int16", "int32", "int64")
    tiling_struct = TilingStruct(("numel", "Q"))

    @staticmethod
    def length(start, limit, delta) -> int:
        start, limit, delta = (np.asarray(v).reshape(-1) for v in (start, limit, delta))
        if start.size != 1 or limit.size != 1 or delta.size != 1:
            raise OpError("start, limit and delta must be scalars")
        if float(delta[0]) == 0 or not np.isfinite([float(start[0]), float(limit[0]), float(delta[0])]).all():
            raise OpError(f"start {start[0]}, limit {limit[0]}, delta {delta[0]} do not define a range")
        return max(int(np.ceil((float(limit[0]) - float(start[0])) / float(delta[0]))), 0)

    def infer(self, node: Node) -> list[TensorDesc]:
        vals = [node.const_input(i) for i in range(3)]
        dt = node.input_desc(0).dtype
        if any(v is None for v in vals):
            return [TensorDesc((-1,), dt, "ND", "ND")]
        return [TensorDesc((self.length(*vals),), dt, "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return TilingResult(1, 0, self.tiling_struct.pack(numel=max(ctx.outputs[0].numel, 0)))

    def compute(self, args: KernelArgs, inputs):
        start, _, delta = (np.asarray(v).reshape(-1)[0] for v in inputs)
        n = args.outputs[0].shape[0]
        dt = args.outputs[0].dtype
        step = np.arange(n, dtype=np.float64 if is_float(dt) else np.int64)
        return [(start.astype(step.dtype) + step * delta.astype(step.dtype)).astype(dt)]
