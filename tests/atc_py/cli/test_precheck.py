"""atc-py --mode=3 (ATC's pre-check): every node's verdict in GE's check_result.json and msit analyze's result.csv;
all unsupported nodes listed, not the first; the report's path from --check_report > $ASCEND_WORK_PATH > the
current directory; no .om; a --mode=0 build that fails on op types writes the report too."""
import csv
import json

import onnx
from onnx import TensorProto, helper

from tests.helpers import MODELS


def three_unsupported(path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok_relu"),
             helper.make_node("NotAnOp", ["a"], ["b"], name="bad1"),
             helper.make_node("AlsoNotAnOp", ["b"], ["c"], name="bad2", domain="com.example"),
             helper.make_node("NotAnOp", ["c"], ["y"], name="bad3")]
    g = helper.make_graph(nodes, "three", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
                                ir_version=8), path)
    return path


def test_every_unsupported_node_is_listed_with_its_cause(atc, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ASCEND_WORK_PATH", raising=False)
    src = three_unsupported(tmp_path / "m.onnx")
    code, out, err = atc("--mode=3", f"--model={src}", "--framework=5", "--soc_version=Ascend910B1")
    assert code != 0 and "3 unsupported node(s)" in out + err
    report = json.loads((tmp_path / "check_result.json").read_text())
    assert report["result"] == "failed" and (report["total"], report["pass"], report["fail"]) == (4, 1, 3)
    by_name = {op["name"]: op for op in report["op"]}
    assert by_name["ok_relu"]["result"] == "success" and "cause" not in by_name["ok_relu"]
    for name in ("bad1", "bad2", "bad3"):
        assert by_name[name]["result"] == "failed"
        assert by_name[name]["cause"][0]["code"] == 3 and "not supported" in by_name[name]["cause"][0]["message"]
    assert "com.example" in by_name["bad2"]["cause"][0]["message"]
    rows = list(csv.DictReader(open(tmp_path / "result.csv")))
    assert list(rows[0]) == ["ori_op_name", "ori_op_type", "op_name", "op_type", "soc_type", "engine",
                             "is_supported", "details"]
    assert [r["is_supported"] for r in rows] == ["True", "False", "False", "False"]
    assert not list(tmp_path.glob("*.om"))


def test_a_supported_model_gets_each_nodes_engine_and_no_om(atc, tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_WORK_PATH", str(tmp_path / "work"))
    (tmp_path / "work").mkdir()
    code, out, err = atc("--mode=3", f"--model={MODELS / 'small_cnn.onnx'}", "--framework=5",
                         "--soc_version=Ascend910B1")
    assert code == 0, out + err
    report = json.loads((tmp_path / "work" / "check_result.json").read_text())
    assert report["result"] == "success" and report["fail"] == 0 and report["total"] == 16
    rows = {r["ori_op_name"]: r for r in csv.DictReader(open(tmp_path / "work" / "result.csv"))}
    assert rows["conv1"]["op_type"] == "Conv2D" and rows["conv1"]["engine"] == "AICORE"
    assert rows["fc"]["op_type"] == "MatMulV2"
    assert rows["bn1"]["op_name"] == "conv1" and "fused into conv1" in rows["bn1"]["details"]   # BN folded into it
    assert not list(tmp_path.rglob("*.om"))


def test_check_report_wins_and_a_failed_parse_in_mode_0_writes_it(atc, tmp_path):
    src = three_unsupported(tmp_path / "m.onnx")
    report = tmp_path / "sub" / "pre.json"
    report.parent.mkdir()
    code, out, err = atc(f"--model={src}", "--framework=5", "--soc_version=Ascend910B1",
                         f"--output={tmp_path / 'm'}", f"--check_report={report}")
    assert code != 0 and "E19010" in out + err
    data = json.loads(report.read_text())
    assert data["fail"] == 3 and (report.parent / "result.csv").exists()
    assert not (tmp_path / "m.om").exists()


def test_a_node_the_build_rejects_fails_with_its_message(atc, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="fine"),
             helper.make_node("MaxPool", ["a"], ["y"], name="pool_k0", kernel_shape=[0, 0])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), tmp_path / "p.onnx")
    code, out, err = atc("--mode=3", f"--model={tmp_path / 'p.onnx'}", "--framework=5", "--soc_version=Ascend910B1")
    assert code != 0
    ops = {op["name"]: op for op in json.loads((tmp_path / "check_result.json").read_text())["op"]}
    assert ops["pool_k0"]["result"] == "failed" and ops["pool_k0"]["cause"][0]["code"] == 1
    assert ops["pool_k0"]["cause"][0]["message"].startswith("E14001")


def supported_around_three_unsupported(path):
    """conv+bn+relu | NotAnOp | sigmoid, reshape, matmul | com.example Custom | softmax, add; NotAnOp on the matmul.
    The first NotAnOp's output is typed (value_info), the Custom's is not."""
    import numpy as np
    from onnx import numpy_helper
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W"),
             *(numpy_helper.from_array(rng.random(4).astype(np.float32) + 0.5, n) for n in ("s", "b", "m", "v")),
             numpy_helper.from_array(rng.standard_normal((64, 8)).astype(np.float32), "M"),
             numpy_helper.from_array(np.array([1, 64], np.int64), "shp")]
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
             helper.make_node("Relu", ["bn"], ["r"], name="relu"),
             helper.make_node("NotAnOp", ["r"], ["u1"], name="bad1"),
             helper.make_node("Sigmoid", ["u1"], ["sg"], name="sig"),
             helper.make_node("Reshape", ["sg", "shp"], ["fl"], name="flat"),
             helper.make_node("MatMul", ["fl", "M"], ["mm"], name="fc"),
             helper.make_node("Custom", ["mm"], ["u2"], name="bad2", domain="com.example"),
             helper.make_node("Softmax", ["u2"], ["sm"], name="soft"),
             helper.make_node("NotAnOp", ["mm"], ["u3"], name="bad3"),
             helper.make_node("Add", ["sm", "mm"], ["y"], name="add")]
    g = helper.make_graph(nodes, "cut", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8]),
                           helper.make_tensor_value_info("u3", TensorProto.FLOAT, [1, 8])], initializer=inits,
                          value_info=[helper.make_tensor_value_info("u1", TensorProto.FLOAT, [1, 4, 4, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
                                ir_version=8), path)
    return path


def test_supported_nodes_keep_their_engines_beside_unsupported_ones(atc, tmp_path):
    """The model without its unsupported nodes is built: every supported node's engine, core type and kernel
    in both reports, a fused node names the node it went into; a reader of an untyped unsupported output says
    why it has none."""
    src = supported_around_three_unsupported(tmp_path / "m.onnx")
    code, out, err = atc("--mode=3", f"--model={src}", "--framework=5", "--soc_version=Ascend910B1",
                         f"--check_report={tmp_path / 'check_result.json'}")
    assert code != 0 and "3 unsupported node(s)" in out + err
    ops = {op["name"]: op for op in json.loads((tmp_path / "check_result.json").read_text())["op"]}
    rows = {r["ori_op_name"]: r for r in csv.DictReader(open(tmp_path / "result.csv"))}
    for name, engine, core, kernel in (("conv", "AICORE", "AIC", "Conv2D"), ("sig", "AICORE", "AIV", "AscBackend"),
                                       ("fc", "AICORE", "AIC", "MatMulV2")):
        assert (ops[name]["engine"], ops[name]["core_type"], ops[name]["op_type"]) == (engine, core, kernel), ops[name]
        assert (rows[name]["engine"], rows[name]["op_type"], rows[name]["is_supported"]) == (engine, kernel, "True")
    for fused in ("bn", "relu"):
        assert ops[fused]["op_name"] == "conv" and "fused into conv (Conv2D)" in rows[fused]["details"]
    for bad in ("bad1", "bad2", "bad3"):
        assert ops[bad]["result"] == "failed" and rows[bad]["engine"] == "" and "engine" not in ops[bad]
    assert rows["soft"]["engine"] == "" and "u2, whose type is not known, made by the unsupported bad2" in \
        rows["soft"]["details"]
    assert "soft (no engine either)" in rows["add"]["details"] and "engine" not in ops["add"]
    assert not list(tmp_path.glob("*.om"))
