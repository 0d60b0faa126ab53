"""Operator selection as GE does it: a node whose dtypes no AI Core kernel takes falls back to the AICPU
engine when CANN's AICPU kernels compute them — an int64 MatMul + Relu builds, runs on AICPU kernels (AI_CPU rows
in the op summary, AICPU time only) and is exact; what no engine takes is still E10055."""
import csv

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(5)


def int64_model(path):
    w = numpy_helper.from_array(RNG.integers(-1000, 1000, (4, 3)).astype(np.int64), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
    g = helper.make_graph(nodes, "i64", [helper.make_tensor_value_info("x", TensorProto.INT64, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 3])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return numpy_helper.to_array(w)


def test_an_int64_matmul_and_relu_run_on_aicpu_kernels_and_are_exact(atc, om_run, tmp_path):
    w = int64_model(tmp_path / "m.onnx")
    code, out, err = atc(f"--model={tmp_path / 'm.onnx'}", "--framework=5", f"--output={tmp_path / 'm'}",
                         "--soc_version=Ascend910B1")
    assert code == 0, out + err
    assert "AICPU fallback: 2 op(s)" in out and "dtype int64: no AI Core kernel" in out
    x = RNG.integers(-(1 << 40), 1 << 40, (2, 4)).astype(np.int64)     # products beyond float64's 53 bits
    np.save(tmp_path / "x.npy", x)
    code, out, err = om_run(str(tmp_path / "m.om"), "--input", str(tmp_path / "x.npy"), "--output",
                            str(tmp_path / "o"), "--profile", str(tmp_path / "p"))
    assert code == 0, out + err
    got = np.load(tmp_path / "o" / "m_output_0.npy")
    assert got.dtype == np.int64 and np.array_equal(got, np.maximum(x @ w, 0))
    with open(tmp_path / "p" / "op_summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["Task Type"] for r in rows] == ["AI_CPU", "AI_CPU"]
    assert "AI Core (cube) busy 0%" in out and "AICPU busy" in out


def test_what_no_engine_takes_is_still_e10055(atc, tmp_path):
    """Sign of a uint64: no AI Core kernel, and atc-py lets no AICPU kernel take it."""
    g = helper.make_graph([helper.make_node("Sign", ["x"], ["y"])], "s",
                          [helper.make_tensor_value_info("x", TensorProto.UINT64, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT64, [2, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "s.onnx")
    code, out, err = atc(f"--model={tmp_path / 's.onnx'}", "--framework=5", f"--output={tmp_path / 's'}",
                         "--soc_version=Ascend910B1")
    assert code != 0 and "E10055" in out + err and not (tmp_path / "s.om").exists()
