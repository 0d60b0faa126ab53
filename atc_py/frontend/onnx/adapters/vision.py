"""Vision and detection adapters: NonMaxSuppression, RoiAlign, MaxRoiPool, GridSample, AffineGrid, Col2Im,
DeformConv, SpaceToDepth, ReverseSequence, MaxUnpool, CenterCropPad."""
from __future__ import annotations

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op


@onnx_op("NonMaxSuppression")
class NonMaxSuppression(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        ins = [ctx.input(i) for i in range(5)]
        return ctx.emit("NonMaxSuppressionV6", ins, {"center_point_box": int(ctx.attr("center_point_box", 0))})


@onnx_op("RoiAlign")
class RoiAlign(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        return cls._emit(ctx, "output_half_pixel")

    @classmethod
    def _impl_v16(cls, ctx: NodeCtx):
        return cls._emit(ctx, ctx.attr("coordinate_transformation_mode", "half_pixel"))

    @staticmethod
    def _emit(ctx: NodeCtx, coord: str):
        attrs = {"spatial_scale": float(ctx.attr("spatial_scale", 1.0)),
                 "pooled_height": int(ctx.attr("output_height", 1)), "pooled_width": int(ctx.attr("output_width", 1)),
                 "sample_num": int(ctx.attr("sampling_ratio", 0)), "roi_end_mode": coord,
                 "mode": ctx.attr("mode", "avg")}
        return ctx.emit("ROIAlign", [ctx.input(0), ctx.input(1), ctx.input(2)], attrs)


@onnx_op("MaxRoiPool")
class MaxRoiPool(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        shape = ctx.attr("pooled_shape")
        if shape is None or len(shape) != 2:
            raise AdapterError("pooled_shape must give 2 values")
        return ctx.emit("ROIPooling", [ctx.input(0), ctx.input(1)],
                        {"pooled_h": int(shape[0]), "pooled_w": int(shape[1]),
                         "spatial_scale": float(ctx.attr("spatial_scale", 1.0))})


GRID_MODES = {"linear": "bilinear", "bilinear": "bilinear", "nearest": "nearest", "cubic": "bicubic",
              "bicubic": "bicubic"}


@onnx_op("GridSample")
class GridSample(OnnxOp):
    """GridSampler2D / GridSampler3D (CANN's types) by the input's rank; opset 16 names the modes bilinear /
    bicubic, opset 20 linear / cubic and allows N-D."""

    @classmethod
    def _impl_v16(cls, ctx: NodeCtx):
        x = ctx.input(0)
        mode = ctx.attr("mode", "bilinear" if cls._v16(ctx) else "linear")
        if mode not in GRID_MODES:
            raise AdapterError(f"mode '{mode}' is not one of {', '.join(GRID_MODES)}")
        rank = len(x.desc.shape)
        if rank not in (4, 5):
            raise AdapterError(f"GridSample takes 4-D or 5-D input, got {list(x.desc.shape)}")
        attrs = {"interpolation_mode": GRID_MODES[mode], "padding_mode": ctx.attr("padding_mode", "zeros"),
                 "align_corners": bool(ctx.attr("align_corners", 0))}
        return ctx.emit("GridSampler2D" if rank == 4 else "GridSampler3D", [x, ctx.input(1)], attrs)

    @staticmethod
    def _v16(ctx: NodeCtx) -> bool:
        return ctx.conv.opsets.get("", 0) < 20

    _impl_v20 = _impl_v16


@onnx_op("AffineGrid")
class AffineGrid(OnnxOp):
    @classmethod
    def _impl_v20(cls, ctx: NodeCtx):
        return ctx.emit("AffineGrid", [ctx.input(0), ctx.input(1)],
                        {"align_corners": bool(ctx.attr("align_corners", 0))})


@onnx_op("Col2Im")
class Col2Im(OnnxOp):
    @classmethod
    def _impl_v18(cls, ctx: NodeCtx):
        attrs = {k: [int(v) for v in ctx.attr(k)] for k in ("dilations", "pads", "strides") if ctx.attr(k) is not None}
        return ctx.emit("Col2im", [ctx.input(0), ctx.input(1), ctx.input(2)], attrs)


@onnx_op("DeformConv")
class DeformConv(OnnxOp):
    """DeformableOffsets (the deformed im2col, vector core) then Conv2D with stride = kernel (cube), as CANN
    splits DeformableConv2D; 2-D only."""

    @classmethod
    def _impl_v19(cls, ctx: NodeCtx):
        x, w, offset, b, mask = (ctx.input(i) for i in range(5))
        if len(x.desc.shape) != 4:
            raise AdapterError(f"DeformConv is supported for 2-D input (N,C,H,W), got {list(x.desc.shape)}")
        kernel = [int(k) for k in (ctx.attr("kernel_shape") or w.desc.shape[2:])]
        pads = [int(p) for p in ctx.attr("pads", [0, 0, 0, 0])]
        attrs = {"ksize": kernel, "strides": [int(s) for s in ctx.attr("strides", [1, 1])], "pads": pads,
                 "dilations": [int(d) for d in ctx.attr("dilations", [1, 1])],
                 "deformable_groups": int(ctx.attr("offset_group", 1))}
        cols = ctx.emit("DeformableOffsets", [x, offset, mask], attrs, suffix="offsets")[0]
        conv = {"strides": [1, 1] + kernel, "pads": [0, 0, 0, 0], "dilations": [1, 1, 1, 1],
                "groups": int(ctx.attr("group", 1)), "data_format": "NCHW"}
        return ctx.emit("Conv2D", [cols, w, b], conv)


@onnx_op("SpaceToDepth")
class SpaceToDepth(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        return ctx.emit("SpaceToDepth", [ctx.input(0)], {"block_size": int(ctx.attr("blocksize", 2)),
                                                         "mode": ctx.attr("mode", "DCR")})


@onnx_op("ReverseSequence")
class ReverseSequence(OnnxOp):
    @classmethod
    def _impl_v10(cls, ctx: NodeCtx):
        return ctx.emit("ReverseSequence", [ctx.input(0), ctx.input(1)],
                        {"seq_dim": int(ctx.attr("time_axis", 0)), "batch_dim": int(ctx.attr("batch_axis", 1))})


@onnx_op("CenterCropPad")
class CenterCropPad(OnnxOp):
    @classmethod
    def _impl_v18(cls, ctx: NodeCtx):
        attrs = {} if ctx.attr("axes") is None else {"axes": [int(a) for a in ctx.attr("axes")]}
        return ctx.emit("CenterCropPad", [ctx.input(0), ctx.input(1)], attrs)


@onnx_op("MaxUnpool")
class MaxUnpool(OnnxOp):
    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        attrs = {"ksize": [int(k) for k in ctx.attr("kernel_shape") or []]}
        for key in ("strides", "pads"):
            if ctx.attr(key) is not None:
                attrs[key] = [int(v) for v in ctx.attr(key)]
        return ctx.emit("MaxUnpool", [ctx.input(0), ctx.input(1), ctx.input(2)], attrs)
