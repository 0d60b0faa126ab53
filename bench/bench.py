"""Benchmarks (not tests): compile time vs onnxruntime's offline optimisation, and om-run numeric execution
time vs onnxruntime inference, on the sample models. Prints ratios; run with `make bench`.

Measures wall time on this machine (median of several repetitions); nothing here is asserted.
"""
from __future__ import annotations

import pathlib
import statistics
import sys
import tempfile
import time

import onnxruntime as ort

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import atc_py  # noqa: E402
from runner.host.session import execute  # noqa: E402
from runner.io import random_inputs  # noqa: E402
from runner.loader import load_model  # noqa: E402

REPEAT = 7
SOC = "Ascend910B1"


def median_time(fn, repeat=REPEAT) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ort_offline(model: pathlib.Path, out: str) -> None:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = out
    ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])


def main() -> None:
    print(f"{'model':<20} {'atc-py ms':>10} {'ort-opt ms':>10} {'ratio':>7} | {'om-run ms':>10} {'ort-run ms':>10} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as d:
        for model in sorted((ROOT / "models").glob("*.onnx")):
            compile_s = median_time(lambda: atc_py.build(str(model), {"ge.socVersion": SOC}))
            ort_opt_s = median_time(lambda: ort_offline(model, f"{d}/opt.onnx"))
            om = pathlib.Path(d) / f"{model.stem}.om"
            om.write_bytes(atc_py.build(str(model), {"ge.socVersion": SOC}).om)
            dm = load_model(str(om))
            inputs = random_inputs(dm, 0)
            run_s = median_time(lambda: execute(dm, inputs))
            sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
            feed = {i.name: a for i, a in zip(sess.get_inputs(), inputs)}
            ort_run_s = median_time(lambda: sess.run(None, feed))
            print(f"{model.stem:<20} {compile_s * 1e3:>10.2f} {ort_opt_s * 1e3:>10.2f} {compile_s / ort_opt_s:>6.2f}x | "
                  f"{run_s * 1e3:>10.3f} {ort_run_s * 1e3:>10.3f} {run_s / ort_run_s:>6.1f}x")
    print("ratios: atc-py / onnxruntime (lower is better); om-run numerics run in numpy, kernel by kernel")


if __name__ == "__main__":
    main()
