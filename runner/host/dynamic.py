"""Host executor of an unknown-shape subgraph (seed 001): per node InferShape → Tiling (with the real values)
→ allocate → Launch, in topological order."""
from __future__ import annotations

import numpy as np

from atc_py.errors import AtcError
from atc_py.ir.graph import Node, TensorDesc, Value
from atc_py.ops import get_op
from atc_py.ops.base import OpError
from atc_py.ops.execute import run_op
from atc_py.platform import load_soc

from ..device.executor import op_attrs
from ..loader import HostModel, desc_from_proto


def _weight(model: HostModel, op) -> np.ndarray:
    td = op.output_desc[0]
    desc = desc_from_proto(td)
    off, size = td.data_offset, desc.nbytes
    if off + size > len(model.weights):
        raise OpError(f"constant {op.name} at {off}+{size} is outside the weights ({len(model.weights)} B)")
    return np.frombuffer(model.weights, dtype=desc.dtype, count=desc.numel, offset=off).reshape(desc.shape).copy()


def _value(name: str, arr: np.ndarray, const: bool) -> Value:
    producer = Node(name, "Const" if const else "Data")
    v = Value(name, TensorDesc(tuple(arr.shape), arr.dtype.name), producer)
    v.data = arr if const else None
    return v


def run_host_graph(model: HostModel, inputs: list[np.ndarray]) -> list[np.ndarray]:
    soc = load_soc(model.soc_version)
    values: dict[str, np.ndarray] = {}
    consts: set[str] = set()
    outputs: list[np.ndarray] = []
    for op in sorted(model.ops.values(), key=lambda o: o.id):
        key = f"{op.name}:0"
        try:
            if op.type == "Data":
                values[key] = inputs[int(op.attr["index"].i)]
            elif op.type == "Const":
                values[key] = _weight(model, op)
                consts.add(key)
            elif op.type == "NetOutput":
                outputs = [values[s] for s in op.input]
            else:
                spec = get_op(op.type)
                args = [values[s] if s else None for s in op.input]
                node = Node(op.name, op.type, op_attrs(op))
                node.inputs = [_value(s, a, s in consts) if a is not None else None for s, a in zip(op.input, args)]
                out_descs = spec.infer(node)                                        # InferShape
                outs = run_op(spec, [v.desc if v is not None else None for v in node.inputs], out_descs,
                              node.attrs, soc, args)                                # Tiling + Launch
                for i, arr in enumerate(outs):
                    values[f"{op.name}:{i}"] = arr
        except (OpError, KeyError, ValueError) as exc:
            raise AtcError("E30004", task=f"host node {op.name} ({op.type})", reason=str(exc)) from None
    return outputs
