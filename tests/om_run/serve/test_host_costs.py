"""The engine's host work per step: its named parts add up as their sources give them, MindIE's swapped KV
blocks cost their bytes over PCIe, V0's async output processor's lag, and the vLLM host's presets and task queue."""
from __future__ import annotations

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.host_costs import (
    VLLM_ASCEND,
    VLLM_ASCEND_TURBO,
    EngineHostCosts,
    V0AsyncOutput,
    V1Frontend,
    host_software,
    swap_seconds,
    task_queue_level,
)
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


def test_the_step_splits_into_the_work_before_its_forward_the_sampling_and_the_output():
    c = EngineHostCosts()
    p = plan(3, prefill=100)
    assert abs(c.before_forward_s(p) + c.sample_base_us * 1e-6 + c.output_s(p) - c.step_seconds(p)) < 1e-15
    assert abs(c.output_s(p) - 4 * (c.output_per_seq_us + c.detokenize_per_token_us) * 1e-6) < 1e-15


def test_v0s_async_output_hands_a_steps_tokens_over_after_the_next_step_is_prepared_and_issued():
    c = EngineHostCosts()
    out = V0AsyncOutput(c)
    nxt, cur = plan(2), plan(3)
    assert abs(out.lag_s(nxt, 0.012, cur) - (c.before_forward_s(nxt) + 0.012 + c.output_s(cur))) < 1e-15
    assert out.drain_s(cur) == c.output_s(cur)


def test_task_queue_enable_is_read_as_torch_npu_reads_it():
    assert task_queue_level({}) == 1
    assert [task_queue_level({"TASK_QUEUE_ENABLE": v}) for v in ("0", "1", "2")] == [0, 1, 2]
    for bad in ("3", "yes", "-1"):
        with pytest.raises(AtcError, match="TASK_QUEUE_ENABLE"):
            task_queue_level({"TASK_QUEUE_ENABLE": bad})
    assert host_software(False, None, {"TASK_QUEUE_ENABLE": "2"}).thread_layout == (0, 1, 1)
    assert host_software(False, None, {"TASK_QUEUE_ENABLE": "0"}).thread_layout == (0, 0, 0)


def test_the_host_presets_and_a_measured_dispatch():
    stock, turbo = host_software(False, None, {}), host_software(True, None, {})
    assert stock.dispatch_ns == VLLM_ASCEND.dispatch_ns and turbo.dispatch_ns == VLLM_ASCEND_TURBO.dispatch_ns
    assert turbo.dispatch_ns < stock.dispatch_ns          # MindIE Turbo's patched modules dispatch less per op
    own = host_software(True, 12.5, {})
    assert own.dispatch_ns == 12_500 and "--host-dispatch-us" in own.source


def test_vllms_v0_processes_its_output_asynchronously_and_v1_in_its_front_end():
    from om_run.serve.engine_config import EngineConfig
    from om_run.serve.scheduler.vllm_settings import VllmSettings

    def engine(name, scheduler):
        s = VllmSettings(scheduler=scheduler, max_model_len=256, block_size=16).resolved()
        return EngineConfig(name, s, "Ascend910B1", False, 16, 256, 256, 8, 64, False, False)
    assert engine("vllm", "v0").async_output and not engine("vllm", "v0").frontend_output
    assert not engine("vllm", "v1").async_output and engine("vllm", "v1").frontend_output
    assert not engine("mindie", "v0").async_output and not engine("mindie", "v0").frontend_output


def test_v1s_engine_core_leaves_detokenising_to_its_front_end():
    c = EngineHostCosts()
    p = plan(3, prefill=100)
    v1 = V1Frontend(c)
    assert abs(v1.step_s(p) + v1.delivery_s(p) - c.step_seconds(p)) < 1e-15
    assert abs(v1.delivery_s(p) - 4 * c.detokenize_per_token_us * 1e-6) < 1e-15
