"""A model whose fp16 build overflows at one known op (x * 1000 passes 65504 from x = 70 on), and the overflow ops om-run reports for it."""
from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

X = (np.arange(32, dtype=np.float32).reshape(4, 8) * 10)   # x * 1000 passes 65504 from x = 70 on


def model(path):
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"], name="scale_up"),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Add", ["b", "one"], ["y"], name="add_one")]
    g = helper.make_graph(nodes, "ovf", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                          [numpy_helper.from_array(np.array(1000.0, np.float32), "k"),
                           numpy_helper.from_array(np.array(1.0, np.float32), "one")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def overflow_ops(atc, om_run, tmp_path, name: str):
    """The model built by default (fp16, autofuse on) as <name>.om and run on X with --check-overflow: (its source,
    the overflow_ops of its summary)."""
    src = model(tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", X)
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / name}", "--soc_version=Ascend910B1")[0] == 0
    code, out, err = om_run(str(tmp_path / f"{name}.om"), "--input", str(tmp_path / "x.npy"), "--check-overflow",
                            "--summary-json", str(tmp_path / f"{name}.json"))
    assert code == 0, out + err
    return src, json.loads((tmp_path / f"{name}.json").read_text())["overflow_ops"]
