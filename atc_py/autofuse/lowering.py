"""Lowering rules, one per GE op type that automatic fusion takes: how the op's tensors sit in the group's loop
nest (`propagate`, used by layout.py) and the AscIR nodes that compute it (`lower`, into a HintBuilder).

Side by side per op as jax keeps its primitive rules. Every rule computes what the op's own kernel computes,
in the same order and dtypes (SoftmaxV2: max, sub, exp, sum, div in the input dtype; LayerNorm: in float32,
mean, centre, square, mean, + epsilon, sqrt, reciprocal, scale, * gamma, + beta; RmsNorm: square, mean, + epsilon,
sqrt, reciprocal, scale, * gamma), so fusion does not change the numbers.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir.graph import Node

# propagate(node, maps, put) -> False on a contradiction; maps: id(Value) -> dim map; put records one
Put = Callable


class Rule:
    def propagate(self, n: Node, maps: dict, put: Put) -> bool:
        raise NotImplementedError

    def lower(self, b, n: Node) -> None:
        raise NotImplementedError

    def accepts(self, n: Node) -> bool:
        return True


def _present(n: Node):
    return [v for v in n.inputs if v is not None]


def _inside(n: Node) -> str | None:
    """The dtype the node's own kernel computes in when its implementation mode makes that another than its
    output's (`_internal_dtype`, passes/soc_kernels.py: fp16 in fp32 with high_precision); None otherwise. The
    rules compute there too, between a Cast in and a Cast out, so the fused numbers stay the kernel's."""
    inside = n.attrs.get("_internal_dtype")
    return inside if inside and inside != n.outputs[0].desc.dtype else None


class Elementwise(Rule):
    """numpy broadcasting: operands right-aligned to the result."""

    def __init__(self, asc: str, attrs: tuple[str, ...] = ()):
        self.asc, self.attrs = asc, attrs

    def propagate(self, n, maps, put) -> bool:
        out = n.outputs[0]
        ro = len(out.desc.shape)
        ins = _present(n)
        if id(out) in maps:
            m = maps[id(out)]
            for v in ins:
                ri = len(v.desc.shape)
                if ri > ro or not put(v, m[ro - ri:]):
                    return False
            return True
        cover: dict[int, int] = {}
        for v in ins:
            if id(v) in maps:
                ri = len(v.desc.shape)
                for j, a in enumerate(maps[id(v)]):
                    if v.desc.shape[j] != 1 or ri == ro:
                        cover[j + ro - ri] = a
        if len(cover) == ro:
            return put(out, tuple(cover[k] for k in range(ro)))
        return True

    def lower(self, b, n) -> None:
        ops = [b.ref(v) for v in _present(n)]
        attrs = None
        if self.attrs:
            from ..ops import get_op
            spec = get_op(n.op_type)
            attrs = {a: float(spec.attr(n.attrs, a)) for a in self.attrs}
        out, inside = n.outputs[0].desc.dtype, _inside(n)
        if inside:
            ops = [b.cast(r, inside) if r.dtype == out else r for r in ops]
        r = b.cast(b.elementwise(self.asc, ops, inside or out, attrs), out)
        if n.attrs.get("fused_relu"):                  # relu_fusion's epilogue of an Add
            r = b.elementwise("Relu", [r], r.dtype)
        b.bind(n.outputs[0], r)

    def accepts(self, n) -> bool:
        epilogue = {k for k, v in n.attrs.items() if k.startswith("fused_") and v}
        return epilogue <= ({"fused_relu"} if n.op_type == "Add" else set())


class CastRule(Elementwise):
    def __init__(self):
        super().__init__("Cast")

    def lower(self, b, n) -> None:
        b.bind(n.outputs[0], b.cast(b.ref(n.inputs[0]), n.outputs[0].desc.dtype))


class ExpandRule(Elementwise):
    """Expand to a constant shape: a Broadcast."""

    def __init__(self):
        super().__init__("Broadcast")

    def propagate(self, n, maps, put) -> bool:
        if id(n.outputs[0]) in maps:
            m = maps[id(n.outputs[0])]
            v = n.inputs[0]
            ri = len(v.desc.shape)
            return ri <= len(m) and put(v, m[len(m) - ri:])
        return True

    def lower(self, b, n) -> None:
        b.bind(n.outputs[0], b.bcast(b.ref(n.inputs[0]), b.layout.present(n.outputs[0])))

    def accepts(self, n) -> bool:
        return n.const_input(1) is not None


def _reduce_dims(n: Node) -> tuple[tuple[int, ...], bool] | None:
    from ..ops import get_op
    spec = get_op(n.op_type)
    x = n.inputs[0].desc
    try:
        axes = spec._axes(n.attrs, len(x.shape))
    except Exception:   # noqa: BLE001  (a bad axis attribute: the op's own kernel reports it)
        return None
    return axes, bool(spec.attr(n.attrs, "keep_dims"))


class Reduce(Rule):
    def __init__(self, asc: str):
        self.asc = asc

    def propagate(self, n, maps, put) -> bool:
        x, y = n.inputs[0], n.outputs[0]
        axes, keep = _reduce_dims(n)
        if id(x) in maps:
            m = maps[id(x)]
            return put(y, m if keep else tuple(a for j, a in enumerate(m) if j not in axes))
        if id(y) in maps and keep:
            return put(x, maps[id(y)])
        return True

    def lower(self, b, n) -> None:
        x = n.inputs[0]
        axes, _ = _reduce_dims(n)
        dims = b.layout.dim_map[id(x)]
        r = b.reduce(self.asc, b.ref(x), {dims[j] for j in axes})
        b.bind(n.outputs[0], b.cast(r, n.outputs[0].desc.dtype))

    def accepts(self, n) -> bool:
        got = _reduce_dims(n)
        if got is None or not got[0]:
            return False
        if self.asc == "Mean" and not np.issubdtype(np.dtype(n.inputs[0].desc.dtype), np.floating):
            return False
        return True


class SameShape(Rule):
    """Ops whose outputs have the input's shape (or its keep-dims statistics): one map for all."""

    def propagate(self, n, maps, put) -> bool:
        x = n.inputs[0]
        known = [v for v in [x, *n.outputs] if id(v) in maps]
        if not known:
            return True
        m = maps[id(known[0])]
        for v in [x, *n.outputs]:
            if len(v.desc.shape) == len(m) and not put(v, m):
                return False
        for v in _present(n)[1:]:                      # parameters broadcast to x (gamma, beta)
            ri = len(v.desc.shape)
            if ri > len(m) or not put(v, m[len(m) - ri:]):
                return False
        return True


class Softmax(SameShape):
    """SoftmaxV2 / LogSoftmaxV2 along one axis, as their kernels compute the rows."""

    def __init__(self, log: bool):
        self.log = log

    def lower(self, b, n) -> None:
        from ..ops.activation import norm_axis
        x = n.inputs[0]
        from ..ops import get_op
        axis = norm_axis(int(get_op(n.op_type).attr(n.attrs, "axes")[0]), len(x.desc.shape))
        a = b.layout.dim_map[id(x)][axis]
        xr = b.ref(x)
        out = xr.dtype
        xr = b.cast(xr, _inside(n) or out)
        dt = xr.dtype
        shifted = b.elementwise("Sub", [xr, b.reduce("Max", xr, {a})], dt)
        e = b.elementwise("Exp", [shifted], dt)
        s = b.reduce("Sum", e, {a})
        if self.log:
            y = b.elementwise("Sub", [shifted, b.elementwise("Ln", [s], dt)], dt)
        else:
            y = b.elementwise("Div", [e, s], dt)
        b.bind(n.outputs[0], b.cast(y, out))

    def accepts(self, n) -> bool:
        from ..ops import get_op
        axes = get_op(n.op_type).attr(n.attrs, "axes")
        return len(axes) == 1 and n.inputs[0].desc.dtype in ("float32", "float16")


class LayerNormRule(SameShape):
    """LayerNorm over the trailing axes from begin_norm_axis, in float32 as its kernel computes it (in what its
    `_internal_dtype` says where that is another: fp16 on a SoC without fp32 vexp): the centred row times the
    reciprocal of the standard deviation, ONNX's function body."""

    def lower(self, b, n) -> None:
        from ..ops import get_op
        spec = get_op("LayerNorm")
        x = n.inputs[0]
        axis = spec._axis(n.attrs, len(x.desc.shape))
        dims = b.layout.dim_map[id(x)]
        red = {dims[j] for j in range(axis, len(dims))}
        f32 = n.attrs.get("_internal_dtype") or "float32"
        xf = b.cast(b.ref(x), f32)
        mean = b.reduce("Mean", xf, red)
        centred = b.elementwise("Sub", [xf, mean], f32)
        var = b.reduce("Mean", b.elementwise("Mul", [centred, centred], f32), red)
        eps = float(np.float32(spec.attr(n.attrs, "epsilon")))
        std = b.elementwise("Sqrt", [b.elementwise("Add", [var, b.scalar(eps, f32)], f32)], f32)
        rstd = b.elementwise("Reciprocal", [std], f32)
        y = b.elementwise("Mul", [b.elementwise("Mul", [centred, rstd], f32), b.cast(b.ref(n.inputs[1]), f32)], f32)
        if len(n.inputs) > 2 and n.inputs[2] is not None:
            y = b.elementwise("Add", [y, b.cast(b.ref(n.inputs[2]), f32)], f32)
        b.bind(n.outputs[0], b.cast(y, n.outputs[0].desc.dtype))
        b.bind(n.outputs[1], b.cast(mean, n.outputs[1].desc.dtype))
        b.bind(n.outputs[2], b.cast(var, n.outputs[2].desc.dtype))


class RmsNormRule(SameShape):
    """RmsNorm (ONNX RMSNormalization) as its kernel computes it, in float32: 1 / sqrt(mean(x * x) + epsilon),
    x times that, times gamma; the second output is that factor (rstd)."""

    def lower(self, b, n) -> None:
        from ..ops import get_op
        spec = get_op("RmsNorm")
        x, g = n.inputs[0], n.inputs[1]
        axis = spec._axis(n.attrs, x.desc.shape, g.desc.shape)
        dims = b.layout.dim_map[id(x)]
        red = {dims[j] for j in range(axis, len(dims))}
        f32 = "float32"
        xf = b.cast(b.ref(x), f32)
        ms = b.reduce("Mean", b.elementwise("Mul", [xf, xf], f32), red)
        eps = float(np.float32(spec.attr(n.attrs, "epsilon")))
        rstd = b.elementwise("Reciprocal", [b.elementwise("Sqrt", [b.elementwise("Add", [ms, b.scalar(eps, f32)], f32)],
                                                          f32)], f32)
        y = b.elementwise("Mul", [b.elementwise("Mul", [xf, rstd], f32), b.cast(b.ref(g), f32)], f32)
        b.bind(n.outputs[0], b.cast(y, n.outputs[0].desc.dtype))
        b.bind(n.outputs[1], rstd)

    def accepts(self, n) -> bool:
        return n.inputs[0].desc.dtype in ("float32", "float16")


UNARY = {"Abs": "Abs", "Exp": "Exp", "Log": "Ln", "Sqrt": "Sqrt", "Rsqrt": "Rsqrt", "Reciprocal": "Reciprocal",
         "Erf": "Erf", "Tanh": "Tanh", "Relu": "Relu", "Neg": "Neg", "Sigmoid": "Sigmoid", "Sign": "Sign",
         "Floor": "Floor", "Ceil": "Ceil", "Square": "Square", "Gelu": "Gelu", "Relu6": "Relu6",
         "Softsign": "Softsign", "HardSwish": "HardSwish", "LogicalNot": "LogicalNot", "Sin": "Sin", "Cos": "Cos",
         "Round": "Round"}
ATTR_UNARY = {"LeakyRelu": ("negative_slope",), "Elu": ("alpha",), "HardSigmoid": ("alpha", "beta"),
              "Softplus": ()}
BINARY = {"Add": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div", "Maximum": "Maximum", "Minimum": "Minimum",
          "Pow": "Pow", "Equal": "Eq", "NotEqual": "Ne", "Less": "Lt", "LessEqual": "Le", "Greater": "Gt",
          "GreaterEqual": "Ge", "LogicalAnd": "LogicalAnd", "LogicalOr": "LogicalOr", "Select": "Where",
          "FloorDiv": "FloorDiv", "FloorMod": "FloorMod"}
REDUCE = {"ReduceSumD": "Sum", "ReduceMeanD": "Mean", "ReduceMaxD": "Max", "ReduceMinD": "Min",
          "ReduceProdD": "Prod"}

RULES: dict[str, Rule] = {}
RULES.update({op: Elementwise(asc) for op, asc in {**UNARY, **BINARY}.items()})
RULES.update({op: Elementwise(op, attrs) for op, attrs in ATTR_UNARY.items()})
RULES.update({op: Reduce(asc) for op, asc in REDUCE.items()})
RULES["Cast"] = CastRule()
RULES["Expand"] = ExpandRule()
RULES["SoftmaxV2"] = Softmax(log=False)
RULES["LogSoftmaxV2"] = Softmax(log=True)
RULES["LayerNorm"] = LayerNormRule()
RULES["RmsNorm"] = RmsNormRule()
