"""Recurrent adapters: LSTM -> CommonLSTM, GRU -> CommonGRU (CANN's parser types), RNN -> CommonRNN. layout=1
(batch-major) becomes transposes around the time-major op, as the parser's graph would have them."""
from __future__ import annotations

from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op

STATE_INPUTS = {"LSTM": (5, 6), "GRU": (5,), "RNN": (5,)}
N_INPUTS = {"LSTM": 8, "GRU": 6, "RNN": 6}


def _recurrent(ctx: NodeCtx, ge_type: str, extra: dict, n_out: int):
    op = ctx.node.op_type
    ins = [ctx.input(i) for i in range(N_INPUTS[op])]
    if ins[0] is None or len(ins[0].desc.shape) != 3:
        raise AdapterError(f"X must be 3-D, got {list(ins[0].desc.shape) if ins[0] is not None else None}")
    batch_major = int(ctx.attr("layout", 0)) == 1
    if batch_major:   # [batch, seq, in] -> [seq, batch, in]; states [batch, dirs, hidden] -> [dirs, batch, hidden]
        ins[0] = ctx.emit("TransposeD", [ins[0]], {"perm": [1, 0, 2]}, suffix="x_tm")[0]
        for i in STATE_INPUTS[op]:
            if ins[i] is not None:
                ins[i] = ctx.emit("TransposeD", [ins[i]], {"perm": [1, 0, 2]}, suffix=f"state{i}_tm")[0]
    attrs = {"hidden_size": int(ctx.attr("hidden_size", 0)), "direction": ctx.attr("direction", "forward"),
             "clip": float(ctx.attr("clip", -1.0)), **extra}
    for key in ("activations", "activation_alpha", "activation_beta"):
        if ctx.attr(key) is not None:
            attrs[key] = list(ctx.attr(key))
    if attrs["hidden_size"] < 1:
        raise AdapterError("hidden_size is required")
    outs = ctx.emit(ge_type, ins, attrs, n_out=n_out, suffix="cell" if batch_major else "")
    if not batch_major:
        return outs
    y = ctx.emit("TransposeD", [outs[0]], {"perm": [2, 0, 1, 3]}, suffix="y_bm")[0]      # [batch, seq, dirs, h]
    states = [ctx.emit("TransposeD", [s], {"perm": [1, 0, 2]}, suffix=f"state{k}_bm")[0]
              for k, s in enumerate(outs[1:])]
    return [y] + states


@onnx_op("LSTM")
class LSTM(OnnxOp):
    @classmethod
    def _impl_v7(cls, ctx: NodeCtx):
        return _recurrent(ctx, "CommonLSTM", {"input_forget": int(ctx.attr("input_forget", 0))}, 3)


@onnx_op("GRU")
class GRU(OnnxOp):
    @classmethod
    def _impl_v7(cls, ctx: NodeCtx):
        return _recurrent(ctx, "CommonGRU", {"linear_before_reset": int(ctx.attr("linear_before_reset", 0))}, 2)


@onnx_op("RNN")
class RNN(OnnxOp):
    @classmethod
    def _impl_v7(cls, ctx: NodeCtx):
        return _recurrent(ctx, "CommonRNN", {}, 2)
