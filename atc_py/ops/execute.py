"""Run one op the way the device does: tiling from descs (and dependent values), then the kernel."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.graph import TensorDesc
from ..platform.soc import SocSpec
from .base import KernelArgs, OpSpec, TilingContext, TilingResult


def tiling_context(spec: OpSpec, in_descs, out_descs, attrs, soc: SocSpec,
                   depend_values: dict[int, np.ndarray] | None = None) -> TilingContext:
    return TilingContext(list(in_descs), list(out_descs), dict(attrs), soc, dict(depend_values or {}))


def launch(spec: OpSpec, tiling: TilingResult, attrs: dict[str, Any], out_descs: list[TensorDesc],
           inputs: list[np.ndarray | None], out: list | None = None) -> list[np.ndarray]:
    """Run the kernel with the tiling it is launched with (it does not re-tile). `out`: the views the outputs
    land in, which a kernel may compute into (KernelArgs.out)."""
    decoded = spec.decode_tiling(tiling.tiling_data, attrs)
    args = KernelArgs(decoded, tiling.tiling_key, tiling.block_dim, dict(attrs), list(out_descs), out)
    outs = spec.compute(args, inputs)
    return [np.asarray(o, order="C") for o in outs]


def run_op(spec: OpSpec, in_descs, out_descs, attrs, soc: SocSpec, inputs) -> list[np.ndarray]:
    """Tiling then kernel: what constant folding and the host executor do."""
    depend = {i: inputs[i] for i in spec.tiling_depend if i < len(inputs) and inputs[i] is not None}
    ctx = tiling_context(spec, in_descs, out_descs, attrs, soc, depend)
    return launch(spec, spec.tiling(ctx), attrs, out_descs, inputs)
