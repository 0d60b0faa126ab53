"""Automatic fusion (autofuse) on the sample transformer and a GPT-style block: tasks and simulated time with
autofuse on and off, next to the former FusedElementwise pass (recorded in fused_elementwise_baseline.json
before it was removed: it can no longer be built). Simulated time, not wall time; nothing is asserted.

    python bench/fusion_bench.py
"""
from __future__ import annotations

import json
import pathlib
import sys
import tempfile

import numpy as np
import onnx

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import atc_py  # noqa: E402
from bench.gpt_block import gpt_block  # noqa: E402
from om_run.load.loader import load_model  # noqa: E402
from om_run.run.io import random_inputs  # noqa: E402
from om_run.sim.host import Simulation  # noqa: E402

SOC = "Ascend910B1"
BASELINE = pathlib.Path(__file__).resolve().parent / "fused_elementwise_baseline.json"
PRECISIONS = (("force_fp16", ""), ("must_keep_origin_dtype", "must_keep_origin_dtype"))


def models() -> dict[str, onnx.ModelProto]:
    return {"small_transformer": onnx.load(str(ROOT / "models" / "small_transformer.onnx")), "gpt_block": gpt_block()}


def simulate(d: str, m, precision: str, switch: str):
    options = {"ge.socVersion": SOC, "optimization_switch": switch}
    if precision:
        options["ge.exec.precision_mode"] = precision
    r = atc_py.build(m, options)
    p = pathlib.Path(d) / "m.om"
    p.write_bytes(r.om)
    dm = load_model(str(p))
    outs, s = Simulation(dm).run(random_inputs(dm, 0))
    return r, outs, s


def run() -> None:
    base = json.loads(BASELINE.read_text())["runs"]
    print(f"automatic fusion, {SOC}, simulated (tasks / device us / end-to-end us):")
    print(f"{'model':<18} {'precision':<10} {'unfused':>22} {'FusedElementwise*':>22} {'autofuse':>22} "
          f"{'device vs unfused':>18} {'same numbers':>13}")
    with tempfile.TemporaryDirectory() as d:
        for name, m in models().items():
            for label, precision in PRECISIONS:
                _, ref, off = simulate(d, m, precision, "autofuse:off")
                r, got, on = simulate(d, m, precision, "")
                fe, fe_off = base[f"{name}/{label}/fused_elementwise"], base[f"{name}/{label}/unfused"]
                same = all(np.array_equal(a, b) for a, b in zip(got, ref))

                def cell(t, dev, e2e):
                    return f"{t:>4} / {dev / 1e3:6.1f} / {e2e / 1e3:6.1f}"
                print(f"{name:<18} {label[:10]:<10} {cell(off.tasks, off.device_ns, off.e2e_ns):>22} "
                      f"{cell(fe['tasks'], fe['device_ns'], fe['e2e_ns']):>22} "
                      f"{cell(on.tasks, on.device_ns, on.e2e_ns):>22} "
                      f"{on.device_ns / off.device_ns:>7.2f}x (FE {fe['device_ns'] / fe_off['device_ns']:.2f}x) "
                      f"{'bit-equal' if same else 'NO':>13}")
                print(f"{'':<29} autofuse: {r.summary['autofused_ops']} ops in {r.summary['ascbackend_nodes']} "
                      f"AscBackend + {r.summary['fused_ascbackend_nodes']} FusedAscBackend")
    print("* FusedElementwise: recorded at commit 1634797 (its own cost model); the ratio in brackets is against the "
          "unfused build of that commit\n")


if __name__ == "__main__":
    run()
