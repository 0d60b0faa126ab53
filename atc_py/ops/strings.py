"""String ops (AICPU): StringNormalizer, StringConcat. String tensors hold GE StringHeads on the device; in the
simulator their values are numpy object arrays, and ops producing them run in dynamic partitions
(the output length depends on the values), which the host executor runs node by node."""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import STRING
from ..ir.graph import Node, TensorDesc
from .core.base import AICPU, OpError, OpSpec, TilingContext, TilingResult, TilingStruct, Work
from .core.registry import register

STRNORM_TILING = TilingStruct(("numel", "Q"), ("stopwords", "I"))


@register
class StringNormalizer(OpSpec):
    """Drop stopwords (case-(in)sensitively) and optionally change case; [C] or [1, C] in, same rank out. An
    all-dropped input gives one empty string (ONNX)."""
    op_type = "StringNormalizer"
    inputs = ("x",)
    attrs = {"case_change_action": "NONE", "is_case_sensitive": False, "stopwords": [], "locale": ""}
    engine = AICPU
    dtypes = (STRING,)
    tiling_struct = STRNORM_TILING
    infer_depend = frozenset({0})

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        if len(x.shape) not in (1, 2) or (len(x.shape) == 2 and x.shape[0] != 1):
            raise OpError(f"StringNormalizer takes [C] or [1, C], got {list(x.shape)}")
        if self.attr(node, "case_change_action") not in ("NONE", "LOWER", "UPPER"):
            raise OpError(f"case_change_action '{self.attr(node, 'case_change_action')}' is not valid")
        if not self.attr(node, "stopwords"):
            return [TensorDesc(x.shape, STRING)]
        data = node.const_input(0)
        if data is None:  # the output length is the number of words kept: known only from the values
            return [TensorDesc(x.shape[:-1] + (-1,), STRING)]
        return [TensorDesc(self.normalize(data, node.attrs).shape, STRING)]

    def normalize(self, x: np.ndarray, attrs) -> np.ndarray:
        stop = list(self.attr(attrs, "stopwords"))
        sensitive = bool(self.attr(attrs, "is_case_sensitive"))
        drop = set(stop) if sensitive else {s.lower() for s in stop}
        words = [w for w in x.reshape(-1) if (w if sensitive else w.lower()) not in drop]
        action = self.attr(attrs, "case_change_action")
        if action == "LOWER":
            words = [w.lower() for w in words]
        elif action == "UPPER":
            words = [w.upper() for w in words]
        if not words:
            words = [""]
        out = np.array(words, dtype=object)
        return out.reshape(1, -1) if x.ndim == 2 else out

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return TilingResult(1, 0, STRNORM_TILING.pack(numel=ctx.inputs[0].numel,
                                                      stopwords=len(self.attr(ctx.attrs, "stopwords"))))

    def compute(self, args, inputs):
        return [self.normalize(inputs[0], args.attrs)]

    def work(self, ctx: TilingContext) -> Work:
        n = ctx.inputs[0].numel
        return Work(vector_ops=n * (1 + len(self.attr(ctx.attrs, "stopwords"))), bytes=2 * ctx.inputs[0].nbytes,
                    dtype="uint8")


@register
class StringConcat(OpSpec):
    """Elementwise concatenation of two string tensors, broadcasting (ONNX StringConcat)."""
    op_type = "StringConcat"
    inputs = ("x", "y")
    engine = AICPU
    dtypes = (STRING,)
    tiling_struct = TilingStruct(("numel", "Q"))

    def infer(self, node: Node) -> list[TensorDesc]:
        a, b = node.input_desc(0), node.input_desc(1)
        try:
            shape = np.broadcast_shapes(a.shape, b.shape) if a.known and b.known else \
                (-1,) * max(len(a.shape), len(b.shape))
        except ValueError:
            raise OpError(f"shapes {list(a.shape)} and {list(b.shape)} do not broadcast") from None
        return [TensorDesc(tuple(shape), STRING)]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        return TilingResult(1, 0, self.tiling_struct.pack(numel=ctx.outputs[0].numel))

    def compute(self, args, inputs):
        a, b = (np.asarray(v, dtype=object) for v in inputs)
        return [np.asarray(a + b, dtype=object)]      # object arrays add their str elements, broadcasting

    def work(self, ctx: TilingContext) -> Work:
        n = ctx.outputs[0].numel
        return Work(vector_ops=n, bytes=sum(t.nbytes for t in ctx.inputs) + ctx.outputs[0].nbytes, dtype="uint8")
