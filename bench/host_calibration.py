"""The per-op host dispatch of vllm-ascend's eager steps, from its own v0.7.3 release benchmark (a bench, not a
test; `python -m bench.host_calibration`).

om-run serve prices an eager vLLM step from the compiled decoder's kernels and the host executor's per-op runtime
costs, plus the framework's dispatch of each op (om_run/serve/host_costs.py, HostSoftware.dispatch_ns). That
dispatch depends on the host's CPU and software, and no per-op figure of an Ascend host was found; vllm-ascend's
v0.7.3 release benchmark (github.com/vllm-project/vllm-ascend/issues/776, Atlas 800I A2, the v0.7.3 container image)
publishes whole runs instead. This bench sets the dispatch from them:

* vllm-ascend alone (the stock host, TASK_QUEUE_ENABLE=1): the two offline latency rows - `benchmark_latency.py`,
  8 prompts of 32 tokens, 128 output tokens, dummy weights, max_model_len 16384: 4274.96 ms (Qwen2.5-7B-Instruct) and
  4128.36 ms (Qwen2.5-VL-7B-Instruct, whose language model has the same dimensions; the prompts are text). The run is
  host-bound, so its time is linear in the dispatch: two simulations give the line, each row its dispatch, the bench
  their mean.
* vllm-ascend with MindIE Turbo: the same release's online rows with MindIE Turbo installed (ShareGPT, 200 prompts,
  Poisson at 1 and 4 requests/s; median TPOT 23.351 / 30.3927 ms, median ITL 22.5373 / 26.7608 ms), each solved the
  same way. ShareGPT itself is not here: the workload is vllm's random dataset at ShareGPT's mean lengths in that
  release's throughput row (88257 tokens over 200 requests: 220 in, 220 out, range ratio 0.9) - the medians of a
  host-bound step depend on the batch sizes, not on the lengths' exact spread.
* Held out: the stock host's online rows of the same release (two published runs of the same table) are set against
  the calibrated simulation; the tuning guide's groups A and H stay for `make serving-fidelity`.

The SoC is Ascend910B4 (an Atlas 800I A2's NPU); the calibrated values are written into host_costs.py by hand."""
from __future__ import annotations

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.serving_fidelity import QWEN, run  # noqa: E402

SOC = "Ascend910B4"
LATENCY_ROWS = {"Qwen2.5-7B-Instruct": 4274.96, "Qwen2.5-VL-7B-Instruct (text)": 4128.36}
TURBO_ROWS = [(1, "median_tpot_ms", 23.351), (1, "median_itl_ms", 22.5373),
              (4, "median_tpot_ms", 30.3927), (4, "median_itl_ms", 26.7608)]
# the stock host's online rows, two published runs: (rate, metric, run 1, run 2)
STOCK_ONLINE = [(1, "median_ttft_ms", 97.8581, 94.1281), (1, "median_tpot_ms", 36.5128, 35.2788),
                (1, "median_itl_ms", 35.3481, 34.2365), (4, "median_ttft_ms", 104.405, 99.4776),
                (4, "median_tpot_ms", 48.9373, 47.0655), (4, "median_itl_ms", 41.9421, 40.3403)]
PROBES = (20.0, 50.0)


def latency_ms(dispatch_us: float, *extra: str) -> float:
    r = run(QWEN, "--soc_version", SOC, "--scheduler-version", "v0", "--max-model-len", "16384",
            "--dataset-name", "random", "--random-input-len", "32", "--random-output-len", "128", "--num-prompts", "8",
            "--request-rate", "inf", "--host-dispatch-us", str(dispatch_us), *extra)
    return r["duration"] * 1000


def sharegpt_like(rate: int, dispatch_us: float, *extra: str) -> dict:
    return run(QWEN, "--soc_version", SOC, "--scheduler-version", "v0", "--dataset-name", "random",
               "--random-input-len", "220", "--random-output-len", "220", "--random-range-ratio", "0.9",
               "--num-prompts", "200", "--request-rate", str(rate), "--host-dispatch-us", str(dispatch_us), *extra)


def solve(probes: tuple[float, float], values: tuple[float, float], target: float) -> float:
    """The dispatch at which the line through (probe, value) reaches target."""
    (x0, x1), (y0, y1) = probes, values
    return x0 + (target - y0) * (x1 - x0) / (y1 - y0)


def main() -> None:
    os.environ.setdefault("OM_RUN_SERVE_CACHE", str(ROOT / "out" / "serve-cache"))
    os.environ["TASK_QUEUE_ENABLE"] = "1"
    lat = tuple(latency_ms(d) for d in PROBES)
    stock = [solve(PROBES, lat, ms) for ms in LATENCY_ROWS.values()]
    for (name, ms), d in zip(LATENCY_ROWS.items(), stock):
        print(f"stock host, latency row {name}: {ms} ms -> {d:.1f} us an op (simulated {lat[0]:.0f} / {lat[1]:.0f} "
              f"ms at {PROBES[0]:g} / {PROBES[1]:g} us)")
    d_stock = sum(stock) / len(stock)
    print(f"stock host: {d_stock:.1f} us an op")

    runs = {(rate, d): sharegpt_like(rate, d) for rate in (1, 4) for d in PROBES}
    turbo = []
    for rate, key, pub in TURBO_ROWS:
        d = solve(PROBES, (runs[rate, PROBES[0]][key], runs[rate, PROBES[1]][key]), pub)
        turbo.append(d)
        print(f"MindIE Turbo host, {rate} req/s {key} {pub} ms -> {d:.1f} us an op")
    print(f"MindIE Turbo host: {sum(turbo) / len(turbo):.1f} us an op")

    print(f"\nheld out: the stock host's online rows at {d_stock:.1f} us an op")
    print("| rate | metric | simulated | published (two runs) | simulated / published |")
    print("|---|---|---|---|---|")
    checks = {rate: sharegpt_like(rate, round(d_stock, 1)) for rate in (1, 4)}
    for rate, key, a, b in STOCK_ONLINE:
        sim = checks[rate][key]
        print(f"| {rate} | {key} | {sim:.2f} | {a} / {b} | {sim / ((a + b) / 2):.2f} |")


if __name__ == "__main__":
    main()
