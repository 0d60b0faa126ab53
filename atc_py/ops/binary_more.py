"""More broadcasting binary ops: Pow, Maximum, Minimum, FloorMod, FloorDiv, PRelu, comparisons and logic
(bool output), and Select (ONNX Where: three-way broadcast)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import OpError, TilingContext, TilingResult
from .elementwise import NUM_TYPES, BinaryOp
from .core.elementwise_tiling import elementwise_tiling, run_blocks
from .core.registry import register

ALL_NUM = NUM_TYPES


def _binary(op_type: str, fn, out_dtype=None, dtypes=None, intrinsics: tuple[str, ...] = ()):
    body = {"op_type": op_type, "fn": staticmethod(fn), "out_dtype": out_dtype, "vector_intrinsics": intrinsics,
            "__doc__": f"{op_type}: broadcasting."}
    if dtypes:
        body["dtypes"] = dtypes
    if out_dtype == "bool":
        body["dtypes"] = (dtypes or ALL_NUM) + ("bool",)
    return register(type(op_type, (BinaryOp,), body))


def _pow(a, b):
    if np.issubdtype(a.dtype, np.integer):
        return np.power(a.astype(np.float64), b).astype(a.dtype)
    return np.power(a, b)


_binary("Pow", _pow, intrinsics=("vexp", "vln"))
_binary("Maximum", np.maximum, dtypes=ALL_NUM)
_binary("Minimum", np.minimum, dtypes=ALL_NUM)
_binary("FloorMod", np.mod)
_binary("FloorDiv", lambda a, b: np.floor_divide(a, b))
_binary("Equal", np.equal, "bool")
_binary("NotEqual", np.not_equal, "bool")
_binary("Less", np.less, "bool")
_binary("LessEqual", np.less_equal, "bool")
_binary("Greater", np.greater, "bool")
_binary("GreaterEqual", np.greater_equal, "bool")
_binary("LogicalAnd", np.logical_and, "bool", ("bool",))
_binary("LogicalOr", np.logical_or, "bool", ("bool",))
_binary("LogicalXor", np.logical_xor, "bool", ("bool",))


@register
class PRelu(BinaryOp):
    """y = x if x >= 0 else slope * x; the slope broadcasts to x (unidirectionally)."""
    op_type = "PRelu"
    inputs = ("x", "weight")
    dtypes = ("float32", "float16", "float64")
    fn = staticmethod(lambda x, s: np.where(x >= 0, x, x * s))

    def infer(self, node: Node) -> list[TensorDesc]:
        out = super().infer(node)[0]
        if out.shape != node.input_desc(0).shape:
            raise OpError(f"slope {list(node.input_desc(1).shape)} does not broadcast to x "
                          f"{list(node.input_desc(0).shape)}")
        return [out]


@register
class Select(BinaryOp):
    """ONNX Where: condition ? x1 : x2 with numpy broadcasting of all three."""
    op_type = "Select"
    inputs = ("condition", "x1", "x2")
    dtypes = ALL_NUM + ("bool",)

    def infer(self, node: Node) -> list[TensorDesc]:
        c, a, b = (node.input_desc(i) for i in range(3))
        if c.dtype != "bool":
            raise OpError(f"condition must be bool, got {c.dtype}")
        if a.dtype != b.dtype:
            raise OpError(f"input dtypes differ: {a.dtype} vs {b.dtype}")
        try:
            shape = np.broadcast_shapes(c.shape, a.shape, b.shape)
        except ValueError:
            raise OpError(f"shapes {list(c.shape)}, {list(a.shape)}, {list(b.shape)} cannot be broadcast") from None
        return [TensorDesc(tuple(shape), a.dtype, a.format, a.origin_format)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return elementwise_tiling(self, ctx, 4, any(d.shape != ctx.outputs[0].shape for d in ctx.inputs))

    def compute(self, args, inputs):
        shape = args.outputs[0].shape
        flat = [np.broadcast_to(x, shape).reshape(-1) for x in inputs]
        return [run_blocks(args, flat, np.where, args.outputs[0].dtype)]
