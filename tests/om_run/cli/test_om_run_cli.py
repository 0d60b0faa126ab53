"""om-run: numerics vs onnxruntime on the samples, inputs/outputs/expected handling, corrupt files, the timing
lines an msame user reads."""
import json

import numpy as np
import onnxruntime as ort
import pytest

from om_run.load.loader import load_model
from om_run.run.io import random_inputs
from om_run.sim.execute import execute
from tests.helpers import MODELS, ORT_SAMPLES, compile_om


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


def _line(out: str, prefix: str) -> str:
    (line,) = [ln for ln in out.splitlines() if ln.startswith(prefix)]
    return line


@pytest.mark.parametrize("soc,aicore", [("Ascend910B1", "AI Core (cube)"), ("Ascend310P3", "AI Core")])
def test_msame_timing_lines_are_the_simulated_e2e_time_and_the_ai_core_shows_its_busy_share(om_run, tmp_path, soc,
                                                                                            aicore):
    """msame's `Inference time` lines carry the simulated end-to-end time (--summary-json's e2e), not the host's
    wall clock, which gets a line of its own; the utilisation gives the AI Core that ran the kernels a real share."""
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx", soc=soc))
    code, out, err = om_run(str(om), "--summary-json", str(tmp_path / "s.json"))
    assert code == 0, err
    s = json.loads((tmp_path / "s.json").read_text())
    e2e_ms = s["e2e_us"] / 1000
    assert _line(out, "Inference time: ") == f"Inference time: {e2e_ms:.3f}ms"
    assert _line(out, "Inference average time: ") == f"Inference average time: {e2e_ms:.6f} ms"
    assert "Inference average time without first time" not in out     # one loop: msame prints no such line
    wall = _line(out, "[INFO] host wall clock of the simulation: ")
    assert wall.endswith(" ms per execution (average)") and float(wall.split()[-5]) > 0
    busy = s["utilisation"][f"{aicore} busy"]
    assert 0 < busy <= 1
    printed = _line(out, "[SIM] utilisation (last loop): ").split(f"{aicore} busy ")[1].split("%")[0]
    assert 0 < float(printed) <= 100 and float(printed) == pytest.approx(busy * 100, rel=1e-2)


def test_msame_timing_lines_of_several_loops(om_run, compiled, tmp_path):
    code, out, err = om_run(str(compiled["small_cnn"]), "--loop", "3", "--summary-json", str(tmp_path / "s.json"))
    assert code == 0, err
    s = json.loads((tmp_path / "s.json").read_text())
    times = [float(ln.split()[-1].removesuffix("ms")) for ln in out.splitlines() if ln.startswith("Inference time: ")]
    assert len(times) == 3 and all(s["e2e_us_min"] / 1000 - 5e-4 <= t <= s["e2e_us_max"] / 1000 + 5e-4 for t in times)
    mean = float(_line(out, "Inference average time: ").split()[-2])
    assert mean == pytest.approx(s["e2e_us_mean"] / 1000, abs=1e-6)
    assert _line(out, "Inference average time without first time: ").endswith(" ms")
    assert len([ln for ln in out.splitlines() if ln.startswith("[INFO] host wall clock of the simulation")]) == 1


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
    from atc_py.engines.args import parse
    model = load_model(str(compiled["small_cnn"]))
    task = model.tasks[0]
    k = task.kernel if task.HasField("kernel") else task.kernel_with_handle
    addrs, tiling = parse(k.context.args_format, k.args)
    op = model.ops[k.context.op_index]
    assert addrs["i0"] == op.input_i[0] and addrs["o0"] == op.output_i[0]
    assert len(tiling) > 0
