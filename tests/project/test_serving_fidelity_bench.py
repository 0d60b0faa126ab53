"""bench/serving_fidelity.py (not run here: it takes minutes) must measure what the published rows measured: every
request of its length grid completed. Not a benchmark: nothing is timed."""
import pathlib

import pytest

from tests.helpers import ROOT


@pytest.fixture(autouse=True)
def serve_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("OM_RUN_SERVE_CACHE", str(tmp_path_factory.getbasetemp() / "om-run-serve-cache"))


def test_duo_config_lets_every_output_of_the_grid_run_to_its_length(tmp_path):
    """The ModelZoo's dual-chip figures average 36 input x output pairs up to 1024 generated tokens; MindIE cuts an
    output at min(maxIterTimes, max_tokens, maxSeqLen - prompt), and the sample config's maxIterTimes is 512."""
    from bench.serving_fidelity import DUO_LENGTHS, mindie_config
    from om_run.serve.scheduler.mindie_config import load_mindie_config
    cfg = load_mindie_config(str(mindie_config(tmp_path, 2, 2 * max(DUO_LENGTHS))))
    cut = [(n_in, n_out) for n_in in DUO_LENGTHS for n_out in DUO_LENGTHS
           if min(cfg.max_iter_times, n_out, cfg.max_seq_len - n_in) < n_out]
    assert cut == []


def test_a_failed_request_stops_the_bench_instead_of_averaging_zeros(tmp_path):
    from bench.serving_fidelity import mindie_config, run
    cfg = mindie_config(tmp_path, 1, 64)      # maxInputTokenLen 64: a 100-token prompt is rejected
    args = ("--soc_version", "Ascend310P3", "--engine", "mindie", "--mindie-config", str(cfg), "--dataset-name",
            "random", "--random-output-len", "4", "--num-prompts", "1", "--max-concurrency", "1", "--workers", "1")
    model = pathlib.Path(ROOT) / "models" / "serve" / "tiny-qwen2"
    assert run(model, *args, "--random-input-len", "8")["completed"] == 1
    with pytest.raises(RuntimeError, match="1 of 1 requests failed"):
        run(model, *args, "--random-input-len", "100")
