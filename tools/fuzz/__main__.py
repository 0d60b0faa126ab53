"""python -m tools.fuzz [--om N] [--models N] [--flags] [--sweep] [--work-cases] [--seed S] [--work DIR] [--json FILE]

Runs a campaign (campaign.py) and prints its totals; exits 1 if any case ended in a traceback, a hang, a
blow-up, a crash, an uncoded error, E19999, a Python exception passed on inside a coded line (a leak), or wrote
where it must not."""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):   # one BLAS thread: forks stay safe
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from .campaign import Campaign, compile_seeds, warm_up  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.fuzz")
    ap.add_argument("--om", type=int, default=200, help="mutated .om files")
    ap.add_argument("--models", type=int, default=100, help="malformed ONNX/TF models")
    ap.add_argument("--flags", action="store_true", help="every bad flag value of both tools")
    ap.add_argument("--sweep", action="store_true", help="hostile sweep files and planted output folders")
    ap.add_argument("--work-cases", action="store_true",
                    help="models and .om files asking for far more work than they hold; python -m beside planted modules")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per case")
    ap.add_argument("--mem", type=int, default=3072, help="MiB of address space per case beyond the parent's")
    ap.add_argument("--work", help="working folder (default: a temporary one, removed at the end)")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--keep", type=int, default=30, help="failing cases kept under WORK/failures")
    a = ap.parse_args(argv)
    work = pathlib.Path(a.work) if a.work else pathlib.Path(tempfile.mkdtemp(prefix="atc_fuzz_"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    warm_up()
    camp = Campaign(work, a.seed, a.timeout, a.mem << 20, a.keep)
    seeds = compile_seeds(work) if a.om or a.flags or a.sweep else {}
    camp.om_cases(a.om, seeds)
    camp.model_cases(a.models)
    if a.flags:
        camp.flag_cases(seeds)
    if a.sweep:
        camp.sweep_cases(seeds)
    if a.work_cases:
        camp.work_cases()
    s = camp.summary()
    s["seconds"] = round(time.monotonic() - t0, 1)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(s, indent=1) + "\n")
    for cat, kinds in s["by_category"].items():
        print(f"{cat:6} " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print(f"cases {s['cases']}, bad {s['bad']}, slowest case {s['slowest_s']} s, total {s['seconds']} s")
    for f in s["failures"][:20]:
        tail = f["output"].strip().splitlines()[-3:] if f["output"] else []
        print(f"  BAD {f['category']}#{f['index']} {f['kind']} {f['code']} {f['problems']} :: {f['what'][:120]}")
        for line in tail:
            print(f"      {line[:200]}")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if s["bad"] else 0


if __name__ == "__main__":
    sys.exit(main())
