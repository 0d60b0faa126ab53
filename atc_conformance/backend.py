"""`onnx.backend.base.Backend` over atc-py + om-run.

`prepare` checks the model converts (every unsupported op named in one E19010) and keeps it; `run`
compiles it for the shapes of the inputs it is given — as a deployer passes `--input_shape` to ATC for
dynamic dims — writes the .om, loads it with om-run's loader (all .om checks) and simulates it with
numeric compute. Compiled models are cached per input signature.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from atc_py.frontend.onnx.boundary import element_name, empty_key, kind
from atc_py.pipeline import build

DEFAULT_SOC = "Ascend910B1"


def _graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def _flatten(info: onnx.ValueInfoProto, x) -> list[tuple[str, np.ndarray]]:
    """One ONNX input value as the compiled model's inputs (boundary.py): a sequence's elements are `name[k]`,
    an empty sequence or absent optional is `name[]` with no array."""
    if isinstance(x, (list, tuple)):
        items = [(element_name(info.name, k), np.asarray(e)) for k, e in enumerate(x)]
        return items or [(empty_key(info.name), None)]
    if x is None:
        return [(empty_key(info.name), None)]
    return [(info.name, np.asarray(x))]


def _gather(info: onnx.ValueInfoProto, by_name: dict):
    """One ONNX output from the compiled model's outputs (by name)."""
    if info.name in by_name:
        return by_name[info.name]
    items = []
    while element_name(info.name, len(items)) in by_name:
        items.append(by_name[element_name(info.name, len(items))])
    if items or kind(info) == "sequence_type":
        return items
    return None          # an optional compiled empty


class AtcBackendRep(BackendRep):
    def __init__(self, model: onnx.ModelProto, soc: str):
        self.model = model
        self.soc = soc
        self.inputs = _graph_inputs(model)
        self.names = [i.name for i in self.inputs]
        self._compiled: dict[str, object] = {}

    def _load(self, flat: list[tuple[str, np.ndarray]]):
        from om_run.load.loader import load_model
        shapes = ";".join(f"{n}:{','.join(map(str, x.shape)) if x is not None else ''}" for n, x in flat)
        key = shapes + "|" + ",".join(x.dtype.str for _, x in flat if x is not None)
        if key not in self._compiled:
            # the suites check fp32 numbers: keep model dtypes (ATC would default to force_fp16)
            options = {"ge.socVersion": self.soc, "input_shape": shapes, "input_shape_allow_empty": "1",
                       "ge.exec.precision_mode": "must_keep_origin_dtype"}
            om = build(self.model, options).om
            fd, path = tempfile.mkstemp(suffix=".om")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(om)
                self._compiled[key] = load_model(path)
            finally:
                os.unlink(path)
        return self._compiled[key]

    def run(self, inputs, **kwargs):
        from om_run.sim.host import Simulation
        if isinstance(inputs, dict):
            inputs = [inputs[n] for n in self.names]
        elif not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        flat = [p for info, x in zip(self.inputs, inputs) for p in _flatten(info, x)]
        model = self._load(flat)
        outs, stats = Simulation(model).run([x for _, x in flat if x is not None])
        if stats.hazards:
            raise RuntimeError(f"simulation reported hazards: {stats.hazards}")
        if all(kind(info) == "tensor_type" for info in self.model.graph.output):
            return tuple(outs)
        by_name = {io.name: o for io, o in zip(model.outputs, outs)}
        return tuple(_gather(info, by_name) for info in self.model.graph.output)


class AtcBackend(Backend):
    soc = DEFAULT_SOC

    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs):
        if isinstance(model, (bytes, str)):
            model = onnx.load_from_string(model) if isinstance(model, bytes) else onnx.load(model)
        from atc_py.frontend.onnx.converter import OnnxConverter
        OnnxConverter(model, None).check_supported()
        return AtcBackendRep(model, kwargs.get("soc", cls.soc))

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"  # the host side; the NPU is simulated
