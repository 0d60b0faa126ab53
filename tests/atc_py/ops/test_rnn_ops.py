"""LSTM / GRU / RNN models through atc-py + om-run against onnxruntime: what the node cases leave out —
per-batch sequence lengths in both directions, initial states, peepholes, clip, batch-major layout,
linear_before_reset and non-default activations."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from atc_conformance.backend import AtcBackend

RNG = np.random.default_rng(11)
F = TensorProto.FLOAT


def r(*shape):
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def make(node, feeds, inits, outputs, opset=14):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                                       for k, v in feeds.items()],
                          [helper.make_tensor_value_info(o, F, None) for o in outputs],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def ort_run(m, feeds):
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def run_both(node, feeds, inits, outputs, want=None):
    m = make(node, feeds, inits, outputs)
    want = want if want is not None else ort_run(m, feeds)
    got = AtcBackend.run_model(m, list(feeds.values()))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout", [0, 1])
def test_bidirectional_lstm_with_lengths_states_peepholes_and_clip(layout):
    """layout=1 (batch-major; onnxruntime runs only time-major) against onnxruntime on the transposed data."""
    s, b, i, h = 5, 3, 4, 6
    feeds = {"x": r(s, b, i), "lens": np.array([5, 2, 4], np.int32), "h0": r(2, b, h), "c0": r(2, b, h)}
    inits = {"w": r(2, 4 * h, i), "rw": r(2, 4 * h, h), "bias": r(2, 8 * h), "p": r(2, 3 * h)}
    names = ["x", "w", "rw", "bias", "lens", "h0", "c0", "p"]
    kw = dict(hidden_size=h, direction="bidirectional", clip=1.5)
    if layout == 0:
        run_both(helper.make_node("LSTM", names, ["y", "yh", "yc"], **kw), feeds, inits, ["y", "yh", "yc"])
        return
    y, yh, yc = ort_run(make(helper.make_node("LSTM", names, ["y", "yh", "yc"], **kw), feeds, inits, ["y", "yh", "yc"]),
                        feeds)
    bm = {"x": feeds["x"].transpose(1, 0, 2).copy(), "lens": feeds["lens"],
          "h0": feeds["h0"].transpose(1, 0, 2).copy(), "c0": feeds["c0"].transpose(1, 0, 2).copy()}
    run_both(helper.make_node("LSTM", names, ["y", "yh", "yc"], layout=1, **kw), bm, inits, ["y", "yh", "yc"],
             want=[y.transpose(2, 0, 1, 3), yh.transpose(1, 0, 2), yc.transpose(1, 0, 2)])


def test_reverse_gru_linear_before_reset_with_lengths():
    s, b, i, h = 4, 2, 3, 5
    feeds = {"x": r(s, b, i), "lens": np.array([3, 4], np.int32), "h0": r(1, b, h)}
    inits = {"w": r(1, 3 * h, i), "rw": r(1, 3 * h, h), "bias": r(1, 6 * h)}
    node = helper.make_node("GRU", ["x", "w", "rw", "bias", "lens", "h0"], ["y", "yh"], hidden_size=h,
                            direction="reverse", linear_before_reset=1)
    run_both(node, feeds, inits, ["y", "yh"])


def test_rnn_with_other_activations():
    s, b, i, h = 3, 2, 3, 4
    feeds = {"x": r(s, b, i)}
    inits = {"w": r(2, h, i), "rw": r(2, h, h), "bias": r(2, 2 * h)}
    node = helper.make_node("RNN", ["x", "w", "rw", "bias"], ["y", "yh"], hidden_size=h, direction="bidirectional",
                            activations=["Relu", "HardSigmoid"], activation_alpha=[0.3], activation_beta=[0.4])
    run_both(node, feeds, inits, ["y", "yh"])
