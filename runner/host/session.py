"""One model execution as the host runtime does it: H2D inputs, execute the model's tasks, D2H outputs."""
from __future__ import annotations

import numpy as np

from atc_py.errors import AtcError

from ..device.executor import Executor
from ..device.memory import DeviceMemory
from ..loader import DeviceModel


def execute(model: DeviceModel, inputs: list[np.ndarray]) -> list[np.ndarray]:
    if len(inputs) != len(model.inputs):
        raise AtcError("E30002", reason=f"the model has {len(model.inputs)} inputs, {len(inputs)} were given")
    mem = DeviceMemory(model.fm_base, model.memory_size, model.weight_base, model.weights)
    for io, arr in zip(model.inputs, inputs):
        if tuple(arr.shape) != io.desc.shape or arr.dtype != np.dtype(io.desc.dtype):
            raise AtcError("E30002", reason=f"input '{io.name}' must be {io.desc.dtype}{list(io.desc.shape)}, "
                                            f"got {arr.dtype}{list(arr.shape)}")
        mem.write(io.address, arr)
    Executor(model, mem).run()
    return [mem.read(io.address, io.desc) for io in model.outputs]
