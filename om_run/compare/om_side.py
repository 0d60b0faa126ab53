"""The .om side of a comparison: the dumps om-run wrote (dump_index.json, in execution order) grouped per op,
and the op definitions to rerun one kernel with other inputs or a shorter epilogue (stages.py, locate.py)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ir.formats import DEVICE_FORMATS, FormatError, from_device
from atc_py.ir.graph import TensorDesc
from atc_py.ops.core.execute import run_op
from atc_py.ops.core.registry import get_op
from atc_py.platform import load_soc

from ..load.model import desc_from_proto, op_attrs
from ..run.io import load_npy
from ..sim.program import _in_descs


@dataclass
class OmOp:
    """One executed op with its dumped tensors (dump index entries by position)."""
    order: int
    name: str
    op_type: str
    original: list[str]
    inputs: dict[int, dict] = field(default_factory=dict)
    outputs: dict[int, dict] = field(default_factory=dict)


def read_dumps(root: str) -> list[OmOp]:
    """The ops in the order they ran (an op run twice, in a loop body: its last run)."""
    with open(os.path.join(root, "dump_index.json"), "rb") as f:
        entries = json.loads(f.read())["dumps"]
    runs: dict[str, OmOp] = {}     # insertion order: the order of each op's last run
    for e in entries:
        op = runs.get(e["op_name"])
        slot = None if op is None else op.outputs if e["kind"] == "output" else op.inputs
        if op is None or e["index"] in slot:    # its first dump, or the dumps of a later run
            runs.pop(e["op_name"], None)
            op = runs[e["op_name"]] = OmOp(0, e["op_name"], e["op_type"], list(e["original_names"]))
        e["path"] = os.path.join(root, e["file"])
        (op.outputs if e["kind"] == "output" else op.inputs)[e["index"]] = e
    result = list(runs.values())
    for k, op in enumerate(result):
        op.order = k
    return result


def _as_run(d, arr):
    """A desc with the shape its array has, where the .om's desc leaves dims to run time (-1)."""
    if d is None or arr is None or d.known:
        return d
    return TensorDesc(tuple(np.shape(arr)), d.dtype, d.format, d.origin_format, d.origin_shape)


def load_entry(entry: dict) -> np.ndarray:
    """A dumped tensor in the framework's layout: a device-format one (NC1HWC0, FRACTAL_Z) converted back by its
    recorded origin format and shape."""
    arr = load_npy(entry["path"])
    if entry.get("format") in DEVICE_FORMATS and list(arr.shape) != list(entry.get("origin_shape") or []):
        try:
            return from_device(arr, entry["format"], tuple(entry.get("origin_shape") or ()),
                               entry.get("origin_format", "NCHW"))
        except FormatError as exc:
            raise AtcError("E30002", reason=f"dump {entry['file']}: {exc}") from None
    return arr


class OmKernels:
    """Reruns an op of the loaded .om with the inputs and attributes given (its tiling computed anew)."""

    def __init__(self, model):
        self.soc = load_soc(model.soc_version)
        self.ops = {op.name: op for op in model.ops.values()}
        for sub in getattr(model, "subs", {}).values():
            self.ops.update({op.name: op for op in sub.ops.values()})

    def constant_inputs(self, name: str) -> set[int]:
        """The inputs of op `name` that are constants of the .om (weights: not the framework's activations)."""
        op = self.ops.get(name)
        if op is None:
            return set()
        out = set()
        for k, src in enumerate(op.input):
            producer = self.ops.get(src.rsplit(":", 1)[0]) if src else None
            if producer is not None and producer.type in ("Const", "Constant"):
                out.add(k)
        return out

    def input_sources(self, name: str) -> list[tuple[str, int] | None]:
        """Where each input of op `name` comes from: (producer op, its output), None where absent."""
        op = self.ops.get(name)
        out: list[tuple[str, int] | None] = []
        for src in (op.input if op is not None else []):
            producer, _, k = src.rpartition(":")
            out.append((producer, int(k)) if producer and k.isdigit() else None)
        return out

    def origin_perm(self, name: str) -> tuple[int, ...] | None:
        """The permutation from op `name`'s output to the framework tensor (a transpose sank past it)."""
        from atc_py.ir.graph import ORIGIN_PERM
        from atc_py.om.attrs import from_attr
        op = self.ops.get(name)
        perm = from_attr(op.attr[ORIGIN_PERM]) if op is not None and ORIGIN_PERM in op.attr else None
        if isinstance(perm, list) and sorted(perm) == list(range(len(perm))):
            return tuple(int(p) for p in perm)
        return None

    def attrs(self, name: str) -> dict:
        return op_attrs(self.ops[name])

    def run(self, name: str, inputs: dict[int, np.ndarray], attrs: dict | None = None,
            drop: tuple[int, ...] = (), out_shapes: list | None = None) -> list[np.ndarray]:
        """`out_shapes`: the outputs' shapes as run (a dynamic-shape op's descs hold -1 dims; its inputs' shapes
        come from the arrays)."""
        op = self.ops.get(name)
        spec = get_op(op.type) if op is not None else None
        if spec is None:
            raise AtcError("E30002", reason=f"op {name} of the .om cannot be rerun (no kernel for {op and op.type})")
        in_descs = _in_descs(op)
        args = [None if (k in drop or d is None) else inputs.get(k) for k, d in enumerate(in_descs)]
        in_descs = [None if k in drop else _as_run(d, args[k]) for k, d in enumerate(in_descs)]
        out_descs = [desc_from_proto(d) for d in op.output_desc]
        if out_shapes is not None and any(not d.known for d in out_descs):
            out_descs = [TensorDesc(tuple(s), d.dtype, d.format, d.origin_format, d.origin_shape) if not d.known
                         else d for d, s in zip(out_descs, out_shapes)]
        outs = run_op(spec, in_descs, out_descs, attrs if attrs is not None else op_attrs(op), self.soc, args)
        return [from_device(o, d.format, d.origin_shape, d.origin_format) if d.format in DEVICE_FORMATS else o
                for o, d in zip(outs, out_descs)]
