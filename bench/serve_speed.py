"""How long om-run serve takes for a 7B model on this machine: the step table built from an empty cache, then the
200-request, 128-output-token benchmark run from the cached table; wall time and peak RSS of each (the issue's
bounds: the table in 10 minutes on 2 cores, the run in 60 s within 2 GB).

    python -m bench.serve_speed [--model models/serve/qwen2.5-7b-instruct] [--engine-args ...]"""
from __future__ import annotations

import argparse
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUN = ["--load-format", "dummy", "--soc_version", "Ascend910B1", "--dataset-name", "random", "--random-input-len",
       "200", "--random-output-len", "128", "--num-prompts", "200", "--request-rate", "1", "--no-progress"]


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one om-run serve process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "om_run", "serve", *argv], check=True, env=env, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(ROOT / "models" / "serve" / "qwen2.5-7b-instruct"))
    args, extra = ap.parse_known_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "OM_RUN_SERVE_CACHE": cache}
        build_wall, build_rss = timed([args.model, *RUN, *extra], env)
        run_wall, run_rss = timed([args.model, *RUN, *extra], env)
    print(f"{pathlib.Path(args.model).name}: empty cache (compile + step table + run) {build_wall:.1f} s; cached "
          f"table, 200 requests x 128 tokens {run_wall:.1f} s; peak RSS {run_rss:.0f} MiB ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
