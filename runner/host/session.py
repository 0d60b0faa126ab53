"""One model execution: inputs checked, then the simulation (host runtime + device) in simulated time."""
from __future__ import annotations

import numpy as np

from atc_py.ir.dtypes import dtype_by_name

from atc_py.errors import AtcError

from ..loader import ModelBase
from ..sim.host import Simulation


def check_inputs(model: ModelBase, inputs: list[np.ndarray]) -> None:
    if len(inputs) != len(model.inputs):
        raise AtcError("E30002", reason=f"the model has {len(model.inputs)} inputs, {len(inputs)} were given")
    for io, arr in zip(model.inputs, inputs):
        if tuple(arr.shape) != io.desc.shape or arr.dtype != dtype_by_name(io.desc.dtype).np:
            raise AtcError("E30002", reason=f"input '{io.name}' must be {io.desc.dtype}{list(io.desc.shape)}, "
                                            f"got {arr.dtype}{list(arr.shape)}")


def execute(model: ModelBase, inputs: list[np.ndarray], **options) -> list[np.ndarray]:
    """Outputs of one run (numerics); the simulated time is available through sim.host.Simulation."""
    check_inputs(model, inputs)
    outs, _ = Simulation(model, **options).run(inputs)
    return outs
