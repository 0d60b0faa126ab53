"""ais_bench's command line in om-run (the runner of Ascend's model zoo READMEs): --batchsize, --warmup_count,
--output_dirname, --auto_set_dymdims_mode next to the flags msame shares, and its performance summary block from the
simulated times (NPU_compute_time, H2D / D2H latencies, throughput = 1000 * batchsize / mean), also in
--summary-json; msame's lines stay."""
import json

import numpy as np

from tests.helpers import MODELS, compile_om


def test_the_summary_block_warmups_and_output_dirname(om_run, tmp_path):
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32))
    code, out, err = om_run("--model", str(om), "--input", str(tmp_path / "x.npy"), "--loop", "3", "--warmup_count",
                            "2", "--batchsize", "8", "--output", str(tmp_path / "o"), "--output_dirname", "run1",
                            "--auto_set_dymdims_mode", "1", "--summary-json", str(tmp_path / "s.json"))
    assert code == 0, out + err
    assert out.count("Inference time:") == 3                      # msame's lines, the two warm-ups left out
    for key in ("Performance Summary", "H2D_latency (ms): min =", "NPU_compute_time (ms): min =",
                "D2H_latency (ms)", "throughput 1000*batchsize.mean(8)/NPU_compute_time.mean("):
        assert key in out, key
    s = json.loads((tmp_path / "s.json").read_text())
    bench = s["ais_bench"]
    assert s["loops"] == 3 and bench["batchsize"] == 8
    assert abs(bench["throughput"] - 8000.0 / bench["NPU_compute_time_ms"]["mean"]) < 1e-6
    assert bench["NPU_compute_time_ms"]["mean"] < s["e2e_us"] / 1e3           # the copies are not compute
    assert sorted(p.name for p in (tmp_path / "o" / "run1").iterdir()) == ["x_0.npy"]   # ais_bench: input stem_k
    code, out, err = om_run("--model", str(om), "--output", str(tmp_path / "r"), "--output_dirname", "run2")
    assert code == 0 and sorted(p.name for p in (tmp_path / "r" / "run2").iterdir()) == ["pure_infer_data_0.npy"]


def test_bad_ais_bench_flags(om_run, tmp_path):
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    for argv, message in ((["--output_dirname", "r"], "give --output too"),
                          (["--output", str(tmp_path / "o"), "--output_dirname", "../up"], "must stay under --output"),
                          (["--output", str(tmp_path / "o"), "--output_dirname", "/abs"], "must stay under --output"),
                          (["--warmup_count", "-1"], "warmup_count"),
                          (["--device", "0,256"], "--device '0,256'")):
        code, out, err = om_run(str(om), *argv)
        assert code == 1 and "E30002" in err and message in err, (argv, err)
    assert not (tmp_path / "o").exists()


def test_om_run_joins_a_relative_output_dirname_and_keeps_its_own_defaults(om_run, tmp_path):
    """om-run's own conventions stay: .npy, no time-stamped folder; --output_dirname may be a relative path."""
    om = tmp_path / "cnn.om"
    om.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    np.save(tmp_path / "img.0001.npy", np.zeros((1, 3, 32, 32), np.float32))
    code, out, err = om_run("--model", str(om), "--input", str(tmp_path / "img.0001.npy"), "--output",
                            str(tmp_path / "o"), "--output_dirname", "./data/bin_out/")
    assert code == 0, out + err
    assert [p.name for p in (tmp_path / "o" / "data" / "bin_out").iterdir()] == ["img_0.npy"]   # up to the first dot
    assert [p.name for p in (tmp_path / "o").iterdir()] == ["data"]
    assert "Inference time:" in out and "[INFO] H2D_latency (ms)" in out        # msame's lines and om-run's block
