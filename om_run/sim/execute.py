"""One model execution: inputs checked, then the simulation (host runtime + device) in simulated time."""
from __future__ import annotations

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ir.dtypes import dtype_by_name

from ..load.model import ModelBase, describe, shape_fits
from .host import Simulation


def check_inputs(model: ModelBase, inputs: list[np.ndarray]) -> None:
    """The arrays the user gives match the model's inputs in number, dtype and shape (E30002 otherwise)."""
    if len(inputs) != len(model.inputs):
        raise AtcError("E30002", reason=f"the model has {len(model.inputs)} inputs, {len(inputs)} were given")
    for io, arr in zip(model.inputs, inputs):
        if arr.dtype != dtype_by_name(io.desc.dtype).np or not shape_fits(io, arr.shape):
            raise AtcError("E30002", reason=f"input '{io.name}' must be {io.desc.dtype}{describe(io)}, "
                                            f"got {arr.dtype}{list(arr.shape)}")


def execute(model: ModelBase, inputs: list[np.ndarray], **settings) -> list[np.ndarray]:
    """Outputs of one run (numerics); the simulated time is available through host.Simulation."""
    check_inputs(model, inputs)
    outs, _ = Simulation(model, **settings).run(inputs)
    return outs
