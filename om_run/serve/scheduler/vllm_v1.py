"""vLLM's V1 unified scheduler, which current vllm-ascend releases run (vllm-ascend v0.23.0 pairs with vLLM v0.23.0).

Modelled on vllm/v1/core/sched/scheduler.py Scheduler.schedule and vllm/v1/core/kv_cache_manager.py (read from the
stored copies of vllm-project/vllm main at 00024d31 and 003df296; the policy below has held since V1 became the
default, vLLM 0.8), FCFS policy, long_prefill_token_threshold 0 and no speculative decoding (their defaults):
- no prefill or decode phase: each request has num_computed_tokens and num_tokens, and a step hands out tokens so
  that computed catches up; chunked prefill is always on unless disabled explicitly;
- RUNNING first, in list order: each gets min(tokens it lacks, budget left);
  its new blocks must be free (allocate_slots; no watermark by default — vLLM #44594 added one, off); if not, the
  last running request is preempted (self.running.pop()) by recompute — blocks freed (hashed ones stay cached),
  computed = 0, put at the front of the waiting queue — until it fits or it preempted itself;
- WAITING next, only if nothing was preempted this step: while the budget lasts and len(running) < max_num_seqs,
  the head request takes its prefix-cache hit (full blocks within its first num_tokens - 1 tokens: the last token
  is always computed, so a block-aligned full hit recomputes a whole block), then min(tokens it lacks, budget
  left); without chunked prefill a request that does not fit whole stops the pass; if its blocks are not free the
  pass stops (head-of-line). Blocks are named (cached) when scheduled, so a request later in the same step can hit
  them.
Where a user sees V0 and V1 differ: V0 runs a step of prefills or a step of decodes (new prompts stall every
running decode), V1 mixes decodes and prefill chunks in every step (decodes keep flowing, TTFT of long prompts is
spread over several steps); V0 preempts a decode whenever no block is free (even one with room in its last block),
V1 only when a new block is needed; V0 keeps a 1% watermark free at admission, V1 none; V1 has prefix caching on by
default, V0 off, and on a full hit V0 recomputes one token where V1 recomputes the last block; V1 skips admissions
in a step that preempted. Async scheduling (overlapping the next schedule with this step) is the engine loop's
concern, not modelled here.

Batch order in a plan: running requests (decodes and chunks) first, then the newly admitted."""
from __future__ import annotations

from om_run.serve.request import Scheduled, Sequence, StepPlan
from om_run.serve.scheduler.base import Scheduler
from om_run.serve.scheduler.blocks import BlockManager
from om_run.serve.scheduler.vllm_settings import VllmSettings, check_kv_capacity


class VllmV1Scheduler(Scheduler):
    """vLLM V1: one token budget per step shared by running requests first, then new ones."""

    def __init__(self, settings: VllmSettings, num_blocks: int) -> None:
        self.settings = settings.resolved()
        check_kv_capacity(self.settings, num_blocks)
        super().__init__(BlockManager(num_blocks, self.settings.block_size,
                                      caching=self.settings.enable_prefix_caching, evict_uncached_first=False))

    def _rejection(self, seq: Sequence) -> str:
        return self._vllm_rejection(seq, self.settings.max_model_len)

    def _computed(self, seq: Sequence) -> None:
        """V1 names blocks when it schedules them (allocate_slots -> cache_blocks), not after the step."""

    def schedule(self, now_s: float | None = None) -> StepPlan | None:
        preempted: list[Sequence] = []
        while True:   # a step that only preempted is followed at once by the next (the engine runs nothing)
            scheduled, victims = self._step()
            preempted += victims
            if scheduled:
                return self._plan(scheduled, preempted)
            if not victims:
                return None

    def _step(self) -> tuple[list[Scheduled], list[Sequence]]:
        budget = self.settings.max_num_batched_tokens
        scheduled: list[Scheduled] = []
        preempted: list[Sequence] = []
        i = 0
        while i < len(self.running) and budget > 0:
            seq = self.running[i]
            num = min(len(seq.tokens) - seq.computed, budget)
            lost = False
            while not lost and self.blocks.new_blocks_needed(seq, seq.computed + num) > self.blocks.num_free:
                victim = self.running.pop()
                self._preempt(victim)
                self.waiting.appendleft(victim)
                preempted.append(victim)
                lost = victim is seq
            if lost:
                break
            self.blocks.allocate(seq, seq.computed + num)
            self.blocks.commit(seq, seq.computed + num)
            scheduled.append(Scheduled(seq, seq.computed, num))
            budget -= num
            i += 1
        if preempted:
            return scheduled, preempted
        chunked = self.settings.enable_chunked_prefill
        while self.waiting and budget > 0 and len(self.running) < self.settings.max_num_seqs:
            seq = self.waiting[0]
            hits = self.blocks.cached_prefix(seq, len(seq.tokens) - 1)
            cached = len(hits) * self.blocks.block_size
            num = len(seq.tokens) - cached
            if not chunked and num > budget:
                break
            num = min(num, budget)
            need = self.blocks.blocks_for(cached + num) - len(hits) + self.blocks.evictable(hits)
            if need > self.blocks.num_free:
                break
            self.waiting.popleft()
            self._admit(seq, cached + num, hits)
            self.blocks.commit(seq, cached + num)
            self.running.append(seq)
            scheduled.append(Scheduled(seq, cached, num))
            budget -= num
        return scheduled, preempted
