"""Floating-point exceptions in constant folding and in the simulated kernels come out as inf/NaN values, never
as numpy RuntimeWarning lines on the user's console (an AI Core computes them silently)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VALUES = np.array([[0.0, -1.0, 1.0, 2.0]], np.float32)


def _log_model(path, constant: bool) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    if constant:   # Log of a constant: folded at compile time
        nodes = [helper.make_node("Log", ["c"], ["l"]), helper.make_node("Add", ["x", "l"], ["y"])]
        inits = [numpy_helper.from_array(VALUES, "c")]
    else:          # Log of the input: computed by om-run's kernel
        nodes, inits = [helper.make_node("Log", ["x"], ["y"])], []
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _cli(module: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=300)


def _compile(tmp_path, name: str, constant: bool) -> subprocess.CompletedProcess:
    _log_model(tmp_path / f"{name}.onnx", constant)
    return _cli("atc_py", f"--model={tmp_path / name}.onnx", "--framework=5", f"--output={tmp_path / name}",
                "--soc_version=Ascend310P3", "--precision_mode=force_fp32")


def test_constant_folding_of_log_zero_is_silent(tmp_path):
    res = _compile(tmp_path, "folded", constant=True)
    assert res.returncode == 0, res.stderr
    assert "RuntimeWarning" not in res.stderr + res.stdout
    x = np.ones((1, 4), np.float32)
    np.save(tmp_path / "x.npy", x)
    run = _cli("om_run", "--model", str(tmp_path / "folded.om"), "--input", str(tmp_path / "x.npy"),
               "--output", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    with np.errstate(all="ignore"):
        expected = x + np.log(VALUES)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "folded_output_0.npy"), expected)


def test_kernels_computing_inf_and_nan_are_silent_on_every_thread(tmp_path):
    assert _compile(tmp_path, "log", constant=False).returncode == 0
    np.save(tmp_path / "x.npy", VALUES)
    for threads in ("1", "2"):
        out = tmp_path / f"out{threads}"
        run = _cli("om_run", "--model", str(tmp_path / "log.om"), "--input", str(tmp_path / "x.npy"),
                   "--output", str(out), "--threads", threads)
        assert run.returncode == 0, run.stderr
        assert "RuntimeWarning" not in run.stderr + run.stdout
        got = np.load(out / "log_output_0.npy")
        assert got[0, 0] == -np.inf and np.isnan(got[0, 1]) and got[0, 2] == 0.0
