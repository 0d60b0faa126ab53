"""The engine's own host work around each model step, as named parameters: what TTFT and TPOT carry besides the
kernels (the kernels' launches and tilings are the simulator's: om_run/sim). Each value names its source; the
figures were measured on GPU hosts unless the source says Ascend (no Ascend-host figure was found for them; the
session notes list what is still open). None is fitted to the serving-fidelity rows."""
from __future__ import annotations

from dataclasses import dataclass

from .request import StepPlan

# PyTorch eager through torch_npu: the framework's own dispatch of one op before it reaches the runtime. 20 us:
# MindSpore's vLLM graph-capture guide ("it takes 20 us to deliver an operator", www.mindspore.cn, vllm_mindspore
# graph_capture), in the 10-35 us range GPU eager-dispatch measurements give
EAGER_DISPATCH_NS = 20_000


@dataclass(frozen=True)
class EngineHostCosts:
    # vLLM's scheduler pass: github.com/vllm-project/vllm/pull/4280 and /pull/4261 (~0.3 ms of a step's scheduling
    # after their optimisations), per sequence github.com/vllm-project/vllm/issues/6801 (it grows with the batch)
    schedule_base_us: float = 300.0
    schedule_per_seq_us: float = 10.0
    # the step's input tensors built on the host (positions, slot mapping, block tables, attention metadata):
    # github.com/vllm-project/vllm-ascend pull/2783 (2.5-5.9 ms of host work per step hidden by async scheduling)
    # and commit 710cf18 (~2 ms metadata build); per token ASSUMED (no figure found)
    prepare_base_us: float = 1000.0
    prepare_per_token_us: float = 0.1
    # greedy sampling: the argmax on the device and the token ids' copy back with its sync: vllm-ascend pull/4233
    # (~85 us sync) and pull/5761 (~250 us sync)
    sample_base_us: float = 200.0
    # output processing per sequence (stop checks, the response chunk): github.com/vllm-project/vllm/issues/6801 and
    # /pull/24174; detokenising one token: github.com/vllm-project/vllm/issues/5206 (19-21 us per call)
    output_per_seq_us: float = 20.0
    detokenize_per_token_us: float = 20.0

    def step_seconds(self, plan: StepPlan) -> float:
        seqs = len(plan.scheduled)
        sampled = sum(1 for s in plan.scheduled if s.samples)
        us = (self.schedule_base_us + self.schedule_per_seq_us * seqs + self.prepare_base_us
              + self.prepare_per_token_us * plan.num_tokens + self.sample_base_us
              + (self.output_per_seq_us + self.detokenize_per_token_us) * sampled)
        return us * 1e-6


def host_costs_for(engine: str) -> EngineHostCosts:
    """vLLM (V0 / V1) and MindIE: one set until a sourced MindIE figure tells them apart (none was found)."""
    return EngineHostCosts()


def swap_seconds(plan: StepPlan, block_bytes: int, prof) -> float:
    """MindIE's swaps: KV blocks copied out to / back from host memory over PCIe before the step runs, at the
    runtime profile's copy bandwidths (prof.d2h_gbps / h2d_gbps)."""
    return (plan.blocks_swapped_out * block_bytes / (prof.d2h_gbps * 1e9)
            + plan.blocks_swapped_in * block_bytes / (prof.h2d_gbps * 1e9))
