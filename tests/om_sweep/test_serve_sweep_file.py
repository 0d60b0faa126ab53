"""A sweep file's `serve:` section and serving grid keys: parsed into typed entries, planned into one point per
entry x serving grid value (MindIE's points without vLLM's settings), beside `models:` points; every bad field
refused before any job runs, the message naming it."""
from __future__ import annotations

import pytest

from om_sweep.plan import make_plan
from om_sweep.spec import load_spec
from tests.helpers.sweep import MODELS, TINY_LIMITS, om_sweep, tiny_decoder, write_sweep

CNN = str(MODELS / "small_cnn.onnx")
SOC = {"soc_version": ["Ascend910B1"]}
M = "m"                        # the tiny decoder's folder, written beside the sweep file


def _serve(**entry) -> dict:
    return {"serve": [{"model": M, **entry}], "grid": SOC}


BAD = [
    ({"serve": [], "grid": SOC}, "serve", "non-empty list"),
    ({"serve": {"model": M}, "grid": SOC}, "serve", "non-empty list"),
    ({"serve": [{"load_format": "dummy"}], "grid": SOC}, "serve[0].model", "is required"),
    ({"serve": [{"model": 3}], "grid": SOC}, "serve[0].model", "non-empty string"),
    ({"serve": [{"model": M, "modle": 1}], "grid": SOC}, "serve[0].modle", "unknown key"),
    ({"serve": [{"model": M, "max_num_seqs": 8}], "grid": SOC}, "serve[0].max_num_seqs", "is a serving setting"),
    (_serve(load_format="fast"), "serve[0].load_format", "must be one of dummy, auto"),
    (_serve(workload={"num_prompts": 0}), "serve[0].workload.num_prompts", ">= 1"),
    (_serve(workload={"num_promts": 10}), "serve[0].workload.num_promts", "unknown key"),
    (_serve(workload={"request_rate": 4}), "serve[0].workload.request_rate", "give it in grid or in serve[0].settings"),
    (_serve(workload={"dataset_name": "alpaca"}), "serve[0].workload.dataset_name", "must be one of random, sharegpt"),
    (_serve(workload={"dataset_path": "d.json"}), "serve[0].workload.dataset_path", "sharegpt only"),
    (_serve(workload={"burstiness": 0}), "serve[0].workload.burstiness", "> 0"),
    (_serve(goodput={"ttfb": 200}), "serve[0].goodput.ttfb", "unknown key"),
    (_serve(goodput={"ttft": -1}), "serve[0].goodput.ttft", ">= 0"),
    (_serve(goodput={"ttft": "fast"}), "serve[0].goodput.ttft", "a number"),
    (_serve(slo_percentile=0), "serve[0].slo_percentile", "> 0"),
    (_serve(slo_percentile=101), "serve[0].slo_percentile", "(0, 100]"),
    (_serve(settings={"max_num_seqs": 0}), "serve[0].settings.max_num_seqs", ">= 1"),
    (_serve(settings={"precision_mode": "force_fp16"}), "serve[0].settings.precision_mode", "unknown key"),
    (_serve(settings={"engine": "mindie"}), "serve[0].mindie_config", "is required for engine mindie"),
    (_serve(mindie_config="mindie.json"), "serve[0].mindie_config", "applies to engine mindie only"),
    (_serve(time_limit_s=0), "serve[0].time_limit_s", "> 0"),
    ({"serve": [M], "grid": {**SOC, "max_num_seqs": [8, "many"]}}, "grid.max_num_seqs[1]", "an integer"),
    ({"serve": [M], "grid": {**SOC, "enable_chunked_prefill": ["yes"]}}, "grid.enable_chunked_prefill[0]",
     "true or false"),
    ({"serve": [M], "grid": {**SOC, "engine": ["tgi"]}}, "grid.engine[0]", "must be one of vllm, mindie"),
    ({"serve": [M], "grid": {**SOC, "scheduler_version": ["v2"]}}, "grid.scheduler_version[0]", "v0, v1"),
    ({"serve": [M], "grid": {**SOC, "request_rate": [0]}}, "grid.request_rate[0]", "> 0"),
    ({"serve": [M], "grid": {**SOC, "request_rate": [1, 1.0]}}, "grid.request_rate", "listed twice"),
    ({"serve": [M], "grid": {**SOC, "gpu_memory_utilization": [1.5]}}, "grid.gpu_memory_utilization[0]", "<= 1"),
    ({"serve": [M], "grid": {**SOC, "max_num_seqs": [8]}, "serve_grid": 1}, "serve_grid", "unknown key"),
    ({"serve": [M], "grid": {**SOC, "precision_mode": ["force_fp16"]}}, "grid.precision_mode",
     "applies to models: points"),
    ({"models": [CNN], "grid": {**SOC, "max_num_seqs": [8]}}, "grid.max_num_seqs", "is a serving setting"),
    ({"serve": [M], "grid": {"max_num_seqs": [8]}}, "grid.soc_version", "no SoC for serve[0]"),
    ({"serve": [{"model": M, "settings": {"max_num_seqs": 8}}], "grid": {**SOC, "max_num_seqs": [8]}},
     "serve[0].settings.max_num_seqs", "also a grid key"),
    ({"serve": [M], "grid": {**SOC, "max_num_seqs": list(range(1, 11)), "request_rate": list(range(1, 11))},
      "run": {"max_points": 50}}, "grid", "1 serve entries x 1 x 10 x 10 grid values = 100 points"),
]


@pytest.mark.parametrize("doc,field,reason", BAD, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)])
def test_bad_serve_section_is_rejected_naming_the_field(tmp_path, doc, field, reason):
    sweep = write_sweep(tmp_path, doc)
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "results")
    line = stderr.strip()
    assert code == 1 and line.startswith("[ERROR] E40001: Invalid sweep file") and "Traceback" not in stderr, stderr
    assert f": {field}: " in line and reason in line, line
    assert not (tmp_path / "results" / "results.parquet").exists()


def test_serve_section_beside_models_plans_both_kinds(tmp_path):
    """The brief's example schema: each kind of point takes the grid keys that apply to it (soc_version both)."""
    tiny_decoder(tmp_path / M)
    (tmp_path / "mindie.json").write_text("{}")
    sweep = write_sweep(tmp_path, {
        "models": [CNN],
        "serve": [{"model": M, "load_format": "dummy", "mindie_config": "mindie.json",
                   "workload": {"dataset_name": "random", "random_input_len": 40, "random_output_len": 10,
                                "num_prompts": 10},
                   "goodput": {"ttft": 200, "tpot": 50}, "slo_percentile": 95, "settings": TINY_LIMITS},
                  {"model": "no_such_model", "mindie_config": "mindie.json"}],
        "grid": {"soc_version": ["Ascend910B1", "Ascend310P3"], "precision_mode": ["force_fp16"],
                 "engine": ["vllm", "mindie"], "max_num_seqs": [8, 16], "enable_chunked_prefill": [False, True],
                 "request_rate": [1, 4.0, "inf"]}})
    spec = load_spec(sweep)
    (entry, missing) = spec.serve
    assert entry.goodput == {"ttft": 200.0, "tpot": 50.0} and entry.slo_percentile == 95.0
    assert entry.settings == {"max_model_len": "256", "max_num_batched_tokens": "256",
                              "gpu_memory_utilization": "0.02"}
    assert spec.grid["request_rate"] == ["1", "4", "inf"] and spec.grid["enable_chunked_prefill"] == ["false", "true"]
    plan = make_plan(spec, "v-test")
    builds = [p for p in plan.points if p.kind == "build"]
    served = [p for p in plan.points if p.kind == "serve"]
    assert len(builds) == 2 and all(dict(p.grid).keys() == {"soc_version", "precision_mode"} for p in builds)
    # vLLM: 2 SoCs x 2 x 2 x 3 rates; MindIE: 2 SoCs x 3 rates (vLLM's settings left out); per entry
    assert len(served) == 2 * (2 * 2 * 2 * 3 + 2 * 3)
    mine = [p for p in served if p.model == M]
    mindie = [p for p in mine if dict(p.grid)["engine"] == "mindie"]
    assert len(mindie) == 6 and all("max_num_seqs" not in dict(p.grid) for p in mindie)
    assert all("--mindie-config=mindie.json" in p.options and "--max-num-seqs" not in p.options for p in mindie)
    vllm = [p for p in mine if dict(p.grid)["engine"] == "vllm"]
    assert all("--mindie-config" not in p.options for p in vllm)
    first = vllm[0]
    assert first.options == ("--dataset-name=random --engine=vllm --goodput=tpot:50 --goodput=ttft:200 "
                             "--gpu-memory-utilization=0.02 --load-format=dummy --max-model-len=256 "
                             "--max-num-batched-tokens=256 --max-num-seqs=8 --no-enable-chunked-prefill "
                             "--num-prompts=10 --random-input-len=40 --random-output-len=10 --request-rate=1 "
                             "--slo-percentile=95 --soc_version=Ascend910B1")
    assert [dict(p.grid)["request_rate"] for p in vllm[:3]] == ["1", "4", "inf"]     # the file's order
    assert first.job.files[0].role == "config" and first.job.serve.slos == "tpot:50 ttft:200"
    assert len({p.job.key for p in mine}) == len(mine)
    gone = [p for p in served if p.model == "no_such_model"]
    assert {p.failure.code for p in gone} == {"E40003"} and all(p.job is None for p in gone)


def test_no_compute_makes_serving_points_timing_only(tmp_path):
    tiny_decoder(tmp_path / M)
    sweep = write_sweep(tmp_path, {"serve": [{"model": M, "load_format": "auto"}], "grid": SOC})
    spec = load_spec(sweep)
    (numeric,) = make_plan(spec, "v").points
    (timing,) = make_plan(spec, "v", compute=False).points
    assert numeric.numeric and "--load-format=auto" in numeric.options
    assert not timing.numeric and "--load-format=dummy" in timing.options and timing.job.key != numeric.job.key
