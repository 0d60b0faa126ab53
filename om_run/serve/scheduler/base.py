"""What every engine scheduler offers the engine loop, and the bookkeeping they share.

The loop adds each arriving request's Sequence (`add`; a request that can never fit is REJECTED there with a
reason, as the served engine fails it), asks for a step (`schedule`: a StepPlan, or None when nothing can run now),
prices and runs the step, then reports it back (`update`: the planned tokens are now in the KV cache, the sampled
token of each sequence whose prompt the step finished is appended, finished sequences give back their blocks)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque

from om_run.serve.request import FINISHED, REJECTED, RUNNING, WAITING, Scheduled, Sequence, StepPlan
from om_run.serve.scheduler.blocks import BlockManager


class Scheduler(ABC):
    """One engine's scheduling policy over a BlockManager: a waiting queue (FCFS) and a running list."""

    def __init__(self, blocks: BlockManager) -> None:
        self.blocks = blocks
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.rejected: list[Sequence] = []
        self._order: dict[Sequence, int] = {}

    # -- the engine loop's interface ----------------------------------------------------------------------------
    def add(self, seq: Sequence) -> bool:
        """Queue an arriving sequence, or reject it (status REJECTED, `seq.reason` says why) when it can never
        run; True when queued."""
        reason = self._rejection(seq)
        if reason:
            seq.status, seq.reason = REJECTED, reason
            self.rejected.append(seq)
            return False
        seq.status = WAITING
        self._order[seq] = len(self._order)
        self.waiting.append(seq)
        return True

    @abstractmethod
    def schedule(self, now_s: float | None = None) -> StepPlan | None:
        """The next step's plan, or None when nothing can run now. `now_s` is the simulated clock, for the
        policies that wait on time (MindIE's queue delay); vLLM's ignore it."""

    def update(self, plan: StepPlan, sampled: dict[Sequence, int]) -> list[Sequence]:
        """The step ran: advance `computed` by the planned tokens, append each sampled token, finish and free the
        sequences that have all their output; returns those."""
        for item in plan.scheduled:
            item.seq.computed = item.start + item.num_tokens
            self._computed(item.seq)
        for seq, token in sampled.items():
            seq.tokens.append(token)
        finished = [item.seq for item in plan.scheduled if self._is_finished(item.seq)]
        for seq in finished:
            self.blocks.free(seq, forget=True)
            seq.status = FINISHED
            self._order.pop(seq, None)
        if finished:
            self._drop_finished()
        return finished

    @property
    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    @property
    def num_free_blocks(self) -> int:
        return self.blocks.num_free

    @property
    def wake_s(self) -> float | None:
        """When schedule() returned None although sequences wait: the clock time at which it may return a plan
        without any new arrival (None: only an arrival or nothing changes that)."""
        return None

    # -- hooks and helpers for the policies ---------------------------------------------------------------------
    @abstractmethod
    def _rejection(self, seq: Sequence) -> str:
        """Why this sequence can never run here ('' when it can)."""

    def _computed(self, seq: Sequence) -> None:
        """After a step: name the full blocks now computed (V0 and MindIE mark blocks computed after the step)."""
        self.blocks.commit(seq, seq.computed)

    def _is_finished(self, seq: Sequence) -> bool:
        return seq.done

    def _drop_finished(self) -> None:
        self.running = [s for s in self.running if s.status != FINISHED]

    def _admit(self, seq: Sequence, num_tokens: int, hits: list[int]) -> int:
        """Allocate a waiting sequence's blocks (cached `hits` first) and mark it running; returns the tokens the
        hits supply, by which `computed` now starts."""
        self.blocks.allocate(seq, num_tokens, hits)
        cached = len(hits) * self.blocks.block_size
        seq.computed = seq.cached_prefix = cached
        seq.status = RUNNING
        return cached

    def _preempt(self, seq: Sequence) -> None:
        """Preemption by recompute: the blocks go back (cached ones stay findable), the sequence keeps its tokens
        (prompt and those generated) and must prefill them all again."""
        self.blocks.free(seq)
        seq.computed = 0
        seq.cached_prefix = 0
        seq.status = WAITING
        seq.preemptions += 1

    def _plan(self, scheduled: list[Scheduled], preempted: list[Sequence]) -> StepPlan:
        return StepPlan(scheduled=scheduled, preempted=preempted, blocks_in_use=self.blocks.num_used,
                        num_blocks=self.blocks.num_blocks)

    def _vllm_rejection(self, seq: Sequence, max_model_len: int) -> str:
        """vLLM's request checks, in its words (OpenAI server input validation, SamplingParams): a prompt, at least
        one output token, prompt + output within max_model_len."""
        req = seq.request
        if req.prompt_len < 1:
            return "The decoder prompt cannot be empty"
        if req.output_len < 1:
            return f"max_tokens must be at least 1, got {req.output_len}."
        if req.prompt_len + req.output_len > max_model_len:
            return (f"This model's maximum context length is {max_model_len} tokens. However, you requested "
                    f"{req.prompt_len + req.output_len} tokens ({req.prompt_len} in the messages, {req.output_len} "
                    "in the completion). Please reduce the length of the messages or completion.")
        return ""

    def _kv_tokens(self, seq: Sequence, output_len: int | None = None) -> int:
        """KV slots a sequence needs at its longest: prompt and output but the last sampled token."""
        out = seq.request.output_len if output_len is None else output_len
        return seq.request.prompt_len + out - 1
