"""Benchmarks (not tests), printed by `make bench`:

1. compile time of the samples next to onnxruntime's offline optimisation of the same file (ratio);
2. om-run numeric execution next to onnxruntime inference (ratio), the sample CNN hand-written in numpy as a
   floor, and the light ResNet-50;
3. simulator throughput: timing-only simulation of a long task stream (tasks per second of wall time);
4. simulated latency of the decoder sample with and without tiling sink per SoC (simulated, not wall time);
5. compile speed on the light ResNet-50 and a >= 100 MB transformer (bench/compile_speed.py);
6. automatic fusion on and off on the sample transformer and a GPT-style block (bench/fusion_bench.py).

Wall times are the best of several repetitions: this VM's noise is one-sided (other tenants only slow a run
down, by up to 2x), and both sides of every ratio are measured the same way. Nothing here is asserted.
"""
from __future__ import annotations

import pathlib
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import atc_py  # noqa: E402
from bench import compile_speed, fusion_bench  # noqa: E402  (bench/compile_speed.py, this folder)
from bench.numpy_floor import SmallCnnNumpy  # noqa: E402
from om_run.load.loader import load_model  # noqa: E402
from om_run.run.io import random_inputs  # noqa: E402
from om_run.sim.host import Simulation  # noqa: E402
from om_run.sim.host_heap import keep_freed_memory  # noqa: E402

REPEAT = 15
SOC = "Ascend910B1"
ORT_SAMPLES = ["small_cnn", "small_transformer"]
CHAIN_OPS = 2000
CHAIN_LOOPS = 10
ORT_SPIN_SETTLE_S = 0.5


def best_time(fn, repeat=REPEAT) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def settle() -> None:
    """onnxruntime's intra-op threads spin for a while after a run; on this 2-core machine they slowed the next
    measurement by ~60 % (small_cnn om-run 1.5 ms -> 2.4 ms). Measure our side first and let them go idle."""
    time.sleep(ORT_SPIN_SETTLE_S)


def load_om(d: str, name: str, om: bytes):
    p = pathlib.Path(d) / f"{name}.om"
    p.write_bytes(om)
    return load_model(str(p))


def compile_and_run(d: str) -> None:
    """om-run runs the default build (force_fp16: numpy's float16 is software-emulated, ~8 ns per element) and
    an fp32 build (--precision_mode=must_keep_origin_dtype, what onnxruntime computes)."""
    print(f"{'model':<20} {'atc-py ms':>10} {'ort-opt ms':>10} {'ratio':>7} | {'om-run ms':>10} {'fp32 ms':>9} "
          f"{'ort-run ms':>10} {'ratio':>7} {'fp32':>6}")
    for name in ORT_SAMPLES:
        model = ROOT / "models" / f"{name}.onnx"
        compile_s = best_time(lambda: atc_py.build(str(model), {"ge.socVersion": SOC}))
        runs = []
        for precision in ("", "must_keep_origin_dtype"):
            options = {"ge.socVersion": SOC, **({"ge.exec.precision_mode": precision} if precision else {})}
            dm = load_om(d, name + precision, atc_py.build(str(model), options).om)
            inputs = random_inputs(dm, 0)
            sim = Simulation(dm)
            runs.append(best_time(lambda: sim.run(inputs)))
        ort_opt_s = best_time(lambda: compile_speed.ort_offline(model, pathlib.Path(d) / "opt.onnx"))
        sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        feed = {i.name: a for i, a in zip(sess.get_inputs(), inputs)}
        ort_run_s = best_time(lambda: sess.run(None, feed))
        sess = None   # its threads stop with it
        settle()
        print(f"{name:<20} {compile_s * 1e3:>10.2f} {ort_opt_s * 1e3:>10.2f} {compile_s / ort_opt_s:>6.2f}x | "
              f"{runs[0] * 1e3:>10.3f} {runs[1] * 1e3:>9.3f} {ort_run_s * 1e3:>10.3f} {runs[0] / ort_run_s:>6.1f}x "
              f"{runs[1] / ort_run_s:>5.1f}x")
    print("ratios: atc-py or om-run / onnxruntime (lower is better); om-run includes the timing simulation\n")


def numpy_floor(d: str) -> None:
    """small_cnn in hand-written numpy (bench/numpy_floor.py): a floor for any numpy executor on this machine."""
    model = ROOT / "models" / "small_cnn.onnx"
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    floor = SmallCnnNumpy(model)
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    np.testing.assert_allclose(floor.forward(x), sess.run(None, feed)[0], rtol=1e-4, atol=1e-6)
    dm = load_om(d, "floor", atc_py.build(str(model), {"ge.socVersion": SOC,
                                                       "ge.exec.precision_mode": "must_keep_origin_dtype"}).om)
    sim = Simulation(dm)
    om_s, floor_s = best_time(lambda: sim.run([x])), best_time(lambda: floor.forward(x))
    ort_s = best_time(lambda: sess.run(None, feed))
    sess = None
    settle()
    print(f"small_cnn fp32: hand-written numpy {floor_s * 1e3:.3f} ms = {floor_s / ort_s:.1f}x onnxruntime "
          f"({ort_s * 1e3:.3f} ms); om-run {om_s * 1e3:.3f} ms = {om_s / floor_s:.1f}x the numpy floor\n")


def numeric_resnet(d: str) -> None:
    """The same comparison on a real-size CNN (the onnx light ResNet-50, 1x3x224x224): per-kernel Python
    overhead is amortised, what is left is numpy's GEMM and memory traffic against onnxruntime's."""
    model = compile_speed.pruned(compile_speed.LIGHT_RESNET, d)
    runs = []
    for precision in ("", "must_keep_origin_dtype"):
        options = {"ge.socVersion": SOC, **({"ge.exec.precision_mode": precision} if precision else {})}
        dm = load_om(d, "resnet" + precision, atc_py.build(str(model), options).om)
        inputs = random_inputs(dm, 0)
        sim = Simulation(dm)
        with np.errstate(all="ignore"):   # the light model's constant weights overflow fp16 on random inputs
            runs.append(best_time(lambda: sim.run(inputs), 5))
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: inputs[0]}
    ort_s = best_time(lambda: sess.run(None, feed), 5)
    sess = None
    settle()
    print(f"light ResNet-50: om-run {runs[0] * 1e3:.1f} ms (fp32 build {runs[1] * 1e3:.1f} ms), onnxruntime "
          f"{ort_s * 1e3:.1f} ms: {runs[0] / ort_s:.1f}x ({runs[1] / ort_s:.1f}x fp32)\n")


def simulator_throughput(d: str) -> None:
    nodes, cur = [], "x"
    for i in range(CHAIN_OPS):
        nodes.append(helper.make_node(["Relu", "Sigmoid", "Tanh"][i % 3], [cur], [f"t{i}"], name=f"n{i}"))
        cur = f"t{i}"
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 64])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [16, 64])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    # autofuse off: it would make the chain one kernel; this measures the scheduler on a long stream
    options = {"ge.socVersion": SOC, "optimization_switch": "autofuse:off"}
    model = load_om(d, "chain", atc_py.build(m, options).om)
    t0 = time.perf_counter()
    sim = Simulation(model, compute=False)
    _, stats = sim.run(None)  # includes decoding the task list once
    t1 = time.perf_counter()
    for _ in range(CHAIN_LOOPS):
        sim.run(None)
    t2 = time.perf_counter()
    n = stats.tasks
    print(f"simulator, timing only, {n}-task stream: first run (incl. decoding) {n / (t1 - t0):,.0f} "
          f"tasks/s; steady state {CHAIN_LOOPS * n / (t2 - t1):,.0f} tasks/s (target >= 100,000)\n")


def decoder_sink(d: str) -> None:
    print(f"{'decoder_step':<14} {'sink':>4} {'e2e us':>9} {'host us':>9} {'device us':>10} {'syncs':>6} {'tasks':>6}")
    with np.load(ROOT / "models" / "decoder_step.inputs.npz") as z:
        feeds = {k: z[k] for k in z.files}
    for soc in ("Ascend910B1", "Ascend310P3"):
        for sink in ("0", "1"):
            om = atc_py.build(str(ROOT / "models" / "decoder_step.onnx"),
                              {"ge.socVersion": soc, "ge.tiling_schedule_optimize": sink}).om
            model = load_om(d, f"dec{soc}{sink}", om)
            _, s = Simulation(model).run([feeds[io.name] for io in model.inputs])
            print(f"{soc:<14} {sink:>4} {s.e2e_ns / 1e3:>9.1f} {s.host_ns / 1e3:>9.1f} {s.device_ns / 1e3:>10.1f} "
                  f"{s.syncs:>6} {s.tasks:>6}")
    print("simulated time with the runtime profile's assumed defaults (om_run/sim/profile.py)")


def memory_planning() -> None:
    from atc_py.frontend.onnx import convert_onnx
    from atc_py.passes.memory import plan_memory
    from atc_py.passes.streams import assign_streams
    print(f"{'memory plan':<22} {'planned B':>11} {'bound B':>11} {'ratio':>6} {'streams':>7}")
    for name in ("small_cnn", "small_transformer", "inception_block", "decoder_step", "superkernel"):
        for sink in ("0", "1"):
            r = atc_py.build(str(ROOT / "models" / f"{name}.onnx"), {"ge.socVersion": SOC, "ge.tiling_schedule_optimize": sink})
            if r.summary["memory_lower_bound"]:
                print(f"{name + ' sink' + sink:<22} {r.summary['memory_size']:>11} {r.summary['memory_lower_bound']:>11} "
                      f"{r.summary['memory_ratio']:>6} {r.summary['stream_num']:>7}")
    import os

    import onnx as onnx_pkg
    light = os.path.join(os.path.dirname(onnx_pkg.__file__), "backend", "test", "data", "light")
    for f in sorted(os.listdir(light)):
        if f.endswith(".onnx"):
            r = atc_py.build(os.path.join(light, f), {"ge.socVersion": SOC})
            print(f"{f[6:-5]:<22} {r.summary['memory_size']:>11} {r.summary['memory_lower_bound']:>11} "
                  f"{r.summary['memory_ratio']:>6} {r.summary['stream_num']:>7}")
    for kind in ("chain", "branchy"):
        for n in (2500, 5000, 10000):
            nodes, cur = [], "x"
            for i in range(n):
                if kind == "branchy" and i % 4 == 3:   # diamond: two branches of the last block joined
                    nodes.append(helper.make_node("Add", [f"t{i - 1}", f"t{i - 3}"], [f"t{i}"], name=f"n{i}"))
                else:
                    src = f"t{i - 2}" if kind == "branchy" and i % 4 == 2 else cur
                    nodes.append(helper.make_node(["Relu", "Sigmoid", "Tanh"][i % 3], [src], [f"t{i}"], name=f"n{i}"))
                cur = f"t{i}"
            g = helper.make_graph(nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 64])],
                                  [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [16, 64])])
            graph, _ = convert_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
            t0 = time.perf_counter()
            streams = assign_streams(graph)
            plan = plan_memory(graph, {}, streams)
            dt = time.perf_counter() - t0
            print(f"planning a {n}-node {kind}: {dt * 1e3:.0f} ms ({dt / n * 1e6:.1f} us/node), "
                  f"{streams.num_streams} streams, ratio {plan.memory_size / max(plan.lower_bound, 1):.3f}")
    print()


def main() -> None:
    keep_freed_memory()     # the host heap as om-run keeps it (om_run/sim/host_heap.py)
    with tempfile.TemporaryDirectory() as d:
        compile_and_run(d)
        numpy_floor(d)
        numeric_resnet(d)
        simulator_throughput(d)
        memory_planning()
        decoder_sink(d)
        fusion_bench.run()
        compile_speed.run(pathlib.Path(d))


if __name__ == "__main__":
    main()
