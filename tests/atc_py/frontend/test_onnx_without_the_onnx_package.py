"""The compiler's ONNX path without `import onnx` (atc_py/frontend/onnx/onnx_lite.py): a fresh
process compiles a model and never imports the onnx package, the classes are onnx's own once it is imported,
and bad models get the very same errors as with the full package loaded."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.frontend.onnx import onnx_lite
from tests.helpers import ROOT

SOC = {"ge.socVersion": "Ascend910B1"}


def _model(nodes, inputs, outputs, inits=(), opsets=(("", 17),)):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets], ir_version=8)


def _vi(name, shape, dt=TP.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def _short_tensor():
    t = numpy_helper.from_array(np.zeros((3, 1, 1), np.float32), "b")
    t.raw_data = t.raw_data[:8]
    return t


X, Y = _vi("x", [1, 3, 8, 8]), _vi("y", None)
W = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3, 1, 1) / 7, "w")
GOOD = _model([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])], [X], [Y], [W])
BAD = {
    "attribute of the wrong type": _model([helper.make_node("Softmax", ["x"], ["y"], axis=1.5)], [X], [Y]),
    "unknown opset": _model([helper.make_node("Relu", ["x"], ["y"])], [X], [Y], opsets=(("", 999),)),
    "duplicate opsets": _model([helper.make_node("Relu", ["x"], ["y"])], [X], [Y], opsets=(("", 17), ("ai.onnx", 17))),
    "wrong input count": _model([helper.make_node("Gather", ["x"], ["y"])], [X], [Y]),
    "input dtype outside the schema": _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2], TP.STRING)], [Y]),
    "initializer data short of its shape": _model(
        [helper.make_node("Add", ["x", "b"], ["y"])], [X], [Y],
        [_short_tensor()]),
    "unknown op": _model([helper.make_node("NoSuchOp", ["x"], ["y"])], [X], [Y]),
}

_CHILD = """
import json, sys
import atc_py
from atc_py.common.errors import AtcError
out = {}
for name, path in json.loads(sys.argv[1]).items():
    try:
        atc_py.build(path, {"ge.socVersion": "Ascend910B1"})
        out[name] = "ok"
    except AtcError as e:
        out[name] = str(e)
out["onnx imported"] = "onnx" in sys.modules
print(json.dumps(out))
"""


def _errors_in_process(paths: dict[str, str]) -> dict[str, str]:
    out = {}
    for name, path in paths.items():
        try:
            atc_py.build(path, SOC)
            out[name] = "ok"
        except AtcError as e:
            out[name] = str(e)
    return out


def test_a_fresh_process_compiles_without_onnx_and_reports_the_same_errors(tmp_path):
    paths = {}
    for name, m in {"good": GOOD, **BAD}.items():
        paths[name] = str(tmp_path / (name.replace(" ", "_") + ".onnx"))
        onnx.save(m, paths[name])
    r = subprocess.run([sys.executable, "-c", _CHILD, json.dumps({"good": paths["good"]})], cwd=ROOT,
                       capture_output=True, text=True, check=True)
    child = json.loads(r.stdout.splitlines()[-1])
    assert child == {"good": "ok", "onnx imported": False}
    # the bad models: errors word for word those of a process with the whole onnx package loaded (some error
    # texts may load it, e.g. to name its version; that is allowed)
    r = subprocess.run([sys.executable, "-c", _CHILD, json.dumps({k: v for k, v in paths.items() if k != "good"})],
                       cwd=ROOT, capture_output=True, text=True, check=True)
    child = json.loads(r.stdout.splitlines()[-1])
    child.pop("onnx imported")
    expected = _errors_in_process({k: v for k, v in paths.items() if k != "good"})
    assert all(v != "ok" for v in expected.values()), expected
    assert child == expected


def test_the_light_classes_are_onnx_own_after_import_onnx():
    code = ("import sys; from atc_py.frontend.onnx import onnx_lite as L; assert 'onnx' not in sys.modules; "
            "import onnx; assert onnx.ModelProto is L.ModelProto and onnx.TensorProto is L.TensorProto; "
            "assert onnx.defs.get_schema('Relu', 14, '').since_version == L.defs.get_schema('Relu', 14, '').since_version"
            "; assert L.defs.onnx_opset_version() == onnx.defs.onnx_opset_version(); "
            "m = onnx.helper.make_model(onnx.helper.make_graph([], 'g', [], [])); assert isinstance(m, L.ModelProto)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


@pytest.mark.parametrize("array", [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2], np.int64),
                                   np.array([True, False]), np.zeros((0, 3), np.float16), np.array(3.5, np.float64),
                                   np.array([255, 7], np.uint8)])
def test_to_array_and_itemsize_match_onnx(array):
    for t in (numpy_helper.from_array(array), helper.make_tensor("t", helper.np_dtype_to_tensor_dtype(array.dtype),
                                                                  array.shape, array.reshape(-1).tolist())):
        ours, theirs = onnx_lite.to_array(t), numpy_helper.to_array(t)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape and ours.tobytes() == theirs.tobytes()
        assert onnx_lite.itemsize(t.data_type) == helper.tensor_dtype_to_np_dtype(t.data_type).itemsize


@pytest.mark.parametrize("value", [1.5, 3, "s", [1, 2], [0.5], ["a", "b"], np.ones(2, np.float32)])
def test_attribute_values_match_onnx(value):
    a = helper.make_attribute("k", value)
    ours, theirs = onnx_lite.get_attribute_value(a), helper.get_attribute_value(a)
    assert type(ours) is type(theirs) and ours == theirs


def test_a_reference_attribute_raises_onnx_own_error():
    a = helper.make_attribute_ref("k", onnx.AttributeProto.INT)
    with pytest.raises(ValueError) as ours:
        onnx_lite.get_attribute_value(a)
    with pytest.raises(ValueError) as theirs:
        helper.get_attribute_value(a)
    assert str(ours.value) == str(theirs.value)
