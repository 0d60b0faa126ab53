"""vLLM's V0 scheduler, which vllm-ascend v0.7.3 runs by default (vLLM 0.7.3, VLLM_USE_V1 unset).

Modelled on vLLM's vllm/core/scheduler.py (the V0 Scheduler as of the 0.7.x line, read from the stored copy of
vllm-project/vllm, with the concurrent-partial-prefill change #10235 whose default max_num_partial_prefills=1
changes nothing) and vllm/core/block_manager.py (SelfAttnBlockSpaceManager) with vllm/core/block/block_table.py.

Without chunked prefill (`_schedule_default`), a step is either prefills or decodes:
- the running sequences count against max_num_seqs first; then waiting sequences are admitted FCFS while the
  whole prompt (prompt + generated, for a recompute) fits the token budget max_num_batched_tokens (prefix-cache
  hits excepted), the sequence count allows, and its blocks fit leaving the watermark free (1% of the blocks,
  BlockSpaceManager's default watermark=0.01); the first that does not fit stops admission (head-of-line);
- only when no prefill was admitted, every running sequence decodes one token. A decode needs a free block
  "touched" by the append; V0 counts the block being appended to as touched even when it has room
  (BlockTable.get_num_blocks_touched_by_append_slots), so a decode is preempted whenever no block is free. The
  victim is the last running sequence not yet scheduled (the most recently admitted), else the sequence itself;
  preemption is by RECOMPUTE (single-sequence groups, _preempt): blocks freed, computed = 0, the generated tokens
  kept, and the victims go back to the front of the waiting queue (waiting.extendleft), earliest first.
  (V0 also wants a free block for a running prefill chunk whose last block is not full, though its slots were all
  allocated at admission; with max_num_partial_prefills 1 only the chunk itself can then be the victim, and on a
  cache under 100 blocks (no watermark) it is re-admitted and preempted again for ever. We let the chunk run.)
With chunked prefill (`_schedule_chunked_prefill`): running sequences first in their queue order (decodes, then
running prefills' next chunks), then new prefills, all inside the token budget; a prefill chunk takes what is left
of the budget, rounded down to a block multiple when prefix caching is on (that rounding also applies to a decode's
one token, so decodes stop when less than a block of budget is left); a sequence that gets 0 tokens ends the pass.
A chunked prefill's blocks are allocated for the whole prompt at admission.

Batch order in a plan is V0's: new prefills, running prefill chunks, then decodes (SchedulerOutputs)."""
from __future__ import annotations

from dataclasses import dataclass

from om_run.serve.request import Scheduled, Sequence, StepPlan
from om_run.serve.scheduler.base import Scheduler
from om_run.serve.scheduler.blocks import BlockManager
from om_run.serve.scheduler.vllm_settings import VllmSettings, check_kv_capacity

WATERMARK = 0.01   # vllm/core/interfaces.py BlockSpaceManager: watermark: float = 0.01


@dataclass
class _Budget:
    """V0's SchedulingBudget: tokens computed this step (cached prefix tokens are free) and sequences."""
    token_budget: int
    max_num_seqs: int
    tokens: int = 0
    seqs: int = 0

    def can_schedule(self, num_tokens: int, num_seqs: int) -> bool:
        return self.tokens + num_tokens <= self.token_budget and self.seqs + num_seqs <= self.max_num_seqs

    @property
    def remaining(self) -> int:
        return self.token_budget - self.tokens


class VllmV0Scheduler(Scheduler):
    """vLLM V0: prefill-first steps, or decode-first chunked steps with --enable-chunked-prefill."""

    def __init__(self, settings: VllmSettings, num_blocks: int) -> None:
        self.settings = settings.resolved()
        check_kv_capacity(self.settings, num_blocks)
        super().__init__(BlockManager(num_blocks, self.settings.block_size,
                                      caching=self.settings.enable_prefix_caching, evict_uncached_first=True))
        self.watermark_blocks = int(WATERMARK * num_blocks)

    def _rejection(self, seq: Sequence) -> str:
        reason = self._vllm_rejection(seq, self.settings.max_model_len)
        if reason:
            return reason
        need = self.blocks.blocks_for(self._kv_tokens(seq))
        if self.blocks.num_blocks - need < self.watermark_blocks:
            return (f"it needs {need} KV blocks; the cache has {self.blocks.num_blocks} of which V0 keeps "
                    f"{self.watermark_blocks} free (watermark): vLLM ignores it as exceeding the block manager")
        return ""

    def schedule(self, now_s: float | None = None) -> StepPlan | None:
        preempted: list[Sequence] = []
        while True:   # a step that only preempted is followed at once by the next (the engine runs nothing)
            scheduled, victims = (self._step_chunked() if self.settings.enable_chunked_prefill
                                  else self._step_default())
            preempted += victims
            if scheduled:
                return self._plan(scheduled, preempted)
            if not victims:
                return None

    # -- the two step policies ----------------------------------------------------------------------------------
    def _step_default(self) -> tuple[list[Scheduled], list[Sequence]]:
        budget = _Budget(self.settings.max_num_batched_tokens, self.settings.max_num_seqs, seqs=len(self.running))
        prefills = self._prefills(budget, chunking=False)
        if prefills:
            self.running += [item.seq for item in prefills]
            return prefills, []
        decodes, chunks, preempted, leftover = self._running_pass(budget, chunking=False)
        self.waiting.extendleft(preempted)
        self.running = leftover + [item.seq for item in decodes + chunks]
        return decodes, preempted

    def _step_chunked(self) -> tuple[list[Scheduled], list[Sequence]]:
        budget = _Budget(self.settings.max_num_batched_tokens, self.settings.max_num_seqs)
        decodes, chunks, preempted, leftover = self._running_pass(budget, chunking=True)
        prefills = self._prefills(budget, chunking=True)
        self.waiting.extendleft(preempted)
        self.running = leftover + [item.seq for item in decodes + chunks + prefills]
        return prefills + chunks + decodes, preempted

    # -- the passes ---------------------------------------------------------------------------------------------
    def _chunk(self, num_tokens: int, budget: _Budget) -> int:
        """A running or new sequence's share of what is left of the budget (block-aligned with prefix caching)."""
        remaining = budget.remaining
        if self.settings.enable_prefix_caching:
            remaining = remaining // self.blocks.block_size * self.blocks.block_size
        return min(num_tokens, remaining)

    def _running_pass(self, budget: _Budget, chunking: bool):
        """Schedule the running sequences in order; returns (decodes, prefill chunks, preempted, not reached)."""
        queue = list(self.running)
        decodes: list[Scheduled] = []
        chunks: list[Scheduled] = []
        preempted: list[Sequence] = []
        i = 0
        while i < len(queue):
            seq = queue[i]
            num = len(seq.tokens) - seq.computed if seq.in_prefill else 1
            if chunking:
                num = self._chunk(num, budget)
                if num == 0:
                    break
            i += 1
            fits = True
            while not seq.in_prefill and self.blocks.num_free < 1:   # a decode "touches" one block
                victim = queue.pop() if i < len(queue) else seq
                fits = victim is not seq
                self._preempt(victim)
                preempted.append(victim)
                if not fits:
                    break
            if not fits:
                continue
            self.blocks.allocate(seq, len(seq.tokens))
            (chunks if seq.in_prefill else decodes).append(Scheduled(seq, seq.computed, num))
            budget.tokens += num
            if chunking:
                budget.seqs += 1
        return decodes, chunks, preempted, queue[i:]

    def _prefills(self, budget: _Budget, chunking: bool) -> list[Scheduled]:
        """Admit waiting sequences FCFS until one does not fit."""
        out: list[Scheduled] = []
        size = self.blocks.block_size
        while self.waiting:
            seq = self.waiting[0]
            total = len(seq.tokens)
            hits = self.blocks.cached_prefix(seq, total)
            cached = len(hits) * size
            uncached = total - cached
            if uncached == 0:        # a full hit still computes the last token (for its logits)
                uncached, cached = 1, cached - 1
            if chunking:
                uncached = self._chunk(uncached, budget)
            if self.blocks.num_free - self.blocks.blocks_for(total) < self.watermark_blocks:
                break
            if uncached == 0 or not budget.can_schedule(uncached, 1):
                break
            self.waiting.popleft()
            self._admit(seq, total, hits)
            seq.computed = seq.cached_prefix = cached
            out.append(Scheduled(seq, cached, uncached))
            budget.tokens += uncached
            budget.seqs += 1
        return out
