"""Run the onnx package's backend test-data suites through AtcBackend: one result per case.

`python -m atc_conformance.suites [suite ...]` prints per-suite pass counts and every failure."""
from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
SUITES = ("pytorch-converted", "pytorch-operator", "simple")
RTOL, ATOL = 1e-3, 1e-7   # onnx backend test runner defaults


@dataclass
class CaseResult:
    suite: str
    name: str
    ok: bool
    reason: str = ""


def cases(suite: str) -> list[str]:
    return sorted(os.listdir(os.path.join(DATA, suite)))


def _load_pb(path: str, type_proto):
    """A test-data .pb as a numpy value, read as the graph declares it (tensor, sequence or optional)."""
    if type_proto is not None and type_proto.HasField("sequence_type"):
        seq = onnx.SequenceProto()
        seq.ParseFromString(open(path, "rb").read())
        return [numpy_helper.to_array(t) for t in seq.tensor_values]
    return numpy_helper.to_array(onnx.load_tensor(path))


def run_case(suite: str, name: str, soc: str = "Ascend910B1") -> CaseResult:
    from .backend import AtcBackend
    d = os.path.join(DATA, suite, name)
    try:
        model = onnx.load(os.path.join(d, "model.onnx"))
        inits = {i.name for i in model.graph.initializer}
        ins = [i for i in model.graph.input if i.name not in inits]
        rep = AtcBackend.prepare(model, soc=soc)
        for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
            xs = [_load_pb(os.path.join(ds, f"input_{k}.pb"), ins[k].type) for k in range(len(ins))]
            want = [_load_pb(os.path.join(ds, f"output_{k}.pb"), o.type) for k, o in enumerate(model.graph.output)]
            got = rep.run(xs)
            if len(got) != len(want):
                return CaseResult(suite, name, False, f"{len(got)} outputs, expected {len(want)}")
            for k, (g, w) in enumerate(zip(got, want)):
                g, w = np.asarray(g), np.asarray(w)
                if g.shape != w.shape:
                    return CaseResult(suite, name, False, f"output {k} shape {g.shape}, expected {w.shape}")
                if w.dtype == object:
                    if not np.array_equal(g, w):
                        return CaseResult(suite, name, False, f"output {k} differs")
                    continue
                np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
        return CaseResult(suite, name, True)
    except AssertionError as exc:
        return CaseResult(suite, name, False, "numbers differ: " + str(exc).strip().splitlines()[2][:120]
                          if len(str(exc).strip().splitlines()) > 2 else str(exc)[:160])
    except Exception as exc:  # noqa: BLE001  -- a report, one line per failing case
        return CaseResult(suite, name, False, f"{type(exc).__name__}: {str(exc)[:300]}")


def main(argv: list[str]) -> int:
    failed = 0
    for suite in argv or SUITES:
        results = [run_case(suite, c) for c in cases(suite)]
        ok = sum(r.ok for r in results)
        print(f"{suite}: {ok}/{len(results)} ({100.0 * ok / len(results):.1f}%)")
        for r in results:
            if not r.ok:
                print(f"  FAIL {r.name}: {r.reason}")
        failed += len(results) - ok
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
