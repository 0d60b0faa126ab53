"""Deployment forms: shape ranges / -1 in --input_shape build a dynamic-shape model run by the host
executor at the shapes it is given; om-run takes msame's flags and inputs (.bin files, folders processed one by
one, --dymShape, --outputSize, --device) and prints msame's lines; the default tolerance follows the model's
precision."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from tests.helpers import MODELS

RNG = np.random.default_rng(17)


@pytest.fixture(scope="module")
def conv_model(tmp_path_factory) -> tuple[str, onnx.ModelProto]:
    """A strided conv + relu + global pool with a symbolic batch and spatial size."""
    w = numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
                           helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 3, "H", "W"])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    p = tmp_path_factory.mktemp("dyn") / "conv.onnx"
    onnx.save(m, str(p))
    return str(p), m


def compile_(atc, model: str, out, *extra):
    code, stdout, _ = atc(f"--model={model}", "--framework=5", f"--output={out}", "--soc_version=Ascend910B1",
                          "--precision_mode=must_keep_origin_dtype", *extra)
    assert code == 0, stdout
    return f"{out}.om"


def test_a_range_model_runs_at_three_shapes(atc, om_run, tmp_path, conv_model):
    path, m = conv_model
    om = compile_(atc, path, tmp_path / "r", "--input_shape=x:1~8,3,-1,-1")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape in ((1, 3, 8, 8), (4, 3, 16, 12), (8, 3, 5, 7)):
        x = RNG.standard_normal(shape).astype(np.float32)
        np.save(tmp_path / "x.npy", x)
        np.savez(tmp_path / "exp.npz", y=sess.run(None, {"x": x})[0])
        code, out, err = om_run("--model", om, "--input", str(tmp_path / "x.npy"), "--expected", str(tmp_path / "exp.npz"))
        assert code == 0 and "PASS" in out, out + err
    x = RNG.standard_normal((9, 3, 8, 8)).astype(np.float32)   # batch 9 is outside 1~8
    np.save(tmp_path / "x.npy", x)
    code, _, err = om_run("--model", om, "--input", str(tmp_path / "x.npy"))
    assert code == 1 and "E30002" in err and "1~8" in err


def test_input_shape_range_is_atcs_older_spelling(atc, tmp_path, conv_model):
    path, _ = conv_model
    compile_(atc, path, tmp_path / "r", "--input_shape_range=x:[1~8,3,8,8]")
    code, out, _ = atc(f"--model={path}", "--framework=5", f"--output={tmp_path / 'bad'}", "--soc_version=Ascend910B1",
                       "--input_shape_range=x:1~8,3,8,8")
    assert code == 255 and "E10048" in out
    code, out, _ = atc(f"--model={path}", "--framework=5", f"--output={tmp_path / 'bad'}", "--soc_version=Ascend910B1",
                       "--input_shape_range=x:[1~8,3,8,8]", "--input_shape=x:1,3,8,8")
    assert code == 255 and "E10056" in out
    for bad in ("x:8~1,3,8,8", "x:1~x,3,8,8", "x:-1~4,3,8,8"):   # 0~4 is a range (a KV cache's empty past)
        code, out, _ = atc(f"--model={path}", "--framework=5", f"--output={tmp_path / 'bad'}",
                           "--soc_version=Ascend910B1", f"--input_shape={bad}")
        assert code == 255 and ("E10048" in out or "E10002" in out), (bad, out)


def test_dym_shape_runs_a_dynamic_model_on_random_data_and_timing_only(atc, om_run, tmp_path, conv_model):
    path, _ = conv_model
    om = compile_(atc, path, tmp_path / "r", "--input_shape=x:-1,3,-1,-1")
    code, _, err = om_run("--model", om)
    assert code == 1 and "--dymShape" in err
    code, out, _ = om_run("--model", om, "--dymShape", "x:2,3,10,10")
    assert code == 0 and "output y: float32[2,4,1,1]" in out
    code, out, _ = om_run("--model", om, "--dymShape", "x:2,3,10,10", "--no-compute")
    assert code == 0 and "[SIM]" in out
    code, _, err = om_run("--model", om, "--dymShape", "x:2,4,10,10")
    assert code == 1 and "does not fit" in err


def test_bin_inputs_and_outputs_round_trip(om_run, tmp_path):
    from tests.helpers import compile_om
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    x = RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    np.save(tmp_path / "x.npy", x)
    code, out, _ = om_run("--model", str(om), "--input", str(tmp_path / "x.bin"), "--output", str(tmp_path / "o1"),
                          "--outfmt", "BIN", "--device", "0", "--loop", "2")
    assert code == 0 and "Inference time:" in out and "Inference average time without first time" in out
    got = np.fromfile(tmp_path / "o1" / "small_cnn_output_0.bin", np.float32)
    code, _, _ = om_run("--model", str(om), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "o2"))
    np.testing.assert_array_equal(got, np.load(tmp_path / "o2" / "small_cnn_output_0.npy").reshape(-1))
    (tmp_path / "short.bin").write_bytes(x.tobytes()[:100])
    code, _, err = om_run("--model", str(om), "--input", str(tmp_path / "short.bin"))
    assert code == 1 and "E30002" in err and "needs 12288" in err
    code, _, err = om_run("--model", str(om), "--input", str(tmp_path / "x.bin"), "--outputSize", "8")
    assert code == 1 and "--outputSize" in err


def test_an_input_folder_is_processed_file_by_file(om_run, tmp_path):
    from tests.helpers import compile_om
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    folder = tmp_path / "inputs"
    folder.mkdir()
    xs = [RNG.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(3)]
    for k, x in enumerate(xs):
        x.tofile(folder / f"img{k}.bin")
    code, out, _ = om_run("--model", str(om), "--input", str(folder), "--output", str(tmp_path / "out"),
                          "--outfmt", "NPY")
    assert code == 0 and out.count("start to process file") == 3
    singles = []
    for k, x in enumerate(xs):
        np.save(tmp_path / "one.npy", x)
        om_run("--model", str(om), "--input", str(tmp_path / "one.npy"), "--output", str(tmp_path / f"s{k}"))
        singles.append(np.load(tmp_path / f"s{k}" / "small_cnn_output_0.npy"))
    for k in range(3):
        np.testing.assert_array_equal(np.load(tmp_path / "out" / f"img{k}_output_0.npy"), singles[k])


def test_default_tolerance_follows_the_models_precision(atc, om_run, tmp_path):
    """An fp16 build is compared at 1e-2 against an fp32 reference; an fp32 build at 1e-4."""
    m = onnx.load(str(MODELS / "small_cnn.onnx"))
    x = RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"input": x})
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "exp.npz", *want)
    fp16 = tmp_path / "fp16"
    assert atc(f"--model={MODELS / 'small_cnn.onnx'}", "--framework=5", f"--output={fp16}",
               "--soc_version=Ascend910B1")[0] == 0
    code, out, _ = om_run("--model", f"{fp16}.om", "--input", str(tmp_path / "x.npy"), "--expected",
                          str(tmp_path / "exp.npz"))
    assert code == 0 and "(rtol 0.01, atol 0.01): PASS" in out
    fp32 = compile_(atc, str(MODELS / "small_cnn.onnx"), tmp_path / "fp32")
    code, out, _ = om_run("--model", fp32, "--input", str(tmp_path / "x.npy"), "--expected", str(tmp_path / "exp.npz"))
    assert code == 0 and "(rtol 0.0001, atol 0.0001): PASS" in out


def test_gear_flags_on_a_model_without_gears(om_run, tmp_path):
    from tests.helpers import compile_om
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    for flag, value in (("--dymBatch", "2"), ("--dymHW", "224,224"), ("--dymDims", "x:1,3")):
        code, _, err = om_run("--model", str(om), flag, value)
        assert code == 1 and "E30002" in err and "gears" in err


def test_an_input_folder_is_read_one_execution_at_a_time(om_run, tmp_path, monkeypatch):
    """msame's batch mode streams: each file is read just before its execution, never the whole folder first."""
    import om_run.cli.execute as cli
    import om_run.run.msame_inputs as mi
    from tests.helpers import compile_om
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    folder = tmp_path / "inputs"
    folder.mkdir()
    for k in range(3):
        RNG.standard_normal((1, 3, 32, 32)).astype(np.float32).tofile(folder / f"img{k}.bin")
    events = []
    real_load, real_sim = mi.load_file, cli.simulate
    monkeypatch.setattr(mi, "load_file", lambda *a: events.append("read") or real_load(*a))
    monkeypatch.setattr(cli, "simulate", lambda *a, **k: events.append("run") or real_sim(*a, **k))
    code, out, err = om_run("--model", str(om), "--input", str(folder))
    assert code == 0, out + err
    import itertools
    assert [k for k, _ in itertools.groupby(events)] == ["read", "run"] * 3   # (simulate re-enters itself once)


def test_outputs_holding_nan_are_the_same_from_loop_to_loop(om_run, tmp_path):
    """A NaN in an input (random bytes make them) gives NaN outputs: every loop's are alike, not 'different'."""
    from tests.helpers import compile_om
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    x = np.zeros((1, 3, 32, 32), np.float32)
    x[0, 0, 0, 0] = np.nan
    np.save(tmp_path / "nan.npy", x)
    code, out, err = om_run("--model", str(om), "--input", str(tmp_path / "nan.npy"), "--loop", "2")
    assert code == 0 and "nan" in out, out + err
