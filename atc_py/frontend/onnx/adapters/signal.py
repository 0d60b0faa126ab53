"""Signal adapters: DFT (axis an attribute until opset 20, then an input), STFT, HannWindow, HammingWindow,
BlackmanWindow, MelWeightMatrix."""
from __future__ import annotations

from ....ir.dtypes import dtype_from_onnx
from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op


def _out_dtype(ctx: NodeCtx) -> str:
    dt = dtype_from_onnx(int(ctx.attr("output_datatype", 1)))
    if dt is None:
        raise AdapterError(f"output_datatype {ctx.attr('output_datatype')} is not a type atc-py supports")
    return dt.name


@onnx_op("DFT")
class DFT(OnnxOp):
    @classmethod
    def _impl_v17(cls, ctx: NodeCtx):
        attrs = {"axis": int(ctx.attr("axis", 1)), "inverse": int(ctx.attr("inverse", 0)),
                 "onesided": int(ctx.attr("onesided", 0))}
        return ctx.emit("DFT", [ctx.input(0), ctx.input(1)], attrs)

    @classmethod
    def _impl_v20(cls, ctx: NodeCtx):
        attrs = {"axis": -2, "inverse": int(ctx.attr("inverse", 0)), "onesided": int(ctx.attr("onesided", 0))}
        return ctx.emit("DFT", [ctx.input(0), ctx.input(1), ctx.input(2)], attrs)


@onnx_op("STFT")
class STFT(OnnxOp):
    @classmethod
    def _impl_v17(cls, ctx: NodeCtx):
        return ctx.emit("STFT", [ctx.input(i) for i in range(4)], {"onesided": int(ctx.attr("onesided", 1))})


class _Window(OnnxOp):
    ge_type = ""

    @classmethod
    def _impl_v17(cls, ctx: NodeCtx):
        attrs = {"periodic": int(ctx.attr("periodic", 1)), "dtype": _out_dtype(ctx)}
        return ctx.emit(cls.ge_type, [ctx.input(0)], attrs)


@onnx_op("HannWindow")
class HannWindow(_Window):
    ge_type = "HannWindow"


@onnx_op("HammingWindow")
class HammingWindow(_Window):
    ge_type = "HammingWindow"


@onnx_op("BlackmanWindow")
class BlackmanWindow(_Window):
    ge_type = "BlackmanWindow"


@onnx_op("MelWeightMatrix")
class MelWeightMatrix(OnnxOp):
    @classmethod
    def _impl_v17(cls, ctx: NodeCtx):
        return ctx.emit("MelWeightMatrix", [ctx.input(i) for i in range(5)], {"dtype": _out_dtype(ctx)})
