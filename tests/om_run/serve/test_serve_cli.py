"""`om-run serve` as a user runs it: Qwen2- and LLaMA-shaped configs with dummy weights under vLLM (V0, V1) and
MindIE, the random and trace workloads, every result file (vllm's JSON with its keys, AISBench's rows, the per-request
and per-step CSVs, the trace, the HTML report); and each bad input one clear error before anything is simulated."""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT

SMALL = ["--max-model-len", "256", "--max-num-seqs", "8", "--max-num-batched-tokens", "256", "--no-progress"]
VLLM_KEYS = {"date", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness",
             "max_concurrency", "duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
             "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
             "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms",
             "std_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms"}


def config(folder, arch="Qwen2ForCausalLM", **extra):
    folder.mkdir(parents=True, exist_ok=True)
    cfg = {"architectures": [arch], "hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
           "intermediate_size": 256, "num_hidden_layers": 4, "vocab_size": 512, "max_position_embeddings": 256,
           "torch_dtype": "bfloat16", **extra}
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def serve(*args, cache=None, check=True):
    env = None
    if cache is not None:
        import os
        env = {**os.environ, "OM_RUN_SERVE_CACHE": str(cache)}
    p = subprocess.run([sys.executable, "-m", "om_run", "serve", *map(str, args)], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=600)
    if check:
        assert p.returncode == 0, p.stderr[-3000:]
    return p


@pytest.mark.heavy
@pytest.mark.parametrize("arch,engine", [("Qwen2ForCausalLM", ["--scheduler-version", "v0"]),
                                         ("LlamaForCausalLM", ["--scheduler-version", "v1"])])
def test_random_workload_writes_every_result(tmp_path, serve_cache, arch, engine):
    model = config(tmp_path / "model", arch)
    out = tmp_path / "out"
    p = serve(model, "--load-format", "dummy", *SMALL, *engine, "--num-prompts", "12", "--random-input-len", "40",
              "--random-output-len", "10", "--request-rate", "20", "--save-result", "--result-dir", out,
              "--result-filename", "r.json", "--goodput", "ttft:500", "tpot:100", "--aisbench-output", out / "ais",
              "--requests-csv", out / "requests.csv", "--steps-csv", out / "steps.csv", "--trace-output",
              out / "trace.json", "--report", out / "report.html", cache=serve_cache)
    assert "============ Serving Benchmark Result ============" in p.stdout
    result = json.loads((out / "r.json").read_text())
    assert VLLM_KEYS <= set(result)
    assert result["completed"] == 12 and result["failed"] == 0 and result["total_output_tokens"] == 120
    assert result["mean_tpot_ms"] > 0 and result["mean_ttft_ms"] > result["mean_tpot_ms"] * 0.1
    ais = list((out / "ais").rglob("*.csv"))
    assert ais and "TTFT" in ais[0].read_text()
    rows = list(csv.DictReader((out / "requests.csv").open()))
    assert len(rows) == 12
    steps = list(csv.DictReader((out / "steps.csv").open()))
    assert sum(int(s["num_decode_tokens"]) + int(s["num_prefill_tokens"]) for s in steps) >= 12 * 40
    assert json.loads((out / "trace.json").read_text())["traceEvents"]
    assert "<img" in (out / "report.html").read_text()


def mindie_config(tmp_path):
    mindie = json.loads((ROOT / "models" / "serve" / "mindie" / "config.json").read_text())
    sched = mindie["BackendConfig"]["ScheduleConfig"]
    sched.update(maxBatchSize=4, maxPrefillBatchSize=2, maxPrefillTokens=256)
    mindie["BackendConfig"]["ModelDeployConfig"].update(maxSeqLen=256, maxInputTokenLen=200)
    (tmp_path / "mindie.json").write_text(json.dumps(mindie))
    return tmp_path / "mindie.json"


@pytest.mark.heavy
def test_trace_replay_under_mindie(tmp_path, serve_cache):
    model = config(tmp_path / "model", "LlamaForCausalLM")
    trace = tmp_path / "trace.csv"
    trace.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,30,5\n0.01,60,8\n0.05,20,3\n")
    p = serve(model, "--load-format", "dummy", "--engine", "mindie", "--mindie-config", mindie_config(tmp_path),
              "--trace", trace, "--no-progress", "--save-result", "--result-filename", tmp_path / "r.json",
              cache=serve_cache)
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["completed"] == 3 and result["total_output_tokens"] == 16
    assert "mindie" in p.stderr


@pytest.mark.heavy
def test_random_workload_under_mindie(tmp_path, serve_cache):
    model = config(tmp_path / "model", "Qwen2ForCausalLM")
    out = tmp_path / "out"
    serve(model, "--load-format", "dummy", "--engine", "mindie", "--mindie-config", mindie_config(tmp_path),
          "--num-prompts", "10", "--random-input-len", "50", "--random-output-len", "6", "--request-rate", "inf",
          "--no-progress", "--save-result", "--result-filename", out / "r.json", "--aisbench-output", out / "ais",
          "--steps-csv", out / "steps.csv", cache=serve_cache)
    result = json.loads((out / "r.json").read_text())
    assert result["completed"] == 10 and result["total_output_tokens"] == 60
    steps = list(csv.DictReader((out / "steps.csv").open()))
    # MindIE's maxPrefillBatchSize 2: a prefill step holds at most two prompts of 50 tokens
    assert max(int(s["num_prefill_tokens"]) for s in steps) <= 2 * 50
    assert list((out / "ais").rglob("*.json"))


@pytest.mark.parametrize("args,message", [
    (["--tensor-parallel-size", "3"], "4 attention heads (num_attention_heads) do not divide into 3 ranks"),
    (["--tensor-parallel-size", "0"], "at least 1"),
    (["--request-rate", "0"], "must be > 0"),
    (["--request-rate", "-3"], "must be > 0"),
    (["--metric-percentiles", "0,150"], "(0, 100]"),
    (["--slo-percentile", "101"], "(0, 100]"),
    (["--search-request-rate"], "--goodput"),
    (["--engine", "mindie"], "--mindie-config"),
    (["--sim-config", "no-such-profile.json"], "--sim-config"),
    (["--host-dispatch-us", "-1"], "--host-dispatch-us"),
])
def test_bad_flags_are_one_error(tmp_path, serve_cache, args, message):
    model = config(tmp_path / "model")
    p = serve(model, "--load-format", "dummy", *SMALL, *args, cache=serve_cache, check=False)
    assert p.returncode != 0 and message in p.stderr and "Traceback" not in p.stderr
    assert "Serving Benchmark Result" not in p.stdout


def test_bad_models_and_traces_are_one_error(tmp_path, serve_cache):
    gpt = config(tmp_path / "gpt", "GPT2LMHeadModel")
    p = serve(gpt, "--load-format", "dummy", cache=serve_cache, check=False)
    assert p.returncode == 1 and "GPT2LMHeadModel is not one of them" in p.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 64}))
    p = serve(broken, "--load-format", "dummy", cache=serve_cache, check=False)
    assert p.returncode == 1 and "'num_attention_heads'" in p.stderr
    huge = config(tmp_path / "huge", hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                  num_attention_heads=64, num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192)
    p = serve(huge, "--load-format", "dummy", "--soc_version", "Ascend310P3", cache=serve_cache, check=False)
    assert p.returncode == 1 and "Try increasing `gpu_memory_utilization`" in p.stderr
    model = config(tmp_path / "model")
    trace = tmp_path / "t.csv"
    trace.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,30,5\n0.1,abc,4\n")
    p = serve(model, "--load-format", "dummy", *SMALL, "--trace", trace, cache=serve_cache, check=False)
    assert p.returncode == 1 and "line 3" in p.stderr
    p = serve(model, *SMALL, cache=serve_cache, check=False)        # auto without safetensors
    assert p.returncode == 1 and "model.safetensors" in p.stderr and "--load-format dummy" in p.stderr


@pytest.mark.heavy
def test_requests_longer_than_max_model_len_fail_one_by_one(tmp_path, serve_cache):
    model = config(tmp_path / "model")
    trace = tmp_path / "t.csv"
    trace.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,30,5\n0.0,250,20\n0.0,10,2\n")
    p = serve(model, "--load-format", "dummy", *SMALL, "--trace", trace, "--save-result", "--result-filename",
              tmp_path / "r.json", cache=serve_cache)
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["completed"] == 2 and result["failed"] == 1
    assert "Failed requests:                         1" in p.stdout


@pytest.mark.heavy
def test_a_sim_config_reaches_every_step_price(tmp_path, serve_cache):
    # the runtime profile's overrides (om-run's --sim-config) price the served steps: a 200 us kernel launch on the
    # host makes every step of the small model slower than the default 6 us does
    model = config(tmp_path / "model")
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({"host_launch_ns": 200000}))
    runs = {}
    for name, extra in (("default", []), ("slow", ["--sim-config", slow])):
        out = tmp_path / f"{name}.json"
        serve(model, "--load-format", "dummy", *SMALL, "--num-prompts", "4", "--random-input-len", "20",
              "--random-output-len", "4", "--save-result", "--result-filename", out, *extra, cache=serve_cache)
        runs[name] = json.loads(out.read_text())
    assert runs["slow"]["mean_tpot_ms"] > 2 * runs["default"]["mean_tpot_ms"]
    assert runs["slow"]["mean_ttft_ms"] > runs["default"]["mean_ttft_ms"]
