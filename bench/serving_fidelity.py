"""Simulated LLM serving against published Ascend figures (`make serving-fidelity`; a bench, not a timed test).

    python -m bench.serving_fidelity [--docs] [--quick]

* vllm-ascend v0.7.3 on one 910B-class NPU (Ascend910B1), Qwen2.5-7B-Instruct dimensions with dummy weights, TP 1,
  `--dataset-name random --random-input-len 200 --random-output-len 128 --num-prompts 200 --request-rate 1`:
  the "Optimization and Tuning" guide's chart (docs.vllm.ai/projects/ascend/en/v0.7.3.post1/developer_guide/
  performance/optimization_and_tuning.html, vllm-ascend PR #878): group A (vllm-ascend alone, eager V0) mean TTFT
  86.58 ms / TPOT 32.57 ms; group H (the same eager engine with MindIE Turbo, a BiSheng-built Python / torch /
  torch_npu, tcmalloc and TASK_QUEUE_ENABLE=2 on its host) 49.95 / 16.96 ms. om-run serve has one set of host
  parameters (none fitted to either row), so both rows are set against the same simulation.
* LLaMA2-7B at batch 1 on one Ascend310P3 and one Ascend910B1: the simulated TPOT next to the weight-streaming
  floor (weight bytes / the SoC's DRAM bandwidth), a sanity line.
Writes the table to docs/serving-fidelity.md with --docs (between its markers)."""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from om_run.serve.command import parse_flags  # noqa: E402
from om_run.serve.hf_config import read_config  # noqa: E402

QWEN = ROOT / "models" / "serve" / "qwen2.5-7b-instruct"
LLAMA = ROOT / "models" / "serve" / "llama-2-7b"
DOC = ROOT / "docs" / "serving-fidelity.md"
BEGIN, END = "<!-- serving-fidelity:begin -->", "<!-- serving-fidelity:end -->"
PUBLISHED = [("vllm-ascend v0.7.3, group A (stock host)", 86.58, 32.57),
             ("vllm-ascend v0.7.3, group H (tuned host: MindIE Turbo, BiSheng, tcmalloc, TASK_QUEUE_ENABLE=2)",
              49.95, 16.96)]


def run(model: pathlib.Path, *args: str) -> dict:
    """One om-run serve run in this process; its vllm result JSON."""
    from om_run.serve.session import run_serve
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "r.json"
        flags = parse_flags([model, "--load-format", "dummy", "--no-progress", "--save-result", "--result-filename",
                             out, *args])
        with contextlib.redirect_stdout(io.StringIO()):
            run_serve(flags)
        return json.loads(out.read_text())


def vllm_rows(quick: bool) -> list[tuple]:
    prompts = "40" if quick else "200"
    t0 = time.perf_counter()
    r = run(QWEN, "--soc_version", "Ascend910B1", "--scheduler-version", "v0", "--dataset-name", "random",
            "--random-input-len", "200", "--random-output-len", "128", "--num-prompts", prompts, "--request-rate", "1")
    wall = time.perf_counter() - t0
    rows = []
    for name, ttft, tpot in PUBLISHED:
        rows.append((name, "mean TTFT (ms)", r["mean_ttft_ms"], ttft))
        rows.append((name, "mean TPOT (ms)", r["mean_tpot_ms"], tpot))
    print(f"[vllm rows] {prompts} prompts simulated in {wall:.1f} s (the step table included, unless cached)")
    return rows


def floor_rows() -> list[tuple]:
    from atc_py.platform.soc import load_soc
    cfg = read_config(str(LLAMA))
    rows = []
    for soc in ("Ascend310P3", "Ascend910B1"):
        r = run(LLAMA, "--soc_version", soc, "--scheduler-version", "v0", "--max-model-len", "2048",
                "--dataset-name", "random", "--random-input-len", "128", "--random-output-len", "128",
                "--num-prompts", "1", "--max-concurrency", "1")
        floor = cfg.weight_bytes() / load_soc(soc).dram_bytes_per_ns * 1e-6     # ns -> ms
        rows.append((f"LLaMA2-7B batch 1 on {soc}", "TPOT (ms) vs weight-streaming floor", r["mean_tpot_ms"], floor))
    return rows


def table(rows: list[tuple]) -> str:
    out = ["| run | figure | simulated | published / floor | simulated / published |", "|---|---|---|---|---|"]
    for name, what, sim, ref in rows:
        out.append(f"| {name} | {what} | {sim:.2f} | {ref:.2f} | {sim / ref:.2f} |")
    return "\n".join(out)


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    a, b = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    DOC.write_text(doc[:a] + "\n" + text + "\n" + doc[b:])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", action="store_true", help="rewrite the table in docs/serving-fidelity.md")
    ap.add_argument("--quick", action="store_true", help="40 prompts instead of 200 (iterating)")
    args = ap.parse_args(argv)
    os.environ.setdefault("OM_RUN_SERVE_CACHE", str(ROOT / "out" / "serve-cache"))
    rows = vllm_rows(args.quick) + floor_rows()
    text = table(rows)
    print(text)
    if args.docs:
        write_doc(text)
        print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
