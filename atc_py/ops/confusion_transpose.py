"""ConfusionTransposeD: CANN's Reshape + Transpose in one kernel (`transpose_first`: Transpose, then Reshape).

On the SoCs whose matmuls take FRACTAL_NZ, an attention block's head split ([B, S, H] -> [B, S, heads, d] ->
[B, heads, S, d]) and merge run as this op on FRACTAL_NZ in and out, so the tensors between the matmuls never
leave the fractal layout (passes/formats.py forms it where both of its ends are 16-aligned matrices). In the
framework's layout it is the reshape and the transpose; its cost is the bytes it moves, as a TransposeD's."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError, OpSpec, TilingContext, TilingResult
from .core.elementwise_tiling import ELEMWISE_TILING, elementwise_tiling
from .core.registry import register
from .elementwise import MOVE_TYPES

NZ = {"x": "FRACTAL_NZ", "y": "FRACTAL_NZ"}


@register
class ConfusionTransposeD(OpSpec):
    op_type = "ConfusionTransposeD"
    inputs = ("x",)
    attrs = {"perm": None, "shape": None, "transpose_first": False}
    dtypes = MOVE_TYPES
    tiling_struct = ELEMWISE_TILING
    soc_formats = {soc: NZ for soc in ("Ascend310", "Ascend310P", "Ascend310B", "Ascend910")}

    def _shapes(self, attrs, in_shape: tuple) -> tuple[list[int], tuple, tuple]:
        """(perm, the shape between the two steps, the output shape)."""
        perm = [int(p) for p in self.attr(attrs, "perm") or []]
        shape = tuple(int(d) for d in self.attr(attrs, "shape") or [])
        first = bool(self.attr(attrs, "transpose_first"))
        mid = tuple(in_shape[p] for p in perm) if first and sorted(perm) == list(range(len(in_shape))) else shape
        if sorted(perm) != list(range(len(mid))) or any(d < 0 for d in shape) or \
                int(np.prod(shape)) != int(np.prod(in_shape)):
            raise OpError(f"perm {perm} and shape {list(shape)} do not rearrange {list(in_shape)}")
        out = shape if first else tuple(shape[p] for p in perm)
        return perm, mid, out

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0).logical
        out = self._shapes(node.attrs, tuple(x.shape))[2]
        return [TensorDesc(out, x.dtype, "ND", "ND")]

    def tiling(self, ctx: TilingContext) -> TilingResult:
        self._shapes(ctx.attrs, tuple(ctx.inputs[0].shape))
        res = elementwise_tiling(self, ctx, 2, False)
        res.tiling_key = 0
        return res

    def compute(self, args: KernelArgs, inputs):
        x = np.asarray(inputs[0])
        perm, _, out = self._shapes(args.attrs, x.shape)
        if self.attr(args.attrs, "transpose_first"):
            y = np.transpose(x, perm).reshape(out)
        else:
            y = np.transpose(x.reshape(self.attr(args.attrs, "shape")), perm)
        return [np.ascontiguousarray(y)]
