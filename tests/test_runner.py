"""om-run: numerics vs onnxruntime on the samples, inputs/outputs/expected handling, corrupt files."""
import numpy as np
import onnxruntime as ort
import pytest

from runner.sim.execute import execute
from runner.io import random_inputs
from runner.loader import load_model

from .conftest import MODELS, ORT_SAMPLES, compile_om


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    d = tmp_path_factory.mktemp("om")
    paths = {}
    for name in ORT_SAMPLES:
        p = d / f"{name}.om"
        p.write_bytes(compile_om(MODELS / f"{name}.onnx"))
        paths[name] = p
    return paths


@pytest.mark.parametrize("name", ORT_SAMPLES)
@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310P3"])
def test_numerics_match_onnxruntime(tmp_path, name, soc):
    p = tmp_path / "m.om"
    p.write_bytes(compile_om(MODELS / f"{name}.onnx", soc=soc))
    model = load_model(str(p))
    for seed in (0, 1):
        inputs = random_inputs(model, seed)
        outs = execute(model, inputs)
        sess = ort.InferenceSession(str(MODELS / f"{name}.onnx"), providers=["CPUExecutionProvider"])
        ref = sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), inputs)})
        for o, e in zip(outs, ref):
            np.testing.assert_allclose(o, e, rtol=1e-4, atol=1e-4)


def test_default_run_prints_outputs(om_run, compiled):
    code, out, _ = om_run(str(compiled["small_cnn"]))
    assert code == 0 and "output prob: float32[1,10]" in out and "random (seed 0)" in out


def test_inputs_outputs_and_expected(om_run, compiled, tmp_path):
    model = load_model(str(compiled["small_transformer"]))
    x = random_inputs(model, 7)[0]
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "in.npz", x=x)
    sess = ort.InferenceSession(str(MODELS / "small_transformer.onnx"), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": x})[0]
    np.savez(tmp_path / "exp.npz", y=ref)
    np.savez(tmp_path / "exp_pos.npz", ref)  # arr_0
    np.savez(tmp_path / "wrong.npz", y=ref + 1)
    om = str(compiled["small_transformer"])
    code, out, _ = om_run("--model", om, "--input", str(tmp_path / "x.npy"), "--expected", str(tmp_path / "exp.npz"))
    assert code == 0 and "compare y: max abs err" in out and "PASS" in out
    code, out, _ = om_run("--model", om, "--input", str(tmp_path / "in.npz"), "--expected", str(tmp_path / "exp_pos.npz"),
                          "--output", str(tmp_path / "o"), "--outfmt", "BIN", "--loop", "2")
    assert code == 0
    raw = np.fromfile(tmp_path / "o" / "small_transformer_output_0.bin", dtype=np.float32)
    np.testing.assert_allclose(raw.reshape(ref.shape), ref, rtol=1e-4, atol=1e-4)
    code, out, err = om_run("--model", om, "--input", str(tmp_path / "x.npy"), "--expected", str(tmp_path / "wrong.npz"))
    assert code != 0 and "FAIL" in out and "E30003" in err
    for fmt, ext in (("NPY", "npy"), ("TXT", "txt")):
        assert om_run("--model", om, "--output", str(tmp_path / fmt), "--outfmt", fmt)[0] == 0
        assert (tmp_path / fmt / f"small_transformer_output_0.{ext}").is_file()


def test_bad_inputs_are_clean_errors(om_run, compiled, tmp_path):
    om = str(compiled["small_transformer"])
    np.save(tmp_path / "bad.npy", np.zeros((3, 3), np.float32))
    code, _, err = om_run("--model", om, "--input", str(tmp_path / "bad.npy"))
    assert code != 0 and "E30002" in err and "must be float32[2, 8, 32]" in err
    np.savez(tmp_path / "badname.npz", z=np.zeros((2, 8, 32), np.float32))
    code, _, err = om_run("--model", om, "--input", str(tmp_path / "badname.npz"))
    assert code != 0 and "E30002" in err
    (tmp_path / "junk.npy").write_bytes(b"junk")
    code, _, err = om_run("--model", om, "--input", str(tmp_path / "junk.npy"))
    assert code != 0 and "E30002" in err


@pytest.mark.parametrize("cut", [10, 300, -1])
def test_truncated_om_is_a_one_line_error(om_run, compiled, tmp_path, cut):
    data = compiled["small_cnn"].read_bytes()
    p = tmp_path / "t.om"
    p.write_bytes(data[:cut])
    code, out, err = om_run(str(p))
    assert code != 0
    assert len(err.strip().splitlines()) == 1 and "E30001" in err and "Traceback" not in err + out


def test_flipped_byte_and_missing_file(om_run, compiled, tmp_path):
    data = bytearray(compiled["small_cnn"].read_bytes())
    data[len(data) // 2] ^= 0x40
    p = tmp_path / "f.om"
    p.write_bytes(bytes(data))
    code, _, err = om_run(str(p))
    assert code != 0 and "checksum mismatch" in err
    code, _, err = om_run(str(tmp_path / "none.om"))
    assert code != 0 and "E30001" in err


def test_runner_reads_the_tensors_through_the_plan(compiled):
    """A kernel task's args hold the addresses the memory plan gave its tensors (not names)."""
    from atc_py.engines.args import parse_args
    model = load_model(str(compiled["small_cnn"]))
    task = model.tasks[0]
    k = task.kernel if task.HasField("kernel") else task.kernel_with_handle
    addrs, tiling = parse_args(k.context.args_format, k.args)
    op = model.ops[k.context.op_index]
    assert addrs["i0"] == op.input_i[0] and addrs["o0"] == op.output_i[0]
    assert len(tiling) > 0
