"""The engine's own host work around each model step, as named parameters: what TTFT and TPOT carry besides the
kernels (the kernels' launches and tilings are the simulator's: om_run/sim). Every value says where it comes from;
ASSUMED ones are estimates still waiting for a published Ascend figure (the session notes list them)."""
from __future__ import annotations

from dataclasses import dataclass

from .request import StepPlan


@dataclass(frozen=True)
class EngineHostCosts:
    # vLLM's scheduler pass and the step's input tensors built on the host (block tables, slot mappings,
    # positions); ASSUMED from vLLM's v0.6.0 profile (blog.vllm.ai 2024-09-05: scheduling and input preparation
    # were ~30 % of a Llama-3-8B decode step on one H100), split into a fixed and a per-sequence part
    schedule_base_us: float = 300.0
    schedule_per_seq_us: float = 15.0
    prepare_per_token_us: float = 0.5
    # the sampler (greedy: argmax on the device, the token ids copied back) and the output processing
    # (detokenisation, the stop checks, the response chunk) per sampled sequence; ASSUMED
    sample_base_us: float = 150.0
    output_per_seq_us: float = 20.0

    def step_seconds(self, plan: StepPlan) -> float:
        seqs = len(plan.scheduled)
        sampled = sum(1 for s in plan.scheduled if s.samples)
        us = (self.schedule_base_us + self.schedule_per_seq_us * seqs + self.prepare_per_token_us * plan.num_tokens
              + self.sample_base_us + self.output_per_seq_us * sampled)
        return us * 1e-6


def host_costs_for(engine: str) -> EngineHostCosts:
    """vLLM (V0 / V1) and MindIE's host pipeline: one set until sourced figures tell them apart."""
    return EngineHostCosts()
