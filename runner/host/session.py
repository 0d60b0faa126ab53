"""One model execution as the host runtime does it: H2D inputs, execute, D2H outputs; for a multi-model om
the root graph calls its sub-models in order (static ones on the device, dynamic ones on the host)."""
from __future__ import annotations

import numpy as np

from atc_py.errors import AtcError

from ..device.executor import Executor
from ..device.memory import DeviceMemory
from ..loader import DeviceModel, HostModel, ModelBase, RootModel
from .dynamic import run_host_graph


def check_inputs(model: ModelBase, inputs: list[np.ndarray]) -> None:
    if len(inputs) != len(model.inputs):
        raise AtcError("E30002", reason=f"the model has {len(model.inputs)} inputs, {len(inputs)} were given")
    for io, arr in zip(model.inputs, inputs):
        if tuple(arr.shape) != io.desc.shape or arr.dtype != np.dtype(io.desc.dtype):
            raise AtcError("E30002", reason=f"input '{io.name}' must be {io.desc.dtype}{list(io.desc.shape)}, "
                                            f"got {arr.dtype}{list(arr.shape)}")


def run_static(model: DeviceModel, inputs: list[np.ndarray]) -> list[np.ndarray]:
    mem = DeviceMemory(model.fm_base, model.memory_size, model.weight_base, model.weights)
    for io, arr in zip(model.inputs, inputs):
        mem.write(io.address, arr)                 # H2D
    Executor(model, mem).run()                     # model execute
    return [mem.read(io.address, io.desc) for io in model.outputs]   # D2H


def run_root(model: RootModel, inputs: list[np.ndarray]) -> list[np.ndarray]:
    values: dict[str, np.ndarray] = {}
    for op in sorted(model.ops.values(), key=lambda o: o.id):
        if op.type == "Data":
            values[f"{op.name}:0"] = inputs[int(op.attr["index"].i)]
        elif op.type == "PartitionedCall":
            sub = model.subs[op.subgraph_name[0]]
            outs = execute(sub, [values[s] for s in op.input])
            for i, arr in enumerate(outs):
                values[f"{op.name}:{i}"] = arr
        elif op.type == "NetOutput":
            return [values[s] for s in op.input]
    raise AtcError("E30004", task="root", reason="the root graph has no NetOutput")


def execute(model: ModelBase, inputs: list[np.ndarray]) -> list[np.ndarray]:
    check_inputs(model, inputs)
    if isinstance(model, DeviceModel):
        return run_static(model, inputs)
    if isinstance(model, HostModel):
        return run_host_graph(model, inputs)
    return run_root(model, inputs)
