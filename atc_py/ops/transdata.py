"""TransData: GE's format conversion (NCHW / NHWC <-> NC1HWC0, a filter into FRACTAL_Z, ND <-> FRACTAL_NZ), inserted
by the format pass (passes/formats.py) where an op that wants a device format meets one that does not.

In the framework's layout it is a copy: launch (ops/core/execute.py) converts every device-format operand on the way in
and out, so the kernel itself copies the logical tensor and the conversion happens exactly once, in numpy. Its
cost is the padded bytes it moves (TilingContext.byte_scale) on the vector cores, one op per output element."""
from __future__ import annotations

import numpy as np

from ..ir.formats import DEVICE_FORMATS, NC1HWC0, c0_for, device_shape
from ..ir.graph import Node, TensorDesc
from .core.base import KernelArgs, OpError, OpSpec, TilingContext, TilingResult, cores_for
from .core.elementwise_tiling import ELEMWISE_TILING, run_blocks
from .core.move_plans import PlannedMove, from_5hd_plan, to_5hd_plan
from .core.registry import register
from .elementwise import MOVE_TYPES


@register
class TransData(PlannedMove, OpSpec):
    op_type = "TransData"
    inputs = ("src",)
    outputs = ("dst",)
    attrs = {"src_format": "NCHW", "dst_format": "NC1HWC0"}
    dtypes = MOVE_TYPES
    tiling_struct = ELEMWISE_TILING

    def infer(self, node: Node) -> list[TensorDesc]:
        x = node.input_desc(0).logical
        src, dst = str(self.attr(node, "src_format")), str(self.attr(node, "dst_format"))
        shape, origin = tuple(x.shape), x.origin_format
        if src == "NHWC" and dst in DEVICE_FORMATS and len(shape) == 4:   # 5HD's NCHW side, from channels-last
            shape, origin = (shape[0], shape[3], shape[1], shape[2]), "NCHW"
        if dst in DEVICE_FORMATS:
            return [TensorDesc(device_shape(shape, dst, origin, x.dtype), x.dtype, dst, origin, shape)]
        if dst == "NHWC" and src in DEVICE_FORMATS and len(shape) == 4:
            shape = (shape[0], shape[2], shape[3], shape[1])
        return [TensorDesc(shape, x.dtype, dst, dst)]

    def plan(self, ctx: TilingContext):
        """CANN's plan for an NCHW <-> NC1HWC0 conversion (ops/core/move_plans.py); None for the other formats and for
        H = W = 1, which CANN converts as a 2-D tensor (check_whether_2d): their cost stays the streaming one."""
        x, src, dst = ctx.inputs[0], ctx.attrs.get("src_format", "NCHW"), ctx.attrs.get("dst_format", "NC1HWC0")
        if x is None or len(x.shape) != 4 or {src, dst} != {"NCHW", NC1HWC0} or x.shape[2] * x.shape[3] == 1:
            return None
        n, c, h, w = (int(d) for d in x.shape)
        c0, cores, item = c0_for(x.dtype), cores_for(self, ctx.soc), np.dtype(x.dtype).itemsize
        plan = to_5hd_plan if dst == NC1HWC0 else from_5hd_plan
        return plan(n, c, h * w, c0, cores, item, ctx.soc.ub_size)

    def tiling(self, ctx: TilingContext) -> TilingResult:
        x, y = ctx.inputs[0], ctx.outputs[0]
        if x is None or x.numel != y.numel or sorted(x.shape) != sorted(y.shape):
            raise OpError(f"TransData converts a tensor, not {x} into {y}")
        return self.planned_tiling(ctx)

    def compute(self, args: KernelArgs, inputs):
        """In the framework's layout: a copy, or NHWC <-> NCHW where a channels-last tensor enters or leaves 5HD
        (its 5HD side is NCHW to the kernels)."""
        x = np.asarray(inputs[0])
        if args.attrs.get("src_format") == "NHWC" and x.ndim == 4:
            x = x.transpose(0, 3, 1, 2)
        elif args.attrs.get("dst_format") == "NHWC" and x.ndim == 4:
            x = x.transpose(0, 2, 3, 1)
        x = np.ascontiguousarray(x)
        return [run_blocks(args, [x.reshape(-1)], np.copy, x.dtype).reshape(args.outputs[0].shape)]
