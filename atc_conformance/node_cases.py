"""ONNX's node conformance cases (onnx.backend.test.case.node), written in memory from `collect_testcases`
(the wheel ships no node data), run through AtcBackend or onnxruntime and compared as onnx's backend test
runner compares (rtol/atol of the case, strings and sequences exactly).

`python -m atc_conformance.node_cases [--ort] [--only SUBSTR] [--jobs N]` prints the pass rate and every
failing case with its reason."""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass
class NodeResult:
    name: str
    ok: bool
    reason: str = ""


@lru_cache(maxsize=1)
def node_cases() -> dict:
    """name -> TestCase (the onnx generator writes its models and data sets in memory)."""
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return {c.name: c for c in collect_testcases()}


def _compare(got, want, rtol: float, atol: float) -> str | None:
    """None when equal as onnx's runner judges, else why not."""
    if isinstance(want, list):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return f"sequence of {len(want)} expected"
        for g, w in zip(got, want):
            why = _compare(g, w, rtol, atol)
            if why:
                return why
        return None
    if want is None:
        return None if got is None else "an empty optional expected"
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return f"shape {list(g.shape)}, expected {list(w.shape)}"
    if w.dtype == object or w.dtype.kind in "USb":
        return None if np.array_equal(g, w) else "values differ"
    if g.dtype != w.dtype and not (g.dtype.kind == w.dtype.kind):
        return f"dtype {g.dtype}, expected {w.dtype}"
    try:
        np.testing.assert_allclose(g.astype(np.float64) if g.dtype.kind == "V" else g,
                                   w.astype(np.float64) if w.dtype.kind == "V" else w, rtol=rtol, atol=atol)
    except AssertionError as exc:
        lines = str(exc).strip().splitlines()
        return "numbers differ: " + (lines[2][:120] if len(lines) > 2 else str(exc)[:120])
    except (TypeError, ValueError) as exc:
        return f"cannot compare: {exc}"[:160]
    return None


def as_value(x):
    """A data-set entry as the runner sees it: onnx's generator keeps some as protos (exotic dtypes,
    sequences, optionals); the test runner reads them back with numpy_helper."""
    import onnx
    from onnx import numpy_helper
    if isinstance(x, onnx.TensorProto):
        return numpy_helper.to_array(x)
    if isinstance(x, onnx.SequenceProto):
        return [as_value(t) for t in numpy_helper.to_list(x)]
    if isinstance(x, onnx.OptionalProto):
        return as_value(numpy_helper.to_optional(x))
    if isinstance(x, (list, tuple)):
        return [as_value(t) for t in x]
    return x


def run_one(name: str, engine: str = "atc", soc: str = "Ascend910B1") -> NodeResult:
    case = node_cases()[name]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if engine == "ort":
                import onnxruntime as ort
                so = ort.SessionOptions()
                so.intra_op_num_threads = 1
                so.log_severity_level = 4
                sess = ort.InferenceSession(case.model.SerializeToString(), so, providers=["CPUExecutionProvider"])
                names = [i.name for i in sess.get_inputs()]
                runner = lambda xs: sess.run(None, dict(zip(names, xs)))  # noqa: E731
            else:
                from .backend import AtcBackend
                rep = AtcBackend.prepare(case.model, soc=soc)
                runner = rep.run
            for inputs, outputs in case.data_sets:
                inputs, outputs = [as_value(x) for x in inputs], [as_value(x) for x in outputs]
                got = runner(list(inputs))
                if len(got) != len(outputs):
                    return NodeResult(name, False, f"{len(got)} outputs, expected {len(outputs)}")
                for k, (g, w) in enumerate(zip(got, outputs)):
                    why = _compare(g, w, case.rtol, case.atol)
                    if why:
                        return NodeResult(name, False, f"output {k}: {why}")
        return NodeResult(name, True)
    except Exception as exc:  # noqa: BLE001  -- a report, one line per failing case
        return NodeResult(name, False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}")


def _run_chunk(args) -> list[NodeResult]:
    names, engine = args
    return [run_one(n, engine) for n in names]


def run_all(names: list[str], engine: str = "atc", jobs: int = 1) -> list[NodeResult]:
    if jobs <= 1:
        return [run_one(n, engine) for n in names]
    chunks = [(names[k::jobs], engine) for k in range(jobs)]
    # forkserver: a fork of a process with threads (a test runner's, a simulation's) can inherit a held lock
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("forkserver")) as pool:
        parts = list(pool.map(_run_chunk, chunks))
    by_name = {r.name: r for part in parts for r in part}
    return [by_name[n] for n in names]


EXCLUSIONS = "tests/conformance/node_exclusions.txt"


def read_exclusions(path: str) -> dict[str, str]:
    """`name  # reason` per line (blank lines and lines starting with '#' are comments)."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition("#")
            out[name.strip()] = reason.strip()
    return out


def reason_of(r: NodeResult) -> str:
    """A failure as an exclusion reason: the unsupported op, the missing dtype, or the first words of the error."""
    import re
    m = re.search(r"following ops: (\S+) \(domain ([^,]+), opset (\d+), ([^)]*)\)", r.reason)
    if m:
        return f"op {m.group(1)} ({m.group(2)}) is not supported ({m.group(4)})"
    m = re.search(r"dtype (\S+) is not supported by its kernel", r.reason)
    if m:
        return f"dtype {m.group(1)} is not supported by the kernel"
    return r.reason[:140]


def write_exclusions(path: str, results: list[NodeResult]) -> None:
    lines = ["# ONNX node conformance cases atc-py + om-run do not pass yet, each with its reason.",
             "# tests/models/test_node_conformance.py runs every other case; `make conformance` runs them all.",
             "# Regenerate with: python -m atc_conformance.node_cases --write-exclusions " + path]
    lines += [f"{r.name}  # {reason_of(r)}" for r in results if not r.ok]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m atc_conformance.node_cases")
    ap.add_argument("--ort", action="store_true", help="run onnxruntime instead of atc-py + om-run")
    ap.add_argument("--only", default="", help="cases whose name contains this")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--quiet", action="store_true", help="totals only")
    ap.add_argument("--write-exclusions", metavar="FILE", help="write the failing cases with their reasons")
    a = ap.parse_args(argv)
    names = sorted(n for n in node_cases() if a.only in n)
    results = run_all(names, "ort" if a.ort else "atc", a.jobs)
    ok = sum(r.ok for r in results)
    print(f"node cases: {ok}/{len(results)} pass ({100.0 * ok / max(len(results), 1):.1f}%)"
          f" with {'onnxruntime' if a.ort else 'atc-py + om-run'}")
    if not a.quiet:
        for r in results:
            if not r.ok:
                print(f"  FAIL {r.name}: {r.reason}")
    if a.write_exclusions:
        write_exclusions(a.write_exclusions, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
