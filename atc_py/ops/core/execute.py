"""Run one op the way the device does: tiling from descs (and dependent values), then the kernel."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.formats import DEVICE_FORMATS, from_device, to_device
from ...ir.graph import TensorDesc
from ...platform.soc import SocSpec
from .base import KernelArgs, OpSpec, TilingContext, TilingResult
from .host_pool import hold_blas_single


def tiling_context(spec: OpSpec, in_descs, out_descs, attrs, soc: SocSpec,
                   depend_values: dict[int, np.ndarray] | None = None) -> TilingContext:
    """Kernels tile and cost in the framework's layout: device-format descs (NC1HWC0, FRACTAL_Z) become their
    logical descs, and the bytes the padded formats move scale the cost (byte_scale)."""
    ins, outs = list(in_descs), list(out_descs)
    scale = 1.0
    if any(d is not None and d.format in DEVICE_FORMATS for d in ins + outs):
        device = sum(d.nbytes for d in ins + outs if d is not None)
        ins = [d.logical if d is not None else None for d in ins]
        outs = [d.logical for d in outs]
        logical = sum(d.nbytes for d in ins + outs if d is not None)
        scale = device / logical if logical else 1.0
    return TilingContext(ins, outs, dict(attrs), soc, dict(depend_values or {}), scale)


def to_logical(inputs: list, in_descs) -> list:
    """Kernel inputs in the framework's layout: a device-format operand converted (ir/formats.py)."""
    out = list(inputs)
    for i, d in enumerate(in_descs or []):
        if d is not None and d.format in DEVICE_FORMATS and i < len(out) and out[i] is not None \
                and tuple(np.shape(out[i])) == tuple(d.shape):
            out[i] = from_device(np.asarray(out[i]), d.format, d.origin_shape, d.origin_format)
    return out


def to_device_outputs(outs: list, out_descs) -> list:
    """Kernel outputs in the device formats their descs have."""
    return [to_device(np.asarray(o), d.format, d.origin_format).astype(o.dtype, copy=False)
            if d.format in DEVICE_FORMATS else o for o, d in zip(outs, out_descs)]


def launch(spec: OpSpec, tiling: TilingResult, attrs: dict[str, Any], out_descs: list[TensorDesc],
           inputs: list[np.ndarray | None], out: list | None = None, in_descs=None,
           keep_logical: bool = False) -> list[np.ndarray]:
    """Run the kernel with the tiling it is launched with (it does not re-tile). `out`: the views the outputs
    land in, which a kernel may compute into (KernelArgs.out). BLAS is held to one thread first (host_pool.py): a
    kernel's result must not depend on how many threads numpy's BLAS would use. Operands in a device format
    (`in_descs` / `out_descs` NC1HWC0, FRACTAL_Z, ...) are converted to the framework's layout and back around
    the kernel, which computes in that layout: the padding never changes a number. keep_logical: the outputs are
    returned in that layout (the simulator converts them when their bytes are needed: DeviceMemory.shadow)."""
    if any(d.format in DEVICE_FORMATS for d in out_descs) or \
            any(d is not None and d.format in DEVICE_FORMATS for d in in_descs or []):
        outs = launch(spec, tiling, attrs, [d.logical for d in out_descs], to_logical(inputs, in_descs))
        return outs if keep_logical else to_device_outputs(outs, out_descs)
    hold_blas_single()
    decoded = spec.decode_tiling(tiling.tiling_data, attrs)
    inside = attrs.get("_internal_dtype")
    if inside in INSIDE_OF:     # passes/soc_kernels.py: the SoC's intrinsic, or the implementation mode, says so
        return _computed_in(inside, spec, decoded, tiling, attrs, out_descs, inputs)
    args = KernelArgs(decoded, tiling.tiling_key, tiling.block_dim, dict(attrs), list(out_descs), out)
    outs = spec.compute(args, inputs)
    return [np.asarray(o, order="C") for o in outs]


# the dtype a kernel computes in inside -> the dtype of its tensors that pass through it: fp32 through fp16 where
# the SoC's intrinsic takes fp16 only; fp16 through fp32 in a high-precision implementation (rounded once)
INSIDE_OF = {"float16": "float32", "float32": "float16"}


def _computed_in(inside: str, spec: OpSpec, decoded, tiling: TilingResult, attrs, out_descs, inputs
                 ) -> list[np.ndarray]:
    """A kernel computing in `inside`: its inputs and outputs of the other float dtype pass through it."""
    outer = INSIDE_OF[inside]
    descs = [TensorDesc(d.shape, inside, d.format, d.origin_format) if d.dtype == outer else d for d in out_descs]
    ins = [x.astype(inside) if isinstance(x, np.ndarray) and x.dtype == outer else x for x in inputs]
    args = KernelArgs(decoded, tiling.tiling_key, tiling.block_dim, dict(attrs), descs, None)
    outs = spec.compute(args, ins)
    return [np.asarray(o, order="C").astype(d.dtype) if d.dtype == outer else np.asarray(o, order="C")
            for o, d in zip(outs, out_descs)]


def run_op(spec: OpSpec, in_descs, out_descs, attrs, soc: SocSpec, inputs) -> list[np.ndarray]:
    """Tiling then kernel: what constant folding and the host executor do."""
    depend = {i: inputs[i] for i in spec.tiling_depend if i < len(inputs) and inputs[i] is not None}
    ctx = tiling_context(spec, in_descs, out_descs, attrs, soc, depend)
    return launch(spec, spec.tiling(ctx), attrs, out_descs, inputs, in_descs=in_descs)
