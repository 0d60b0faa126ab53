"""The compile-time shortcuts keep what they replace: the external-data scan still finds
tensors in Constant attributes and If branches, topo_sort's early return gives the sorted list, the GC pause
is undone after build(), and a CLI compile imports neither click nor the TensorFlow frontend."""
import gc
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.frontend.onnx.loader import _all_tensors, load_onnx
from atc_py.ir.graph import Graph, TensorDesc
from tests.helpers import MODELS, ROOT


def _external(t, location: str) -> None:
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in {"location": location, "offset": "0", "length": "16"}.items():
        e = t.external_data.add()
        e.key, e.value = k, v


def _model_with_nested_tensors():
    """An initializer, a Constant's tensor attribute, and an initializer inside an If branch."""
    arr = np.arange(4, dtype=np.float32)
    w = numpy_helper.from_array(arr, "w")
    c = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(arr, "cv"))
    branch = helper.make_graph([helper.make_node("Add", ["x", "b"], ["o"])], "then", [],
                               [helper.make_tensor_value_info("o", TensorProto.FLOAT, [4])],
                               [numpy_helper.from_array(arr, "b")])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["o2"])], "else", [],
                              [helper.make_tensor_value_info("o2", TensorProto.FLOAT, [4])])
    nodes = [c, helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("Add", ["s", "c"], ["t"]),
             helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=other)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                                       helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]),
                           helper.make_tensor_value_info("t", TensorProto.FLOAT, [4])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_external_data_scan_finds_attribute_and_branch_tensors(tmp_path):
    m = _model_with_nested_tensors()
    assert sorted(t.name for t in _all_tensors(m)) == ["b", "cv", "w"]
    for t in _all_tensors(m):
        _external(t, "w.bin")
    (tmp_path / "w.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes() * 2)
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    loaded = load_onnx(str(tmp_path / "m.onnx"))
    for t in _all_tensors(loaded):
        assert t.data_location == TensorProto.DEFAULT and numpy_helper.to_array(t).tolist() == [0, 1, 2, 3]


def _chain(n: int) -> Graph:
    g = Graph("g")
    v = g.add_node("x", "Data", out_descs=[TensorDesc((4,), "float32")], attrs={"index": 0}).outputs[0]
    for k in range(n):
        v = g.add_node(f"r{k}", "Relu", [v], [TensorDesc((4,), "float32")]).outputs[0]
    g.add_node("out", "NetOutput", [v], [])
    return g


def test_topo_sort_keeps_a_sorted_graph_and_sorts_a_shuffled_one():
    g = _chain(6)
    before = list(g.nodes)
    g.topo_sort()
    assert g.nodes == before
    g.nodes = before[::-1]
    g.topo_sort()
    assert [n.name for n in g.nodes] == [n.name for n in before]


def test_build_pauses_gc_and_restores_it(monkeypatch):
    import atc_py.pipeline as pipeline
    seen = []
    real = pipeline.optimize
    monkeypatch.setattr(pipeline, "optimize", lambda *a, **k: (seen.append(gc.isenabled()), real(*a, **k))[1])
    assert gc.isenabled()
    atc_py.build(str(MODELS / "small_cnn.onnx"), {"ge.socVersion": "Ascend910B1"})
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        atc_py.build(str(MODELS / "small_cnn.onnx"), {"ge.socVersion": "Ascend910B1"})
        assert not gc.isenabled()   # a caller's own choice is left as it was
    finally:
        gc.enable()


def test_cli_compile_imports_only_what_it_uses(tmp_path):
    code = ("import sys; from atc_py.cli.main import run; "
            f"rc = run(['--model={MODELS / 'small_cnn.onnx'}', '--framework=5', '--output={tmp_path / 'm'}', "
            "'--soc_version=Ascend910B1']); "
            "print(rc, sorted(m for m in ('click', 'atc_py.frontend.tensorflow', 'atc_py.om.model_info', "
            "'atc_py.om.json_dump') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip().splitlines()[-1] == "0 []"
    assert (tmp_path / "m.om").is_file()
