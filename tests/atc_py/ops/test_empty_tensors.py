"""Empty tensors are valid ONNX (a batch of no images, a matmul over K = 0): what atc-py compiles, om-run loads
and runs, giving onnxruntime's shapes and values (or the empty result where onnxruntime itself fails) — not an
internal error, a refused load or a failed kernel."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from om_run.load.loader import load_model
from om_run.sim.host import Simulation

RNG = np.random.default_rng(11)
SOCS = ["Ascend310P3", "Ascend910B1"]


def _model(nodes, shape, inits):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v, np.float32), n) for n, v in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])


def _w(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = {
    # every convolution (1x1 stride 2, 3x3 with bias, depthwise), pools and a concat: a cube grid with nothing to do
    "convolutions of batch 0": (
        [helper.make_node("Conv", ["x", "w1"], ["a"], strides=[2, 2]),
         helper.make_node("Conv", ["x", "w3", "b3"], ["c"], pads=[1] * 4),
         helper.make_node("MaxPool", ["c"], ["d"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Conv", ["d", "wd"], ["e"], pads=[1] * 4, group=16),
         helper.make_node("Concat", ["a", "e"], ["f"], axis=1),
         helper.make_node("GlobalAveragePool", ["f"], ["y"])],
        [0, 8, 16, 16], [("w1", _w(16, 8, 1, 1)), ("w3", _w(16, 8, 3, 3)), ("b3", np.ones(16)), ("wd", _w(16, 1, 3, 3))]),
    "a 3-D convolution of batch 0": (
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1] * 6)], [0, 4, 4, 8, 8], [("w", _w(8, 4, 3, 3, 3))]),
    "a softmax of no rows (an automatic-fusion kernel)": (
        [helper.make_node("Softmax", ["x"], ["y"])], [0, 10], []),
    # (onnxruntime 1.2x fails on this one: its function body reshapes the empty batch with a -1)
    "a group normalization of batch 0": (
        [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)], [0, 4, 3, 3],
        [("s", np.ones(4)), ("b", np.zeros(4))], np.zeros((0, 4, 3, 3), np.float32)),
    "a dynamic quantization of batch 0": (
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])], [0, 4], []),
    # a transpose keeping its rows has a data-movement plan (ops/core/move_plans.py): none for an empty tensor
    "a transpose of batch 0": (
        [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1, 3])], [0, 2, 8, 16], []),
    "a matmul over K = 0 (its only weight is empty)": (
        [helper.make_node("MatMul", ["x", "w"], ["y"])], [4, 0], [("w", np.zeros((0, 8)))]),
}


@pytest.mark.parametrize("soc", SOCS)
@pytest.mark.parametrize("case", list(CASES))
def test_an_empty_tensor_compiles_loads_and_runs_as_onnxruntime(tmp_path, soc, case):
    nodes, shape, inits, *expected = CASES[case]
    m = _model(nodes, shape, inits)
    res = atc_py.build(m, {"ge.socVersion": soc})
    p = tmp_path / "m.om"
    p.write_bytes(res.om)
    x = RNG.standard_normal(shape).astype(np.float32)
    (got,), _ = Simulation(load_model(str(p))).run([x])
    want = expected[0] if expected else \
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
