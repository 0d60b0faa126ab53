"""`python -m om_run.ais_bench`: a model zoo README's ais_bench line with `python3 -m ais_bench` replaced, run with
ais_bench's conventions — a new --output/<YYYY_MM_DD-hh_mm_ss>/ folder (or --output/<--output_dirname>), BIN
files named <input file name up to its first dot>_<k>, zeros without --input, one warm-up, its summary block and
<folder>_summary.json, its tolerance of --outputSize and of --dymDims names, its device list — and every flag it
has accepted, done, or refused with a reason."""
import datetime
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

from tests.helpers import MODELS, ROOT, compile_om
from tests.helpers.onnx_builders import onnx_model

STAMP = re.compile(r"\d{4}_\d{2}_\d{2}-\d{2}_\d{2}_\d{2}")


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    """small_cnn.om (input [1,3,32,32] float32, output prob [1,10]) and an input file named as datasets name them."""
    d = tmp_path_factory.mktemp("cnn")
    (d / "cnn.om").write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    x.tofile(d / "img.0001.bin")
    np.save(d / "x.npy", x)
    return d


def _expected(om_run, cnn, tmp_path, x="x.npy"):
    """om-run's own run of the same input: its .npy output."""
    code, out, err = om_run("--model", str(cnn / "cnn.om"), "--input", str(cnn / x), "--output", str(tmp_path / "ref"))
    assert code == 0, out + err
    return np.load(tmp_path / "ref" / "small_cnn_output_0.npy")


def test_without_output_dirname_the_outputs_go_to_a_new_timestamp_folder(tool_line, om_run, cnn, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "earlier").mkdir()
    before = datetime.datetime.now().replace(microsecond=0)
    code, stdout, err = tool_line("ais_bench", "--model", str(cnn / "cnn.om"), "--input", str(cnn / "img.0001.bin"),
                                  "--output", str(out))
    after = datetime.datetime.now()
    assert code == 0, stdout + err
    new = sorted(p.name for p in out.iterdir() if p.is_dir() and p.name != "earlier")
    assert len(new) == 1 and STAMP.fullmatch(new[0]), new                   # exactly one new folder, ais_bench's name
    assert before <= datetime.datetime.strptime(new[0], "%Y_%m_%d-%H_%M_%S") <= after
    folder = out / new[0]
    assert f"[INFO] output path:{folder}" in stdout
    assert sorted(p.name for p in folder.iterdir()) == ["img_0.bin"]        # BIN; the name up to the first dot
    got = np.fromfile(folder / "img_0.bin", np.float32)
    np.testing.assert_array_equal(got, _expected(om_run, cnn, tmp_path).reshape(-1))
    summary = json.loads((out / f"{new[0]}_summary.json").read_text())
    assert summary["filesinfo"] == {"0": {"infiles": [str(cnn / "img.0001.bin")],
                                          "outfiles": [os.path.join(str(out), new[0], "img_0.bin")]}}
    assert summary["NPU_compute_time"]["count"] == 1 and summary["args"][1:3] == ["--model", str(cnn / "cnn.om")]


@pytest.mark.parametrize("dirname,folder", [("./result/", "result"), ("bs1_out/", "bs1_out"),
                                            ("data/bin_out", "data/bin_out")])
def test_a_relative_output_dirname_is_joined_under_output(tool_line, cnn, tmp_path, dirname, folder):
    code, stdout, err = tool_line("ais_bench", "--model", str(cnn / "cnn.om"), "--output", str(tmp_path),
                                  "--output_dirname", dirname, "--outfmt", "NPY")
    assert code == 0, stdout + err
    assert (tmp_path / folder / "pure_infer_data_0.npy").is_file()
    assert f"[INFO] output path:{os.path.join(str(tmp_path), dirname)}" in stdout
    summary = os.path.join(str(tmp_path), dirname) + "_summary.json"    # ais_bench's concatenation: with a trailing
    assert os.path.isfile(summary)                                      # slash, _summary.json inside the folder
    assert {p.name for p in (tmp_path / folder).iterdir()} == \
        {"pure_infer_data_0.npy"} | ({"_summary.json"} if dirname.endswith("/") else set())


@pytest.mark.parametrize("dirname", ["../up", "/abs/r", "a/../../b", "r 1"])
def test_an_output_dirname_leaving_output_is_refused_and_nothing_is_written(tool_line, cnn, tmp_path, dirname):
    code, stdout, err = tool_line("ais_bench", "--model", str(cnn / "cnn.om"), "--output", str(tmp_path / "o"),
                                  "--output_dirname", dirname)
    assert code == 1 and "E30002" in err and "--output_dirname" in err and "Traceback" not in err + stdout
    assert list(tmp_path.iterdir()) == []


def test_argparse_prefixes_short_options_and_the_summary_block(tool_line, cnn, tmp_path):
    code, stdout, err = tool_line("ais_bench", "-m", str(cnn / "cnn.om"), "-i", str(cnn / "x.npy"), "-o",
                                  str(tmp_path), "--output_dir", "r", "-l", "3", "--batch", "4", "--display", "1")
    assert code == 0, stdout + err
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["x_0.bin"]
    assert "[INFO] warm up 1 done" in stdout and "Inference time" not in stdout      # ais_bench's lines, not msame's
    block = stdout[stdout.index("Performance Summary"):].splitlines()
    summary = json.loads((tmp_path / "r_summary.json").read_text())
    c = summary["NPU_compute_time"]
    assert c["count"] == 3 and summary["throughput"] == pytest.approx(4000 / c["mean"])
    assert block[1].startswith("[INFO] H2D_latency (ms): min = ")
    assert block[2] == (f"[INFO] NPU_compute_time (ms): min = {c['min']}, max = {c['max']}, mean = {c['mean']}, "
                        f"median = {c['median']}, percentile(99%) = {c['percentile(99%)']}")
    assert block[4] == f"[INFO] throughput 1000*batchsize.mean(4)/NPU_compute_time.mean({c['mean']}): " \
                       f"{summary['throughput']}"
    code, stdout, _ = tool_line("ais_bench", "--model", str(cnn / "cnn.om"))
    assert code == 0 and "H2D_latency" not in stdout and "NPU_compute_time (ms)" in stdout   # without display_all


def test_text_outputs_are_written_as_ais_bench_writes_them(tool_line, om_run, cnn, tmp_path):
    code, stdout, err = tool_line("ais_bench", "--model", str(cnn / "cnn.om"), "--input", str(cnn / "x.npy"), "-o",
                                  str(tmp_path), "--output_dirname", "t", "--outfmt", "TXT")
    assert code == 0, stdout + err
    want = _expected(om_run, cnn, tmp_path)                  # [1, 10]: one row, %f, a space after each value
    assert (tmp_path / "t" / "x_0.txt").read_text() == "".join("%f " % v for v in want.reshape(-1).tolist()) + "\n"


def test_ambiguous_or_unknown_flags_are_e30002_without_a_traceback(tool_line, cnn, tmp_path):
    for argv, message in ((["--out", "o"], "ambiguous option: --out"), (["--bogus", "1"], "unrecognized arguments"),
                          (["--warmup_count", "-1"], "argument --warmup_count: '-1' is not an integer"),
                          (["--aipp_config", "a.config"], "dynamic AIPP is not built"),
                          (["--divide_input", "true"], "not shared out among the devices"),
                          (["--energy_consumption", "1"], "no power model"),
                          (["--dump", "true"], "miss output path"),
                          (["-o", str(tmp_path / "o"), "--output_batchsize_axis", "2"], "output 0 'prob' has 2 dims")):
        code, stdout, err = tool_line("ais_bench", "--model", str(cnn / "cnn.om"), *argv)
        assert code == 1 and "E30002" in err and message in err and "Traceback" not in stdout + err, (argv, err)
    assert list(tmp_path.iterdir()) == []


def test_pure_inference_feeds_zeros_or_random_bytes(tool_line, om_run, cnn, tmp_path):
    np.save(tmp_path / "zero.npy", np.zeros((1, 3, 32, 32), np.float32))
    want = _expected(om_run, cnn, tmp_path, tmp_path / "zero.npy")
    code, stdout, err = tool_line("ais_bench", "--model", str(cnn / "cnn.om"), "-o", str(tmp_path / "z"),
                                  "--output_dirname", "z")
    assert code == 0 and "inputs: zeros" in stdout, stdout + err
    np.testing.assert_array_equal(np.fromfile(tmp_path / "z" / "z" / "pure_infer_data_0.bin", np.float32),
                                  want.reshape(-1))
    code, stdout, err = tool_line("ais_bench", "--model", str(cnn / "cnn.om"), "-o", str(tmp_path / "r"),
                                  "--output_dirname", "r", "--pure_data_type", "random")
    assert code == 0 and "random bytes" in stdout
    assert not np.array_equal(np.fromfile(tmp_path / "r" / "r" / "pure_infer_data_0.bin", np.float32),
                              want.reshape(-1))


def test_host_side_flags_are_accepted_and_change_nothing(tool_line, cnn, tmp_path):
    base = ("--model", str(cnn / "cnn.om"), "--input", str(cnn / "x.npy"), "-o", str(tmp_path))
    assert tool_line("ais_bench", *base, "--output_dirname", "a")[0] == 0
    code, stdout, err = tool_line("ais_bench", *base, "--output_dirname", "b", "--output_batchsize_axis", "1",
                                  "--auto_set_dymshape_mode", "1", "--infer_queue_count", "1", "--run_mode", "tensor",
                                  "--pipeline", "true", "--threads", "2", "--debug", "1", "--dump_npy", "1",
                                  "--npu_id", "3", "--profiler_rename", "0")
    assert code == 0, stdout + err
    assert (tmp_path / "a" / "x_0.bin").read_bytes() == (tmp_path / "b" / "x_0.bin").read_bytes()


def test_a_device_list_runs_once_per_device(tool_line, cnn, tmp_path):
    code, stdout, err = tool_line("ais_bench", "--model", str(cnn / "cnn.om"), "--input", str(cnn / "x.npy"), "-o",
                                  str(tmp_path), "--output_dirname", "r", "--device", "0,1")
    assert code == 0, stdout + err
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["device0_0", "device0_0_summary.json", "device1_1",
                                                                  "device1_1_summary.json"]
    assert (tmp_path / "r/device0_0/x_0.bin").read_bytes() == (tmp_path / "r/device1_1/x_0.bin").read_bytes()
    per_device = [json.loads((tmp_path / f"r/device{d}_{d}_summary.json").read_text())["throughput"] for d in (0, 1)]
    assert "[INFO] multidevice:[0, 1] run begin" in stdout and f"[INFO] i:1 device_1 throughput:{per_device[1]} " in stdout
    assert f"[INFO] summary throughput:{sum(per_device)}" in stdout


def test_output_size_may_give_more_or_fewer_sizes_than_outputs(tool_line, om_run, cnn, tmp_path):
    model = str(cnn / "cnn.om")
    for sizes in ("40,8,8", "4000"):            # prob is 40 bytes: the extra sizes are not used
        assert tool_line("ais_bench", "--model", model, "--outputSize", sizes)[0] == 0
    code, _, err = tool_line("ais_bench", "--model", model, "--outputSize", "39")
    assert code == 1 and "E30004" in err and "--outputSize buffer of 39" in err
    code, _, err = tool_line("ais_bench", "--model", model, "--outputSize", "0")
    assert code == 1 and "E30002" in err and "each above 0" in err
    code, _, err = om_run("--model", model, "--outputSize", "40,8")           # om-run (and msame): one per output
    assert code == 1 and "--outputSize gives 2 sizes" in err


def test_dym_dims_is_read_by_its_values_and_a_name_the_model_lacks_is_a_warning(atc, tool_line, om_run, tmp_path):
    onnx.save(onnx_model([helper.make_node("Add", ["x", "y"], ["z"])], [("x", ["a", "b"]), ("y", ["a", "b"])],
                         [("z", ["a", "b"])]), tmp_path / "add.onnx")
    assert atc(f"--model={tmp_path / 'add.onnx'}", "--framework=5", f"--output={tmp_path / 'add'}",
               "--soc_version=Ascend910B1", "--input_shape=x:-1,-1;y:-1,-1", "--dynamic_dims=1,4,1,4;2,8,2,8")[0] == 0
    model = str(tmp_path / "add.om")
    code, stdout, err = tool_line("ais_bench", "--model", model, "--dymDims", "x:2,8;data:2,8")
    assert code == 0 and "[INFO] gear 1: dims 2,8,2,8" in stdout, stdout + err
    assert "[WARN] find no in names:data" in stdout and "find no in names:x" not in stdout
    code, stdout, _ = tool_line("msame", "--model", model, "--dymDims", "x:2,8;data:2,8")
    assert code == 0 and "gear 1" in stdout and "WARN" not in stdout                   # msame: silent
    code, _, err = om_run("--model", model, "--dymDims", "x:2,8")                     # the values are no gear
    assert code == 1 and "E30002" in err and "is no gear of the model" in err


def test_the_entry_point_runs_as_a_module_and_shadows_no_ais_bench(tmp_path):
    assert not (ROOT / "ais_bench").exists() and not (ROOT / "ais_bench.py").exists()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-m", "om_run.ais_bench", "--help"], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    assert res.returncode == 0 and "--output_batchsize_axis" in res.stdout and "--infer_queue_count" in res.stdout
    res = subprocess.run([sys.executable, "-m", "om_run.ais_bench", "--input", "x.bin"], capture_output=True,
                         text=True, env=env, cwd=tmp_path)
    assert res.returncode == 1 and "E30002" in res.stderr and "--model/-m" in res.stderr
    assert "Traceback" not in res.stderr and list(tmp_path.iterdir()) == []
