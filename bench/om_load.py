"""What om-run costs to load and run a large .om: wall time and peak memory of whole om-run processes.

A chain of MatMuls with large weights (by default 20 x [8192, 8192] fp16: a 2.7 GB .om, an LLM's layers in
shape) is written as ONNX with external data, tensor by tensor (never all weights in memory), and compiled
by atc-py in a subprocess (with must_keep_origin_dtype: the weights stay fp16, so the cube's fp16 weights are
widened at run time). Then, each in a fresh subprocess whose own peak RSS is read back (os.wait4):

  * copying the file (shutil.copyfile), the yardstick of a load;
  * `om-run --no-compute` (timing only; needs no weight): target RSS <= 1 GiB + 0.1 x the .om, wall
    <= 2 x the copy;
  * `om-run` (numerics, random inputs): target RSS <= 1 GiB + 1.2 x the .om.

Nothing is asserted; not part of `make test`. `python -m bench.om_load [--layers N] [--hidden H] [--keep DIR]
[--baseline ROOT]`: --baseline runs the same om-run commands from another checkout (e.g. before a change)
for comparison; --keep reuses / keeps the model in DIR.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
GIB = 1 << 30


def write_onnx(path: pathlib.Path, layers: int, hidden: int, seed: int = 0) -> int:
    """x (fp32 [1, hidden]) -> Cast fp16 -> `layers` MatMuls with [hidden, hidden] fp16 weights (uniform in
    +-sqrt(3 / hidden), std 1/sqrt(hidden): activations keep their scale; drawn from a table of 4096 fp16 values,
    numpy's fp32 -> fp16 conversion being slow) -> Cast fp32. Weights go to path.data, one at a time; returns
    their bytes."""
    import onnx
    from onnx import TensorProto, helper
    data = path.with_suffix(".data")
    rng = np.random.default_rng(seed)
    table = np.linspace(-(3 / hidden) ** 0.5, (3 / hidden) ** 0.5, 4096).astype(np.float16)
    inits, nodes, offset = [], [helper.make_node("Cast", ["x"], ["h0"], to=TensorProto.FLOAT16)], 0
    with open(data, "wb") as f:
        for i in range(layers):
            w = table[rng.integers(0, len(table), (hidden, hidden), dtype=np.uint16)]
            f.write(w.tobytes())
            t = TensorProto(name=f"w{i}", dims=[hidden, hidden], data_type=TensorProto.FLOAT16,
                            data_location=TensorProto.EXTERNAL)
            for k, v in (("location", data.name), ("offset", str(offset)), ("length", str(w.nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
            inits.append(t)
            offset += w.nbytes
            nodes.append(helper.make_node("MatMul", [f"h{i}", f"w{i}"], [f"h{i + 1}"]))
    nodes.append(helper.make_node("Cast", [f"h{layers}"], ["y"], to=TensorProto.FLOAT))
    g = helper.make_graph(nodes, "om_load", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, hidden])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, hidden])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))   # the initializers are references to path.data: the .onnx itself is small
    return offset


_TIMER = """
import resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - t0
sys.stderr.buffer.write(p.stderr[-400:])
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)
"""


def measured(cmd: list[str], root: pathlib.Path = ROOT) -> tuple[float, int, int, str]:
    """(wall s, peak RSS bytes, exit code, stderr tail) of one process, run (from `root`, with it on PYTHONPATH)
    by a small timer process that reads its peak RSS (getrusage(RUSAGE_CHILDREN).ru_maxrss) — a child forked
    from this process would count this process's pages too, until it execs."""
    p = subprocess.run([sys.executable, "-c", _TIMER, *cmd], capture_output=True, cwd=root,
                       env={**os.environ, "PYTHONPATH": str(root)})
    wall, rss, code = p.stdout.split()
    return float(wall), int(rss) * 1024, int(code), p.stderr.decode(errors="replace")


def copy_cmd(src: pathlib.Path, dst: pathlib.Path) -> list[str]:
    return [sys.executable, "-c", f"import shutil; shutil.copyfile({str(src)!r}, {str(dst)!r})"]


def om_run_cmd(om: pathlib.Path, *flags: str) -> list[str]:
    return [sys.executable, "-m", "om_run", str(om), *flags]


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=20)
    ap.add_argument("--hidden", type=int, default=8192)
    ap.add_argument("--keep", help="folder for the model (reused when its .om is there; kept afterwards)")
    ap.add_argument("--baseline", help="another checkout whose om-run runs the same commands, for comparison")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each measurement (the best is shown)")
    args = ap.parse_args(argv)
    tmp = None
    if args.keep:
        d = pathlib.Path(args.keep)
        d.mkdir(parents=True, exist_ok=True)
    else:
        d = pathlib.Path(tmp := tempfile.mkdtemp(prefix="om_load_"))
    try:
        om = d / f"chain_{args.layers}x{args.hidden}.om"
        if not om.exists():
            t0 = time.perf_counter()
            nbytes = write_onnx(d / "chain.onnx", args.layers, args.hidden)
            print(f"ONNX: {args.layers} MatMul weights [{args.hidden}, {args.hidden}] fp16, {_gb(nbytes)} "
                  f"(external data), written in {time.perf_counter() - t0:.1f} s")
            wall, rss, code, err = measured([sys.executable, "-m", "atc_py", f"--model={d / 'chain.onnx'}",
                                             "--framework=5", f"--output={om.with_suffix('')}",
                                             "--soc_version=Ascend910B1", "--precision_mode=must_keep_origin_dtype"])
            if code:
                sys.exit(f"atc-py failed ({code}): {err}")
            print(f"atc-py compile: {wall:.1f} s, peak RSS {_gb(rss)}")
            for p in (d / "chain.onnx", d / "chain.data"):
                p.unlink()
        size = om.stat().st_size
        print(f"model: {om} ({_gb(size)})")
        copy = d / "copy.om"
        copy_s = []
        for _ in range(args.repeat):
            copy_s.append(measured(copy_cmd(om, copy))[0])
            copy.unlink()
        copy_best = min(copy_s)
        print(f"copying the file: {copy_best:.2f} s (best of {args.repeat})")
        roots = [("this checkout", ROOT)] + ([("baseline", pathlib.Path(args.baseline))] if args.baseline else [])
        for label, root in roots:
            for what, flags, rss_target, wall_target in (
                    ("--no-compute", ("--no-compute",), GIB + 0.1 * size, 2 * copy_best),
                    ("numeric", (), GIB + 1.2 * size, None)):
                runs = [measured(om_run_cmd(om, *flags), root) for _ in range(args.repeat)]
                bad = [r for r in runs if r[2]]
                if bad:
                    print(f"  {label} om-run {what}: exit {bad[0][2]}: {bad[0][3]}")
                    continue
                wall, rss = min(r[0] for r in runs), max(r[1] for r in runs)
                line = (f"  {label} om-run {what}: wall {wall:.2f} s, peak RSS {_gb(rss)} = {rss / size:.2f} x the .om"
                        f" (target RSS <= {_gb(rss_target)}: {'met' if rss <= rss_target else 'MISSED'}")
                if wall_target is not None:
                    line += (f"; wall {wall / copy_best:.2f} x the copy, target <= 2x: "
                             f"{'met' if wall <= wall_target else 'MISSED'}")
                print(line + ")")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
