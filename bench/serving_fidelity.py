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
* LLaMA2-7B and LLaMA2-13B on an Atlas 300I Duo, tensor parallel over its two 310P3 (MindIE / ATB, worldSize 2),
  batch 1, averaged over input x output lengths in {32, 64, 128, 256, 512, 1024}: Ascend ModelZoo's dual-chip guide
  (CANN 7.0.RC1, ATB 7.0.T10): first-token / per-token latency 188 / 65.32 ms (7B) and 326 / 110.19 ms (13B).
* LLaMA2-7B on an Atlas 800 A2 at TP 1 / 2 / 4 / 8 (910B, full HCCS mesh), batch 1: TPOT and the share of a decode
  step its collectives take (no published figure: the scaling the link model gives).
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
DUO_LENGTHS = (32, 64, 128, 256, 512, 1024)
# Ascend ModelZoo's LLaMA2-7B & LLaMA2-13B dual-chip guide, Atlas 300I Duo (2 x 310P3, TP 2), CANN 7.0.RC1, ATB
# 7.0.T10, batch 1, the mean of 36 input x output lengths: first token / later tokens (ms)
DUO_PUBLISHED = {"LLaMA2-7B": ("llama-2-7b", 188.0, 65.32), "LLaMA2-13B": ("llama-2-13b", 326.0, 110.19)}
PUBLISHED = [("vllm-ascend v0.7.3, group A (stock host)", 86.58, 32.57),
             ("vllm-ascend v0.7.3, group H (tuned host: MindIE Turbo, BiSheng, tcmalloc, TASK_QUEUE_ENABLE=2)",
              49.95, 16.96)]


def run(model: pathlib.Path, *args: str) -> dict:
    """One om-run serve run in this process; its vllm result JSON. A request that failed (an engine cap cut it,
    the engine rejected it) stops the bench: its latencies are 0 in the result and would be averaged as such."""
    from om_run.serve.session import run_serve
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "r.json"
        flags = parse_flags([model, "--load-format", "dummy", "--no-progress", "--save-result", "--result-filename",
                             out, *args])
        with contextlib.redirect_stdout(io.StringIO()):
            run_serve(flags)
        r = json.loads(out.read_text())
    if r["failed"]:
        raise RuntimeError(f"{model.name} {' '.join(map(str, args))}: {r['failed']} of {r['num_prompts']} requests "
                           "failed; a failed request's latencies are 0 and would be averaged into the figure")
    return r


def vllm_rows(quick: bool) -> list[tuple]:
    """Group A on the stock host preset; group H with MindIE Turbo and TASK_QUEUE_ENABLE=2 (its BiSheng builds and
    tcmalloc have no figure here: the simulation keeps the stock Python's and allocator's costs)."""
    prompts = "40" if quick else "200"
    rows = []
    for (name, ttft, tpot), extra, queue in zip(PUBLISHED, ((), ("--mindie-turbo",)), ("1", "2")):
        t0 = time.perf_counter()
        old = os.environ.get("TASK_QUEUE_ENABLE")
        os.environ["TASK_QUEUE_ENABLE"] = queue
        try:
            r = run(QWEN, "--soc_version", "Ascend910B1", "--scheduler-version", "v0", "--dataset-name", "random",
                    "--random-input-len", "200", "--random-output-len", "128", "--num-prompts", prompts,
                    "--request-rate", "1", *extra)
        finally:
            if old is None:
                del os.environ["TASK_QUEUE_ENABLE"]
            else:
                os.environ["TASK_QUEUE_ENABLE"] = old
        rows.append((name, "mean TTFT (ms)", r["mean_ttft_ms"], ttft))
        rows.append((name, "mean TPOT (ms)", r["mean_tpot_ms"], tpot))
        print(f"[vllm rows] {name}: {prompts} prompts simulated in {time.perf_counter() - t0:.1f} s")
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


def mindie_config(tmp: pathlib.Path, world: int, max_seq_len: int) -> pathlib.Path:
    """MindIE's config.json for a batch-1 run on `world` NPUs (the sample's, resized)."""
    d = json.loads((ROOT / "models" / "serve" / "mindie" / "config.json").read_text())
    b = d["BackendConfig"]
    b["npuDeviceIds"] = [list(range(world))]
    m = b["ModelDeployConfig"]
    m["maxSeqLen"], m["maxInputTokenLen"] = max_seq_len, max_seq_len
    m["ModelConfig"][0].update(worldSize=world, modelName="llama-2-7b")
    # maxIterTimes (MindIE's output cap, 512 in the sample) at the sequence length: the ModelZoo's script generates
    # every output length its grid asks for (up to 1024), which the cap would cut (a failed request)
    b["ScheduleConfig"].update(maxBatchSize=1, maxPrefillBatchSize=1, maxPrefillTokens=max_seq_len,
                               maxIterTimes=max_seq_len)
    path = tmp / f"mindie-{world}.json"
    path.write_text(json.dumps(d))
    return path


def duo_rows(quick: bool) -> list[tuple]:
    """LLaMA2-7B and -13B at TP 2 on an Atlas 300I Duo, batch 1, the mean over the ModelZoo's length grid."""
    lengths = DUO_LENGTHS[::2] if quick else DUO_LENGTHS
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = mindie_config(pathlib.Path(tmp), 2, 2 * max(DUO_LENGTHS))
        for name, (folder, ttft_pub, tpot_pub) in DUO_PUBLISHED.items():
            ttft, tpot = [], []
            t0 = time.perf_counter()
            for n_in in lengths:
                for n_out in lengths:
                    r = run(ROOT / "models" / "serve" / folder, "--soc_version", "Ascend310P3", "--engine", "mindie",
                            "--mindie-config", cfg, "--dataset-name", "random", "--random-input-len", str(n_in),
                            "--random-output-len", str(n_out), "--num-prompts", "1", "--max-concurrency", "1")
                    ttft.append(r["mean_ttft_ms"])
                    tpot.append(r["mean_tpot_ms"])
            print(f"[duo rows] {name}: {len(ttft)} runs in {time.perf_counter() - t0:.1f} s")
            label = f"{name}, Atlas 300I Duo, TP 2 (MindIE/ATB), batch 1, mean over lengths 32..1024"
            rows += [(label, "first-token latency (ms)", sum(ttft) / len(ttft), ttft_pub),
                     (label, "per-token latency (ms)", sum(tpot) / len(tpot), tpot_pub)]
    return rows


def a2_scaling() -> list[str]:
    """LLaMA2-7B batch-1 TPOT on an Atlas 800 A2 at TP 1, 2, 4, 8 and the collectives' share of a decode step."""
    from atc_py.platform.topology import topology_for_soc
    from om_run.hccl.algorithms import collective_cost
    from om_run.serve.tensor_parallel import shard
    cfg = read_config(str(LLAMA))
    topo = topology_for_soc("Ascend910B1")
    out = ["| TP | TPOT (ms) | collectives per decode step | collectives (ms) | share of the step |",
           "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for tp in (1, 2, 4, 8):
            r = run(LLAMA, "--soc_version", "Ascend910B1", "--engine", "mindie", "--mindie-config",
                    mindie_config(pathlib.Path(tmp), tp, 2048), "--dataset-name", "random", "--random-input-len",
                    "128", "--random-output-len", "128", "--num-prompts", "1", "--max-concurrency", "1")
            colls = shard(cfg, tp).collectives(1, 1)
            comm = sum(calls * collective_cost(op, n, list(range(tp)), topo, dtype=cfg.dtype).ns
                       for op, calls, n in colls) * 1e-6
            calls = sum(c for _, c, _ in colls)
            tpot = r["mean_tpot_ms"]
            out.append(f"| {tp} | {tpot:.2f} | {calls} | {comm:.2f} | {comm / tpot:.0%} |")
    return out


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
    rows = vllm_rows(args.quick) + floor_rows() + duo_rows(args.quick)
    text = table(rows) + "\n\nLLaMA2-7B on an Atlas 800 A2 (910B1, HCCS full mesh), MindIE / ATB, batch 1, 128 in / 128 " \
                         "out:\n\n" + "\n".join(a2_scaling())
    print(text)
    if args.docs:
        write_doc(text)
        print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
