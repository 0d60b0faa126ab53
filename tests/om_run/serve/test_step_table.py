"""Step prices: the interpolated grid is within 3 % of direct simulation on random held-out steps (mixes of
decodes and prefill chunks the grid never saw), the model's L layers are priced from its one- and two-layer
decoders as a direct simulation of all L layers gives them, a step's price depends on the step before it only
(never on the order steps were priced in), and the attention's sequence lengths reach its tiling in timing-only
runs (a longer context costs more)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from om_run.serve.build import BuildSpec, compile_decoder
from om_run.serve.hf_config import read_config
from om_run.serve.pricing import ServedModel, build_table
from om_run.serve.step_table import StepSimulator, step_shape

LIMITS = dict(max_tokens=256, max_seqs=16, max_len=512)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cfg")
    (folder / "config.json").write_text(json.dumps(
        {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 256, "num_attention_heads": 8, "num_key_value_heads": 2,
         "intermediate_size": 512, "num_hidden_layers": 6, "vocab_size": 1024, "max_position_embeddings": 512,
         "torch_dtype": "float16"}))
    cfg = read_config(str(folder))
    spec = BuildSpec("Ascend910B1", False, 16, LIMITS["max_len"], LIMITS["max_tokens"], LIMITS["max_seqs"])
    return cfg, spec, ServedModel(cfg, spec)


def random_step(rng):
    decodes = int(rng.integers(0, LIMITS["max_seqs"] - 1))
    prefills = int(rng.integers(0 if decodes else 1, 3))
    q = [1] * decodes + [int(rng.integers(2, 120)) for _ in range(prefills)]
    kv = [int(rng.integers(2, LIMITS["max_len"])) for _ in range(decodes)] + \
        [min(LIMITS["max_len"], x + int(rng.integers(0, 200))) for x in q[decodes:]]
    return q, kv


@pytest.mark.heavy
def test_interpolated_steps_are_within_3_percent_of_direct_simulation(model):
    _, _, served = model
    table = build_table(served, workers=1)
    rng = np.random.default_rng(7)
    errors = []
    for _ in range(24):
        q, kv = random_step(rng)
        miss, hit, *_ = served.layered.run_pair(q, kv)
        shape = step_shape(q, kv)
        errors += [abs(table.lookup(shape, False)[0] / miss - 1), abs(table.lookup(shape, True)[0] / hit - 1)]
    assert max(errors) <= 0.03, f"worst {max(errors):.4f}, mean {np.mean(errors):.4f}"


@pytest.mark.heavy
def test_layers_priced_from_one_and_two_equal_all_of_them(model):
    cfg, spec, served = model
    full = StepSimulator(compile_decoder(cfg, spec), spec.max_blocks)
    for q, kv in (([1] * 8, [300] * 8), ([1, 1, 64], [40, 400, 100]), ([200], [200])):
        miss, hit, dev, *_ = served.layered.run_pair(q, kv)
        full.forget()
        direct_miss = full.run(q, [k - 1 if k > qq else k for qq, k in zip(q, kv)])[0]
        direct_hit, direct_dev, _, _, direct_issued = full.run(q, kv)
        assert hit == pytest.approx(direct_hit, rel=0.02)
        assert miss == pytest.approx(direct_miss, rel=0.02)
        assert dev == pytest.approx(direct_dev, rel=0.02)
        assert 0 < direct_issued <= direct_hit


def test_a_price_does_not_depend_on_the_order_of_pricing(model):
    _, _, served = model
    first = served.layered.run_pair([1, 1, 1], [50, 60, 70])
    served.layered.run_pair([128], [128])
    served.layered.run_pair([1] * 16, [500] * 16)
    assert served.layered.run_pair([1, 1, 1], [50, 60, 70]) == first


def test_longer_contexts_cost_more_in_timing_only_runs(model):
    _, _, served = model
    short = served.layered.run_pair([1] * 16, [20] * 16)[2]
    long = served.layered.run_pair([1] * 16, [500] * 16)[2]
    assert long > short
