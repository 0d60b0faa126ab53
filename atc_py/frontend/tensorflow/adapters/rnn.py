"""Ops Keras recurrent layers freeze around their loop: Range (the time steps) and ReverseV2 (the backward
half of a Bidirectional layer)."""
from __future__ import annotations

import numpy as np

from . import TfAdapterError, tf_op


@tf_op("Range")
def range_(ctx):
    return ctx.emit("Range", [ctx.input(0), ctx.input(1), ctx.input(2)])


@tf_op("ReverseV2")
def reverse_v2(ctx):
    """Reverse along each axis: a gather of the indices n-1 .. 0 (constant when the dims are known)."""
    x = ctx.input(0)
    rank = len(x.desc.shape)
    for k, a in enumerate(ctx.const_ints(1, "axis")):
        if not -rank <= a < rank:
            raise TfAdapterError(f"axis {a} is outside the rank {rank} of the input")
        a %= rank
        n = x.desc.shape[a]
        if n < 0:
            raise TfAdapterError("ReverseV2 of a dimension of unknown size")
        idx = ctx.make_const(f"reverse{k}", np.arange(n - 1, -1, -1, dtype=np.int32))
        x = ctx.emit("GatherV2D", [x, idx], {"axis": a}, suffix=f"reverse{k}")[0]
    return [x]
