"""The engine's own host work around each model step, as named parameters: what TTFT and TPOT carry besides the
kernels (the kernels' launches and tilings are the simulator's: om_run/sim). Each value names its source; the
figures were measured on GPU hosts unless the source says Ascend (no Ascend-host figure was found for them; the
session notes list what is still open). None is fitted to the serving-fidelity rows."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

from atc_py.common.errors import AtcError

from .request import StepPlan


@dataclass(frozen=True)
class HostSoftware:
    """The host software a vLLM engine's eager steps go through: PyTorch and torch_npu dispatching each op before it
    reaches the runtime (what om-run's host executor prices as the runtime's InferShape, tiling and launch comes
    on top). `dispatch_ns` is per op; `source` says where it comes from."""
    name: str
    dispatch_ns: int
    source: str
    task_queue: int = 1          # torch_npu's TASK_QUEUE_ENABLE

    @property
    def thread_layout(self) -> tuple[int, int, int]:
        """The host thread of each stage of an eager op (InferShape+Tiling, Alloc, Launch): TASK_QUEUE_ENABLE=0 runs
        all on the Python thread; 1 (torch_npu's default) moves the aclnn calls that launch kernels to a second
        pipeline thread; 2 moves the workspace allocation there too (torch_npu's environment-variable reference,
        hiascend.com Pytorch apiref Envir_019)."""
        return TASK_QUEUE_LAYOUTS[self.task_queue]


# vllm-ascend v0.7.3 as its container image installs it (the stock Python, torch and torch_npu, TASK_QUEUE_ENABLE=1):
# DERIVED from that release's benchmark (github.com/vllm-project/vllm-ascend/issues/776, Atlas 800I A2): its two
# offline latency rows (8 x 32 tokens in, 128 out: 4274.96 and 4128.36 ms) give 44.3 and 42.1 us an op on the
# simulated step (`python -m bench.host_calibration`); their mean. Checked against the same release's online rows
# (docs/serving-fidelity.md). Was 20 us, MindSpore's vLLM graph-capture guide's generic figure
VLLM_ASCEND = HostSoftware("vllm-ascend", 43_000, "derived: vllm-ascend v0.7.3's release benchmark, its two offline "
                           "latency rows (github.com/vllm-project/vllm-ascend/issues/776; bench/host_calibration.py)")
# the same with MindIE Turbo installed (its patched vLLM modules and fused ops): DERIVED from the same release's
# online rows with MindIE Turbo (median TPOT and ITL at 1 and 4 requests/s: 22.9, 23.3, 21.7, 25.0 us an op)
VLLM_ASCEND_TURBO = HostSoftware("vllm-ascend + MindIE Turbo", 23_000, "derived: vllm-ascend v0.7.3's release "
                                 "benchmark with MindIE Turbo, its four online median rows (issues/776)")
MAX_DISPATCH_US = 10_000.0      # --host-dispatch-us above 10 ms an op is no host a deployer runs


TASK_QUEUE_LAYOUTS = {0: (0, 0, 0), 1: (0, 0, 1), 2: (0, 1, 1)}


def task_queue_level(environ=None) -> int:
    """TASK_QUEUE_ENABLE as torch_npu reads it (0, 1 or 2; unset: 1)."""
    raw = (os.environ if environ is None else environ).get("TASK_QUEUE_ENABLE", "").strip()
    if not raw:
        return 1
    if raw not in ("0", "1", "2"):
        raise AtcError("E10001", value=raw, parameter="TASK_QUEUE_ENABLE", reason="torch_npu takes 0, 1 or 2")
    return int(raw)


def host_software(turbo: bool, dispatch_us: float | None, environ=None) -> HostSoftware:
    """The vLLM host: the preset (MindIE Turbo or not) or the user's own measured dispatch per op, with the task
    queue TASK_QUEUE_ENABLE sets."""
    base = VLLM_ASCEND_TURBO if turbo else VLLM_ASCEND
    level = task_queue_level(environ)
    if dispatch_us is not None:
        base = HostSoftware(f"{base.name} (--host-dispatch-us)", int(round(dispatch_us * 1000)), "--host-dispatch-us")
    return replace(base, task_queue=level)


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

    def before_forward_s(self, plan: StepPlan) -> float:
        """Scheduling and input preparation: the host's work before the step's forward is called."""
        return (self.schedule_base_us + self.schedule_per_seq_us * len(plan.scheduled) + self.prepare_base_us
                + self.prepare_per_token_us * plan.num_tokens) * 1e-6

    def output_s(self, plan: StepPlan) -> float:
        """Processing the step's sampled tokens: stop checks, detokenising, the response chunks."""
        return self.engine_output_s(plan) + self.detokenize_s(plan)

    def engine_output_s(self, plan: StepPlan) -> float:
        """The stop checks and response chunks of the step's sampled tokens."""
        return self.output_per_seq_us * _sampled(plan) * 1e-6

    def detokenize_s(self, plan: StepPlan) -> float:
        """Detokenising the step's sampled tokens."""
        return self.detokenize_per_token_us * _sampled(plan) * 1e-6

    def step_seconds(self, plan: StepPlan) -> float:
        return self.before_forward_s(plan) + self.sample_base_us * 1e-6 + self.output_s(plan)


def _sampled(plan: StepPlan) -> int:
    return sum(1 for s in plan.scheduled if s.samples)


@dataclass(frozen=True)
class V1Frontend:
    """vLLM V1: the engine core schedules, prepares, runs, samples and checks stops; the API server's own process
    detokenises each step's outputs while the core runs the next step (vLLM's V1 architecture,
    blog.vllm.ai/2025/01/27/v1-alpha-release.html: detokenisation moved out of the engine loop and overlapped with
    it). So the step carries no detokenising, and its tokens leave once the front end has detokenised them."""
    host: EngineHostCosts

    def step_s(self, plan: StepPlan) -> float:
        return self.host.step_seconds(plan) - self.host.detokenize_s(plan)

    def delivery_s(self, plan: StepPlan) -> float:
        return self.host.detokenize_s(plan)


@dataclass(frozen=True)
class V0AsyncOutput:
    """vLLM V0's asynchronous output processor (on wherever the platform allows it; vllm-ascend's NPUPlatform
    returns True from is_async_output_supported, eager or not): the engine appends step N's tokens to their
    sequences, schedules and prepares step N + 1, and its model runner calls the processor back once step N + 1's
    forward and logits are issued, before sampling waits on the device (vllm-ascend v0.7.3,
    vllm_ascend/worker/model_runner.py execute_model: async_callback after compute_logits). Step N's tokens reach
    the client then; with nothing scheduled after step N, the engine drains them at once."""
    host: EngineHostCosts

    def lag_s(self, next_plan: StepPlan, next_issued_s: float, plan: StepPlan) -> float:
        return self.host.before_forward_s(next_plan) + next_issued_s + self.host.output_s(plan)

    def drain_s(self, plan: StepPlan) -> float:
        return self.host.output_s(plan)


def host_costs_for(engine: str) -> EngineHostCosts:
    """vLLM (V0 / V1) and MindIE: one set until a sourced MindIE figure tells them apart (none was found)."""
    return EngineHostCosts()


def swap_seconds(plan: StepPlan, block_bytes: int, prof) -> float:
    """MindIE's swaps: KV blocks copied out to / back from host memory over PCIe before the step runs, at the
    runtime profile's copy bandwidths (prof.d2h_gbps / h2d_gbps)."""
    return (plan.blocks_swapped_out * block_bytes / (prof.d2h_gbps * 1e9)
            + plan.blocks_swapped_in * block_bytes / (prof.h2d_gbps * 1e9))
