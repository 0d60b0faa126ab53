"""An op's tensor descriptors against its own shape inference, and its static tiling data against its tiling.

A kernel computes its outputs from its inputs and attributes, its views of device memory come from the
descriptors, and its loop bounds (MatMul's m, k, n; a conv's output size) from its tiling data: an output
descriptor smaller than what the kernel computes (or of another rank), an input that gained a dim, a zero
stride, or tiling data made for other shapes (a dim of 0 under a tiling of k = 32) would reach numpy reshapes,
divisions and writes past a buffer. So before anything runs, each kernel op's outputs are inferred again from
its input descriptors and attributes and must be the descriptors the file gives (a dim the inference cannot
know without values, -1, matches any), and a static tiling must be what the op's tiling function (a pure
function of descriptors, attributes and SoC, as on the device's host) gives for them.
"""
from __future__ import annotations

import struct

from atc_py.common.errors import AtcError
from atc_py.ir.graph import Node, Value
from atc_py.om.attrs import from_attr
from atc_py.ops import get_op
from atc_py.ops.core.base import OpError
from atc_py.ops.core.execute import tiling_context
from atc_py.ops.core.infer import precision_outputs

from .model import op_attrs

SKIP = ("Data", "Const", "NetOutput")
INFER_FAULTS = (OpError, AtcError, ArithmeticError, ValueError, TypeError, KeyError, IndexError, RecursionError)


DIVISORS = ("stride", "dilation", "ksize", "kernel", "group", "block", "window", "step", "size")


def _zero_attrs(attrs: dict) -> list[str]:
    """Attributes holding a 0 (alone or in a list), the usual divisors (strides, ksize...) first: what a
    ZeroDivisionError of an inference divided by."""
    def zero(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v == 0
    found = [k for k, v in attrs.items() if zero(v) or (isinstance(v, list) and any(zero(x) for x in v))]
    found.sort(key=lambda k: (not any(d in k.lower() for d in DIVISORS), k))
    return [f"{k} {attrs[k]}" for k in found]


def check_inferred(op, descs_in: list, descs_out: list) -> str | None:
    """None when the op's outputs are what its inference gives from its inputs, else the reason (one line).
    descs_in: the present inputs' TensorDescs (validated), in input order; descs_out: the output descs."""
    spec = get_op(op.type)
    if spec is None or spec.no_task or op.type in SKIP or spec.task_kind not in ("kernel", "hccl"):
        return None
    attrs = op_attrs(op)
    node = Node(op.name, op.type, attrs)
    present = [i for i, s in enumerate(op.input) if s]
    inputs: list = [None] * len(op.input)
    for slot, i in enumerate(present):   # in the framework's layout (a device format's origin)
        inputs[i] = Value(f"{op.name}:in{i}", descs_in[slot].logical, None)
    node.inputs = inputs
    try:
        want = spec.infer(node)
    except NotImplementedError:
        return None
    except ZeroDivisionError:
        zeros = _zero_attrs(attrs)
        return f"attribute {zeros[0]} makes its shape inference divide by zero" if zeros else \
            "its input descriptors make its shape inference divide by zero"
    except INFER_FAULTS as exc:
        text = exc.args[0] if isinstance(exc, OpError) and exc.args else f"{type(exc).__name__}: {exc}"
        return f"its input descriptors and attributes do not make its outputs ({str(text)[:200]})"
    mode = op.attr["_precision_mode"].s.decode(errors="replace") if "_precision_mode" in op.attr else ""
    want = precision_outputs({"_precision_mode": mode}, want)
    if len(want) != len(descs_out):
        return f"it has {len(descs_out)} output descriptors; its inputs give {len(want)} outputs"
    for k, (got, exp) in enumerate(zip((d.logical for d in descs_out), (d.logical for d in want))):
        same = len(got.shape) == len(exp.shape) and all(e < 0 or g == e for g, e in zip(got.shape, exp.shape))
        if not same or got.dtype != exp.dtype:
            return (f"output {k} descriptor {got.dtype}{list(got.shape)} is not what its inputs give: "
                    f"{exp.dtype}{list(exp.shape)}")
    return None


def _first_difference(spec, attrs: dict, got: bytes, want: bytes) -> str:
    """The first field (by the op's tiling struct) where the file's tiling differs from the recomputed one."""
    try:
        a, b = spec.decode_tiling(got, attrs), spec.decode_tiling(want, attrs)
        for name, value in b.items():
            if a.get(name) != value:
                return f"field {name} is {a.get(name)}; its descriptors give {value}"
    except INFER_FAULTS + (struct.error,):
        pass
    k = next(i for i, (x, y) in enumerate(zip(got, want)) if x != y)
    return f"byte {k} is {got[k]}; its descriptors give {want[k]}"


def check_tiling(op, data: bytes, descs_in: list, descs_out: list, soc) -> str | None:
    """None when the file's static tiling data `data` starts with what the op's tiling gives for its descriptors
    and attributes, else the reason. Ops whose tiling reads input values (tiling_depend) are not recomputed."""
    spec = get_op(op.type)
    present = [i for i, s in enumerate(op.input) if s]
    if spec is None or spec.tiling_depend & set(present):
        return None
    ins: list = [None] * len(op.input)
    for slot, i in enumerate(present):
        ins[i] = descs_in[slot]
    attrs = {k: from_attr(a) for k, a in op.attr.items()}
    try:
        want = spec.tiling(tiling_context(spec, ins, descs_out, attrs, soc)).tiling_data
    except NotImplementedError:
        return None
    except INFER_FAULTS + (struct.error,) as exc:
        return f"its tiling fails on its descriptors ({type(exc).__name__}: {str(exc)[:200]})"
    got = bytes(data[:len(want)])
    if got == want:
        return None
    if len(got) < len(want):
        return f"its tiling data has {len(got)} bytes; its descriptors give {len(want)}"
    return f"its tiling data is not what its descriptors give: {_first_difference(spec, attrs, got, want)}"
