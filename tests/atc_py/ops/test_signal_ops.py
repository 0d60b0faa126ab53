"""Signal ops with their sizes known at compile time (the node cases feed them as graph inputs): windows and
the mel matrix fold into constants while importing, DFT / STFT run as static kernels; numbers against onnx's
reference (onnxruntime's DFT differs from it in the inverse onesided layout)."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper
from onnx.reference import ReferenceEvaluator

import atc_py
from atc_conformance.backend import AtcBackend
from tests.helpers.onnx_builders import onnx_model

RNG = np.random.default_rng(9)
ORIGIN = {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}


model = partial(onnx_model, opset=20, ir_version=9)


def check(m, feeds, rtol=1e-5, atol=1e-5):
    want = ReferenceEvaluator(m).run(None, feeds)
    got = AtcBackend.run_model(m, list(feeds.values()))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def test_windows_and_mel_matrix_of_known_sizes_fold_into_constants():
    nodes = [helper.make_node("HannWindow", ["n"], ["hann"], output_datatype=TP.DOUBLE),
             helper.make_node("HammingWindow", ["n"], ["hamming"], periodic=0),
             helper.make_node("BlackmanWindow", ["n"], ["blackman"]),
             helper.make_node("MelWeightMatrix", ["mels", "dft", "rate", "lo", "hi"], ["mel"]),
             helper.make_node("Mul", ["x", "hamming"], ["y"])]
    inits = [("n", np.array(12, np.int32)), ("mels", np.array(6, np.int32)), ("dft", np.array(32, np.int32)),
             ("rate", np.array(8000, np.int32)), ("lo", np.array(100.0, np.float32)), ("hi", np.array(3000.0, np.float32))]
    m = model(nodes, [("x", TP.FLOAT, [12])], [("hann", TP.DOUBLE), ("blackman", TP.FLOAT), ("mel", TP.FLOAT),
                                               ("y", TP.FLOAT)], inits, opset=17)
    res = atc_py.build(m, ORIGIN)
    assert {n.op_type for n in res.graph.nodes} & {"HannWindow", "HammingWindow", "BlackmanWindow",
                                                    "MelWeightMatrix"} == set()
    check(m, {"x": RNG.standard_normal(12).astype(np.float32)})


@pytest.mark.parametrize("inverse,onesided", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_dft_with_a_known_axis_and_length_is_static(inverse, onesided):
    """axis 1 of [batch, 9, 5, c] with dft_length 8 (cropped) or 12 (zero-padded), double precision."""
    c = 1 if onesided and not inverse else 2
    length = 8 if inverse else 12
    m = model([helper.make_node("DFT", ["x", "len", "axis"], ["y"], inverse=inverse, onesided=onesided)],
              [("x", TP.DOUBLE, [2, 9, 5, c])], [("y", TP.DOUBLE)],
              [("len", np.array(length, np.int64)), ("axis", np.array(1, np.int64))])
    assert atc_py.build(m, ORIGIN).summary["unknown_subgraphs"] == 0
    check(m, {"x": RNG.standard_normal((2, 9, 5, c))}, rtol=1e-9, atol=1e-9)


def test_stft_of_a_complex_signal_two_sided():
    m = model([helper.make_node("STFT", ["x", "step", "win"], ["y"], onesided=0)],
              [("x", TP.FLOAT, [2, 40, 2])], [("y", TP.FLOAT)],
              [("step", np.array(6, np.int64)), ("win", np.hanning(10).astype(np.float32))], opset=17)
    check(m, {"x": RNG.standard_normal((2, 40, 2)).astype(np.float32)}, rtol=1e-4, atol=1e-4)
