"""ONNX frontend: adapters by opset, all unsupported ops in one error, external data confinement, bad files."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.frontend.onnx import convert_onnx, load_onnx, load_onnx_lazy
from atc_py.frontend.onnx.adapter import ADAPTERS
from tests.helpers import compile_om


def model_of(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def test_all_unsupported_ops_reported_in_one_error():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("Foo", ["a"], ["b"], name="foo1"), helper.make_node("Foo", ["b"], ["c"], name="foo2"),
             helper.make_node("Bar", ["c"], ["d"], name="bar", domain="com.acme")]
    m = model_of(nodes, [vi("x", [2])], [vi("d", [2])])
    m.opset_import.append(helper.make_opsetid("com.acme", 3))
    with pytest.raises(AtcError) as e:
        convert_onnx(m)
    msg = str(e.value)
    assert msg.startswith("E19010")
    assert "Foo (domain ai.onnx, opset 17" in msg and "foo1, foo2" in msg
    assert "Bar (domain com.acme, opset 3" in msg and "bar" in msg


def test_opset_below_first_version_is_reported_with_the_supported_range():
    m = model_of([helper.make_node("LayerNormalization", ["x", "g"], ["y"], name="ln")],
                 [vi("x", [2, 4])], [vi("y", [2, 4])], [numpy_helper.from_array(np.ones(4, np.float32), "g")], opset=13)
    with pytest.raises(AtcError, match="supported opsets 17-28"):
        convert_onnx(m)


def test_impl_selection_is_largest_version_not_above_opset():
    softmax = ADAPTERS[("", "Softmax")]
    assert softmax.impl_for(11) == softmax._impl_v1
    assert softmax.impl_for(13) == softmax._impl_v13
    assert softmax.impl_for(20) == softmax._impl_v13


def test_softmax_opset11_coerces_to_2d():
    m = model_of([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])],
                 opset=11)
    g, _ = convert_onnx(m)
    assert [n.op_type for n in g.nodes if n.op_type not in ("Data", "Const", "NetOutput")] == \
        ["Reshape", "SoftmaxV2", "Reshape"]


def test_input_shape_overrides_symbolic_dims_and_missing_one_is_an_error(tmp_path):
    m = model_of([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["N", 4])], [vi("y", ["N", 4])])
    with pytest.raises(AtcError, match="E10001.*contain -1"):
        convert_onnx(m)
    g, _ = convert_onnx(m, {"x": [3, 4]})
    assert g.data_nodes[0].outputs[0].desc.shape == (3, 4)
    with pytest.raises(AtcError, match="E10016"):
        convert_onnx(m, {"nope": [3, 4]})


def _external_model(tmp_path, location):
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    m = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [4])], [vi("y", [4])], [w])
    t = m.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in {"location": location, "offset": "0", "length": "16"}.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    path = tmp_path / "sub" / "m.onnx"
    path.parent.mkdir()
    path.write_bytes(m.SerializeToString())
    return path


def test_external_data_inside_folder_loads(tmp_path):
    path = _external_model(tmp_path, "w.bin")
    (path.parent / "w.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    m = load_onnx(str(path))
    assert numpy_helper.to_array(m.graph.initializer[0]).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("location", ["../secret.bin", "/etc/passwd"])
def test_external_data_outside_folder_is_rejected(tmp_path, location):
    path = _external_model(tmp_path, location)
    (tmp_path / "secret.bin").write_bytes(b"\0" * 16)
    with pytest.raises(AtcError, match="E10041.*outside the model's folder"):
        load_onnx(str(path))


def test_external_data_length_past_file_end_is_rejected(tmp_path):
    path = _external_model(tmp_path, "w.bin")
    (path.parent / "w.bin").write_bytes(b"\0" * 8)
    with pytest.raises(AtcError, match="exceeds"):
        load_onnx(str(path))


def test_garbage_file_is_a_clean_error(tmp_path):
    p = tmp_path / "bad.onnx"
    p.write_bytes(b"\xff\xfe this is not protobuf \x00\x01")
    with pytest.raises(AtcError, match="E10041"):
        load_onnx(str(p))


def test_gemm_alpha_beta_and_bias_fold_into_matmul():
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in [(3, 5), (4, 5), (4,)])
    m = model_of([helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transB=1)],
                 [vi("a", [3, 5])], [vi("y", [3, 4])], [numpy_helper.from_array(b, "b"), numpy_helper.from_array(c, "c")])
    g, _ = convert_onnx(m)
    assert "MatMulV2" in [n.op_type for n in g.nodes]
    om = compile_om(m)
    import os
    import tempfile

    from om_run.load.loader import load_model
    from om_run.sim.execute import execute
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.om")
        open(p, "wb").write(om)
        (y,) = execute(load_model(p), [a])
    np.testing.assert_allclose(y, 0.5 * a @ b.T + 2.0 * c, rtol=1e-5, atol=1e-5)


def test_python_api_rejects_bad_tiling_option_with_session_error():
    with pytest.raises(AtcError, match="E10001.*ge.tiling_schedule_optimize.*not within the valid range"):
        atc_py.build(onnx.ModelProto(), {"ge.socVersion": "Ascend910B1", "ge.tiling_schedule_optimize": "2"})


def test_lazy_weights_are_views_of_the_file_with_the_values_onnx_load_gives(tmp_path):
    """Raw little-endian initializers of plain dtypes become read-only views of the mapped file; the others
    (typed fields, bfloat16, strings) stay in the proto; the rest of the model parses as onnx.load does."""
    rng = np.random.default_rng(3)
    arrays = {"f32": rng.standard_normal((2, 3)).astype(np.float32), "f16": np.arange(5, dtype=np.float16),
              "i64": np.array(7, np.int64), "b": np.array([True, False]), "f64": np.array([1.5, -2.0]),
              "empty": np.zeros((0, 4), np.float32)}
    inits = [numpy_helper.from_array(a, n) for n, a in arrays.items()]
    inits += [helper.make_tensor("typed", TensorProto.FLOAT, [2], [1.0, 2.0]),   # float_data, no raw_data
              helper.make_tensor("bf16", TensorProto.BFLOAT16, [2], b"\x80\x3f\x00\x40", raw=True),
              helper.make_tensor("s", TensorProto.STRING, [1], [b"hi"])]
    nodes = [helper.make_node("Identity", [t.name], [f"o_{t.name}"]) for t in inits]
    m = model_of(nodes, [], [helper.make_tensor_value_info(f"o_{t.name}", t.data_type, None) for t in inits], inits)
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    model, weights = load_onnx_lazy(str(path))
    assert set(weights) == set(arrays)
    ref = onnx.load(str(path))
    assert list(model.graph.node) == list(ref.graph.node) and list(model.graph.output) == list(ref.graph.output)
    for t, kept in zip(ref.graph.initializer, model.graph.initializer):
        want = numpy_helper.to_array(t)
        got = weights[t.name] if t.name in weights else numpy_helper.to_array(kept)
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    assert not weights["f32"].flags.writeable
    g, _ = convert_onnx(model, None, weights)   # the converter takes them by name
    assert sum(n.op_type == "Const" for n in g.nodes) >= len(arrays)


def test_lazy_loader_leaves_external_data_in_its_file_and_reports_garbage(tmp_path):
    """External weights are FileTensors (read when used, mapped one at a time), not bytes in the proto."""
    path = _external_model(tmp_path, "w.bin")
    (path.parent / "w.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    model, weights = load_onnx_lazy(str(path))
    assert list(weights) == ["w"] and weights["w"].load().tolist() == [0, 1, 2, 3]
    assert model.graph.initializer[0].data_location == TensorProto.EXTERNAL
    assert not weights["w"].load().flags.writeable
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x3a\xff\xff\xff\xff\x0f junk")   # a graph field whose length runs past the file
    with pytest.raises(AtcError, match="E10041"):
        load_onnx_lazy(str(bad))
