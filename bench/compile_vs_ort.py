"""atc-py compile against onnxruntime's offline optimisation, whole process against whole process.
Each side is a fresh Python process started the way a user would: `atc-py --model ... --output ...`
(default force_fp16 build) and a script that creates an InferenceSession with ORT_ENABLE_EXTENDED and
`optimized_model_filepath` (the optimised model saved). Models: random-weight copies of the onnx `light`
models (as shipped, every weight is one ConstantOfShape value, which CSE merges: it flatters compile time).
Also the >= 100 MB transformer of bench/compile_speed.py against copying its file (shutil.copyfile in a
process of its own). Min of REPEAT runs each, back to back. `measure()` returns the rows; printed as ratios,
never asserted.
"""
from __future__ import annotations

import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

REPEAT = 5
TARGET_ORT, TARGET_COPY = 1.0, 2.0
NAMES = ("resnet50", "inception_v1", "squeezenet", "densenet121", "shufflenet")
ROOT = pathlib.Path(__file__).resolve().parents[1]

_ORT = """import sys, onnxruntime as ort
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
so.optimized_model_filepath = sys.argv[2]
so.add_session_config_entry("session.intra_op.allow_spinning", "0")
ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
"""
_COPY = "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])"


def light_model_files(d: pathlib.Path, names=NAMES) -> dict[str, pathlib.Path]:
    """Random-weight copies written into d (bench/light_models.py)."""
    from bench.light_models import write_all
    return write_all(d, names)


def _atc_cmd(model: pathlib.Path, out: pathlib.Path) -> list[str]:
    return [sys.executable, "-m", "atc_py", f"--model={model}", "--framework=5", f"--output={out.with_suffix('')}",
            "--soc_version=Ascend910B1"]


def _timed_cpu(cmd: list[str], out: pathlib.Path) -> tuple[float, float]:
    """(wall, user + system CPU) seconds of one process writing `out` (removed first)."""
    out.unlink(missing_ok=True)
    # as installed: bytecode cached (pip compiles site-packages; a sandbox's PYTHONDONTWRITEBYTECODE would make
    # atc-py alone recompile its ~200 modules, 0.4 s, on every run)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not out.exists():
        raise RuntimeError(f"{cmd} wrote no {out}")
    return dt, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def _pair(model: pathlib.Path, d: pathlib.Path, repeat: int, ref_cmd=None) -> tuple[tuple, tuple]:
    """((wall, cpu) of atc-py, (wall, cpu) of the reference), each the minimum over `repeat` runs, the two
    alternating so that both see the same machine load."""
    om, ref_out = d / "m.om", d / "ref.out"
    ref_cmd = ref_cmd or [sys.executable, "-c", _ORT, str(model), str(ref_out)]
    a, r = [], []
    for _ in range(repeat):
        a.append(_timed_cpu(_atc_cmd(model, om), om))
        r.append(_timed_cpu(ref_cmd, ref_out))
    return tuple(min(x) for x in zip(*a)), tuple(min(x) for x in zip(*r))


def measure(names=NAMES, transformer: bool = True, repeat: int = REPEAT) -> list[dict]:
    """Rows {model, atc_s, ref_s, ref, ratio, target, atc_cpu_s, ref_cpu_s}: ref is 'ort-opt' (onnxruntime
    ORT_ENABLE_EXTENDED + save) for the light models and 'copy' (copying the model file) for the transformer;
    wall seconds (the ratio) and CPU seconds, minimum over `repeat` alternating runs."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp)
        jobs = [(f"light {n} (random weights)", p, None, "ort-opt", TARGET_ORT)
                for n, p in light_model_files(d, names).items()]
        if transformer:
            from bench.compile_speed import transformer as make_transformer
            big = d / "transformer.onnx"
            nbytes = make_transformer(big)
            jobs.append((f"transformer {nbytes / 1e6:.0f} MB", big, [sys.executable, "-c", _COPY, str(big),
                                                                      str(d / "ref.out")], "copy", TARGET_COPY))
        for label, path, ref_cmd, ref, target in jobs:
            (atc, atc_cpu), (other, other_cpu) = _pair(path, d, repeat, ref_cmd)
            rows.append({"model": label, "atc_s": atc, "ref_s": other, "ref": ref, "ratio": atc / other,
                         "target": target, "atc_cpu_s": atc_cpu, "ref_cpu_s": other_cpu})
    return rows


def main(argv: list[str]) -> None:
    names = tuple(a for a in argv if a != "--no-transformer") or NAMES
    rows = measure(names, transformer="--no-transformer" not in argv)
    print(f"{'compile (whole process)':<34} {'atc-py s':>8} {'ref':>8} {'ref s':>7} {'ratio':>6} {'target':>6} | "
          f"{'cpu s':>6} {'ref cpu':>7} {'ratio':>6}")
    for r in rows:
        print(f"{r['model']:<34} {r['atc_s']:>8.2f} {r['ref']:>8} {r['ref_s']:>7.2f} {r['ratio']:>6.2f} "
              f"{r['target']:>6.1f} | {r['atc_cpu_s']:>6.2f} {r['ref_cpu_s']:>7.2f} "
              f"{r['atc_cpu_s'] / max(r['ref_cpu_s'], 1e-9):>6.2f}")
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}; min of {REPEAT} alternating processes each")


if __name__ == "__main__":
    main(sys.argv[1:])
