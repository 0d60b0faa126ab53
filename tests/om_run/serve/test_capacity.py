"""--search-request-rate: the rate it returns meets the SLOs at the percentile, and 1.1 times that rate does not
(each a whole run of the same requests); an SLO no rate meets is an error naming the lowest rate tried."""
from __future__ import annotations

import json

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.capacity import meets, search_rate
from om_run.serve.command import parse_flags
from om_run.serve.results import ResultFlags
from om_run.serve.session import prepare, run_info, simulate
from om_run.serve.workload.arrivals import timed


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    folder = tmp_path_factory.mktemp("capacity")
    (folder / "config.json").write_text(json.dumps(
        {"architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
         "num_key_value_heads": 8, "intermediate_size": 1024, "num_hidden_layers": 4, "vocab_size": 2048,
         "max_position_embeddings": 256, "torch_dtype": "float16"}))
    args = [folder, "--load-format", "dummy", "--max-model-len", "256", "--max-num-seqs", "8",
            "--max-num-batched-tokens", "256", "--num-prompts", "40", "--random-input-len", "64",
            "--random-output-len", "16", "--no-progress", "--workers", "1"]
    return args, prepare(parse_flags(args), out=lambda line: None)


def p90_tpot(prep, flags, rate):
    res = simulate(prep, timed(prep.requests, rate, 1.0, flags["seed"]), None, progress=False)
    return meets(res.records, {"tpot": 1e9}, 90)[1]["tpot"]


@pytest.mark.heavy
def test_the_rate_found_meets_the_slo_and_a_tenth_more_does_not(prepared, capsys):
    args, prep = prepared
    flags = parse_flags(args)
    quiet, busy = p90_tpot(prep, flags, 0.5), p90_tpot(prep, flags, 500.0)
    assert busy > quiet
    slo = (quiet + busy) / 2          # between an idle engine's TPOT and a saturated one's
    flags = parse_flags([*args, "--search-request-rate", "--goodput", f"tpot:{slo}", "--request-rate", "1"])
    rate = search_rate(flags, prep, ResultFlags(), simulate, run_info)
    assert p90_tpot(prep, flags, rate) <= slo
    assert p90_tpot(prep, flags, rate * 1.1) > slo
    assert "highest request rate meeting the SLOs at p90" in capsys.readouterr().out


@pytest.mark.heavy
def test_an_slo_no_rate_meets_names_the_lowest_rate_tried(prepared):
    args, prep = prepared
    flags = parse_flags([*args, "--search-request-rate", "--goodput", "ttft:0.001", "--request-rate", "1"])
    with pytest.raises(AtcError, match="no request rate meets these SLOs at p90: the lowest rate tried"):
        search_rate(flags, prep, ResultFlags(), simulate, run_info)
