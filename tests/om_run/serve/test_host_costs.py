"""The engine's host work per step: its named parts add up as their sources give them, and MindIE's swapped KV
blocks cost their bytes over PCIe."""
from __future__ import annotations

from om_run.serve.host_costs import EngineHostCosts, swap_seconds
from om_run.serve.request import Request, Scheduled, Sequence, StepPlan
from om_run.sim.profile import RuntimeProfile


def plan(decodes: int, prefill: int = 0, **swaps) -> StepPlan:
    seqs = [Sequence(Request(str(k), 0.0, 8, 4), [0] * 9, computed=8) for k in range(decodes)]
    parts = [Scheduled(s, 8, 1) for s in seqs]
    if prefill:
        p = Sequence(Request("p", 0.0, prefill, 4), [0] * prefill)
        parts.append(Scheduled(p, 0, prefill))
    return StepPlan(parts, **swaps)


def test_a_step_costs_its_fixed_parts_and_its_per_sequence_and_per_token_parts():
    c = EngineHostCosts()
    base = c.schedule_base_us + c.prepare_base_us + c.sample_base_us
    one = (base + c.schedule_per_seq_us + c.prepare_per_token_us + c.output_per_seq_us
           + c.detokenize_per_token_us) * 1e-6
    assert abs(c.step_seconds(plan(1)) - one) < 1e-12
    # a prefill of 100 tokens beside 3 decodes: 4 sequences, 103 tokens, 4 sampled
    four = (base + 4 * c.schedule_per_seq_us + 103 * c.prepare_per_token_us
            + 4 * (c.output_per_seq_us + c.detokenize_per_token_us)) * 1e-6
    assert abs(c.step_seconds(plan(3, prefill=100)) - four) < 1e-12


def test_swapped_blocks_cost_their_bytes_over_pcie():
    prof = RuntimeProfile()
    block = 8 << 20
    assert swap_seconds(plan(1), block, prof) == 0
    out_in = swap_seconds(plan(1, blocks_swapped_out=3, blocks_swapped_in=2), block, prof)
    assert abs(out_in - (3 * block / (prof.d2h_gbps * 1e9) + 2 * block / (prof.h2d_gbps * 1e9))) < 1e-12
