"""Losses over class scores: NLLLoss (ONNX NegativeLogLikelihoodLoss) and SoftmaxCrossEntropyLoss, CANN's op
types with ONNX's semantics: x [N, C, d1..dk], integer target [N, d1..dk], optional per-class weight [C],
reduction none / sum / mean (weighted mean: the sum over the weights of the targets counted), ignore_index
(those positions count 0 and weigh 0). Tiling splits the batch over vector cores; a reduction adds up the
per-block partial sums, so a block that did not run leaves its samples out."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError, TilingContext, Work
from .core.registry import register
from .core.row_split import RowSplitOp

REDUCTIONS = ("none", "sum", "mean")
FLOATS = ("float32", "float16", "float64")


class LossBase(RowSplitOp):
    attrs = {"reduction": "mean", "ignore_index": None}
    dtypes = FLOATS + ("int32", "int64")

    def _check(self, node_or_attrs, x: TensorDesc, target: TensorDesc, weight: TensorDesc | None) -> None:
        if self.attr(node_or_attrs, "reduction") not in REDUCTIONS:
            raise OpError(f"reduction '{self.attr(node_or_attrs, 'reduction')}' is not one of {', '.join(REDUCTIONS)}")
        if x.dtype not in FLOATS or target.dtype not in ("int32", "int64"):
            raise OpError(f"scores must be float and target int32/int64, got {x.dtype} and {target.dtype}")
        if len(x.shape) < 2 or tuple(target.shape) != (x.shape[0],) + tuple(x.shape[2:]):
            raise OpError(f"target {list(target.shape)} must be the scores {list(x.shape)} without the class dim")
        if weight is not None and tuple(weight.shape) != (x.shape[1],):
            raise OpError(f"weight {list(weight.shape)} must have one value per class ({x.shape[1]})")

    def loss_desc(self, node: Node) -> TensorDesc:
        x, t = node.input_desc(0), node.input_desc(1)
        self._check(node, x, t, node.input_desc(2) if len(node.inputs) > 2 else None)
        shape = tuple(t.shape) if self.attr(node, "reduction") == "none" else ()
        return TensorDesc(shape, x.dtype, "ND", "ND")

    def rows(self, ctx: TilingContext) -> int:
        return int(ctx.inputs[0].shape[0])

    def nll(self, args: KernelArgs, logp: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        """The loss of log-probabilities logp [N, C, ...] over the rows the blocks cover."""
        end = self.covered_rows(args)
        c = logp.shape[1]
        ignore = self.attr(args.attrs, "ignore_index")
        t = target[:end].astype(np.int64)
        keep = np.ones(t.shape, bool) if ignore is None else t != int(ignore)
        if np.any(keep & ((t < 0) | (t >= c))):
            bad = t[keep & ((t < 0) | (t >= c))].reshape(-1)[0]
            raise OpError(f"target value {bad} is outside [0, {c}) and is not the ignore_index")
        safe = np.where(keep, t, 0)
        picked = np.take_along_axis(logp[:end], safe[:, None], axis=1)[:, 0]
        w = (weight.astype(logp.dtype)[safe] if weight is not None else np.ones_like(picked)) * keep
        loss = np.zeros(target.shape, logp.dtype)
        loss[:end] = -picked * w
        red = self.attr(args.attrs, "reduction")
        if red == "none":
            return loss
        if red == "sum":
            return np.asarray(loss.sum(), logp.dtype)
        return np.asarray(loss.sum() / w.sum(), logp.dtype)

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops = 4 * ctx.inputs[1].numel
        return w


@register
class NLLLoss(LossBase):
    op_type = "NLLLoss"
    inputs = ("x", "target", "weight?")
    outputs = ("y", "total_weight")

    def infer(self, node: Node) -> list[TensorDesc]:
        y = self.loss_desc(node)
        return [y, TensorDesc((), y.dtype, "ND", "ND")]

    def compute(self, args: KernelArgs, inputs):
        x, target = inputs[0], inputs[1]
        weight = inputs[2] if len(inputs) > 2 else None
        y = self.nll(args, x, target, weight)
        ignore = self.attr(args.attrs, "ignore_index")
        t = target[:self.covered_rows(args)].astype(np.int64)
        keep = np.ones(t.shape, bool) if ignore is None else t != int(ignore)
        counted = weight.astype(x.dtype)[np.where(keep, t, 0)] * keep if weight is not None else keep
        return [y.astype(x.dtype), np.asarray(np.sum(counted), x.dtype)]


@register
class SoftmaxCrossEntropyLoss(LossBase):
    """loss = NLL(log_softmax(scores, axis=1)); the second output is that log-probability tensor."""
    op_type = "SoftmaxCrossEntropyLoss"
    inputs = ("scores", "labels", "weights?")
    outputs = ("loss", "log_prop")

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0)
        return [self.loss_desc(node), TensorDesc(x.shape, x.dtype, "ND", "ND")]

    def compute(self, args: KernelArgs, inputs):
        x, target = inputs[0], inputs[1]
        weight = inputs[2] if len(inputs) > 2 else None
        end = self.covered_rows(args)
        s = x.astype(np.float64 if x.dtype == np.float64 else np.float32)
        logp = np.zeros(s.shape, s.dtype)
        part = s[:end] - s[:end].max(axis=1, keepdims=True)
        logp[:end] = part - np.log(np.exp(part).sum(axis=1, keepdims=True))
        return [self.nll(args, logp, target, weight).astype(x.dtype), logp.astype(x.dtype)]

    def work(self, ctx: TilingContext) -> Work:
        w = super().work(ctx)
        w.vector_ops += 4 * ctx.inputs[0].numel   # max, sub, exp, sum per score
        return w
