"""The onnx package's `light` model zoo (ResNet-50, Inception v1/v2, DenseNet-121, ShuffleNet, SqueezeNet,
VGG-19, ZFNet-512, AlexNet): compile with atc-py, run in the simulator on the same dummy inputs the onnx
backend test runner makes, compare with the shipped expected outputs; no hazards; memory near the bound."""
import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from onnx.backend.test.runner import Runner

import atc_py
from runner.loader import load_model
from runner.sim.host import Simulation

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MODELS = sorted(f[len("light_"):-len(".onnx")] for f in os.listdir(LIGHT) if f.endswith(".onnx"))
RTOL, ATOL = 1e-3, 1e-7   # onnx backend test defaults


def test_all_light_models_are_found():
    assert len(MODELS) == 9


@pytest.mark.parametrize("name", MODELS)
def test_light_model(tmp_path, name):
    path = os.path.join(LIGHT, f"light_{name}.onnx")
    model = onnx.load(path)
    r = atc_py.build(path, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"})
    p = tmp_path / f"{name}.om"
    p.write_bytes(r.om)
    m = load_model(str(p))
    inits = {i.name for i in model.graph.initializer}
    xs = [Runner.generate_dummy_data(x, seed=0, name=f"test_{name}", random=False)
          for x in model.graph.input if x.name not in inits]
    outs, stats = Simulation(m).run(xs)
    expected = numpy_helper.to_array(onnx.load_tensor(os.path.join(LIGHT, f"light_{name}_output_0.pb")))
    np.testing.assert_allclose(outs[0], expected, rtol=RTOL, atol=ATOL)
    assert stats.hazards == []
    assert r.summary["memory_size"] <= 1.10 * r.summary["memory_lower_bound"]
    if name.startswith("inception"):
        assert r.summary["stream_num"] > 1 and r.summary["event_num"] > 0
