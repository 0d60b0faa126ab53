"""MindIE-LLM's scheduler in its PD-mixed ("Standard", PnD) deployment, driven by config.json's ScheduleConfig.

Read from MindIE-LLM's source and docs (gitcode.com/Ascend/MindIE-LLM, mirrored at github.com/Ascend/MindIE-LLM;
S = src/scheduler/scheduler.cpp, F = src/scheduler/policy/fcfs_policy.cpp, D = docs/zh/user_guide/user_manual/
service_parameter_configuration.md, "ScheduleConfig参数说明", online as https://www.hiascend.com/document/detail/en/
mindie/230/LLMframe/llmdev/mindie_service0285.html). Its FCFS policy and block manager are ports of vLLM V0's.

A step is all prefills or all decodes (D templateType "Standard": Prefill和Decode请求各自组batch). Which one
(S DecidePDPriority, in this order):
1. the previous step scheduled nothing and requests are running -> decode;
2. supportSelectBatch true (stageSelectPolicy 1, src/scheduler/policy/stage_policy/tpt_stage_policy.cpp;
   D prefillTimeMsPerReq): with requests
   waiting, prefillWaitTime = prefillTimeMsPerReq x running and accumulatedDecodeWasteTime += decodeTimeMsPerReq
   x (maxBatchSize - running) (when running <= maxBatchSize); prefillWaitTime > waste -> decode, else prefill and
   the waste restarts from 0; nothing waiting -> decode (waste restarts);
3. otherwise (supportSelectBatch false, "优先调度和执行Prefill阶段的请求"): decode if requests are swapped out, or
   the waiting queue is not ready, or fewer than 5% of the blocks are free (PRESERVED_FACTOR_FOR_DECODE); else
   prefill. The queue is ready when its oldest request has waited maxQueueDelayMicroseconds, or at once when
   maxQueueDelayMicroseconds > 5000 and maxPrefillBatchSize requests wait (S ShouldImmediatePrefill; D: "请求在
   队列中的最大等待时间 ... 也要进行下一次推理").
A step that schedules nothing is followed at once by the next (S MarkLastScheduleEmpty).

Prefill step (F ApplyToWaitingQueue): the first 2 x maxPrefillBatchSize waiting requests are candidates, fresh ones
before recomputes (S DequeueWaiting); FCFS until one does not fit: all of its blocks free (no watermark; a recompute
that would take exactly every free block waits), at most maxPrefillBatchSize requests, and their uncached tokens
within max(maxSeqLen, maxPrefillTokens) (S Schedule: "maxSeqLen和maxPrefillTokens哪个大" — D says maxPrefillTokens;
they differ only when maxSeqLen is larger). A fresh request that cannot get blocks after waiting longer than
maxFirstTokenWaitTime makes the next decode step preempt one request for it (F newRequestFirst_).
Decode step (F ApplyToRunningQueue): the first 2 x maxBatchSize running requests are candidates; each in order
decodes while fewer than maxBatchSize do (D: 最大decode batch size); one that needs a new block that is not free
preempts the last candidate (else itself): by swap to host memory while fewer than maxPreemptCount were swapped in
this step and the host has room (F Preempt; D: "每一批次最大可抢占请求的上限"), else by recompute. Only when
nothing was preempted, swapped-out requests come back (FCFS, all their blocks free) as decodes (MindIE checks
maxBatchSize for each but does not count them in it: F ApplyToSwappedQueue skips AddNumSeqs). Afterwards the
candidates not reached go to the front of the running queue and the decoded to its back, in arrival order;
recomputed requests go to the BACK of the waiting queue (S BackfillConcurrentQueue), unlike vLLM.
Admission (add): MindIE errors a prompt longer than min(maxInputTokenLen, maxSeqLen - 1) (truncation off; D
maxInputTokenLen) and cuts the output at min(maxIterTimes, max_tokens, maxSeqLen - prompt) (D maxIterTimes); a
request whose blocks exceed the whole cache is rejected. Prefix caching (plugin prefix_cache) works as V0's.
Where the sources are silent we do what vLLM V0 does; SplitFuse (templateType "Mix") is not modelled."""
from __future__ import annotations

from collections import deque

from atc_py.common.errors import AtcError
from om_run.serve.request import RUNNING, Scheduled, Sequence, StepPlan
from om_run.serve.scheduler.base import Scheduler
from om_run.serve.scheduler.blocks import BlockManager
from om_run.serve.scheduler.mindie_config import MindieConfig

SWAPPED = "swapped"
PREFILL, DECODE = "prefill", "decode"
PRESERVED_FACTOR_FOR_DECODE = 0.05     # src/scheduler/scheduler.h
DEFAULT_QUEUE_DELAY_US = 5000          # src/scheduler/scheduler.h defaultMaxQueueDelayMicroseconds
CANDIDATES_PER_SLOT = 2                # src/scheduler/scheduler.cpp PREPARE_DATA_EXPANSION_FACTOR


class MindieScheduler(Scheduler):
    """MindIE PD-mixed scheduling: prefill steps and decode steps chosen by queue delay or the select-batch cost
    model. `num_cpu_blocks` bounds the host swap space in blocks (None: as much as is asked)."""

    def __init__(self, config: MindieConfig, num_blocks: int, num_cpu_blocks: int | None = None) -> None:
        if config.splitfuse or config.template_type == "Mix":
            raise AtcError("E10055", reason="MindIE SplitFuse (templateType \"Mix\" or plugin_type splitfuse in "
                                            f"{config.path or 'config.json'}) is not simulated")
        super().__init__(BlockManager(num_blocks, config.cache_block_size, caching=config.prefix_cache,
                                      evict_uncached_first=True))
        self.config = config
        self.swapped: deque[Sequence] = deque()
        self.num_cpu_blocks = num_cpu_blocks
        self.cpu_blocks_used = 0
        self._cpu_held: dict[Sequence, tuple[int, int]] = {}   # host blocks reserved, device blocks copied
        self.reserve_blocks = int(PRESERVED_FACTOR_FOR_DECODE * num_blocks)
        self._last_empty = False
        self.decode_waste_ms = 0
        self._new_request_first = False

    # -- admission and finishing --------------------------------------------------------------------------------
    def _cap(self, seq: Sequence) -> int:
        """The output MindIE produces: min(maxIterTimes, max_tokens, maxSeqLen - prompt)."""
        req = seq.request
        return min(self.config.max_iter_times, req.output_len, self.config.max_seq_len - req.prompt_len)

    def _rejection(self, seq: Sequence) -> str:
        req, cfg = seq.request, self.config
        if req.prompt_len < 1:
            return "the prompt is empty"
        if req.output_len < 1:
            return f"max_tokens must be at least 1, got {req.output_len}"
        if req.prompt_len > cfg.input_limit:
            cut = " (truncation is not simulated)" if cfg.truncation else ""
            return (f"the prompt has {req.prompt_len} tokens, more than min(maxInputTokenLen, maxSeqLen - 1) = "
                    f"{cfg.input_limit}{cut}")
        need = self.blocks.blocks_for(self._kv_tokens(seq, self._cap(seq)))
        if need > self.blocks.num_blocks:
            return f"it needs {need} KV blocks but the cache has {self.blocks.num_blocks}: it can never run"
        return ""

    def _is_finished(self, seq: Sequence) -> bool:
        cap = self._cap(seq)
        if seq.generated >= cap and cap < seq.request.output_len:
            seq.reason = (f"output cut at {cap} tokens: MindIE caps it at min(maxIterTimes, max_tokens, "
                          "maxSeqLen - prompt)")
        return seq.generated >= cap

    @property
    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running or self.swapped)

    @property
    def wake_s(self) -> float | None:
        """With only waiting requests and no select-batch, a prefill waits for the oldest to age by the delay."""
        if self.waiting and not self.running and not self.swapped and not self.config.support_select_batch:
            return self.waiting[0].request.arrival_s + self.config.max_queue_delay_us * 1e-6
        return None

    # -- the step -----------------------------------------------------------------------------------------------
    def schedule(self, now_s: float | None = None) -> StepPlan | None:
        """`now_s` None: every queue delay has passed and no request has waited past maxFirstTokenWaitTime."""
        preempted: list[Sequence] = []
        while True:
            was_empty = self._last_empty
            if self._decide(now_s) == PREFILL:
                scheduled, victims, moved = self._prefill_step(now_s), [], (0, 0)
            else:
                scheduled, victims, moved = self._decode_step()
            preempted += victims
            if scheduled:
                self._last_empty = False
                plan = self._plan(scheduled, preempted)
                plan.blocks_swapped_out, plan.blocks_swapped_in = moved
                return plan
            self._last_empty = True
            if was_empty and not victims:
                return None

    def _decide(self, now_s: float | None) -> str:
        if self._last_empty and self.running:
            return DECODE
        if self.config.support_select_batch:
            return self._select_batch()
        if self.swapped or not self._queue_ready(now_s) or self.blocks.num_free < self.reserve_blocks:
            return DECODE
        return PREFILL

    def _queue_ready(self, now_s: float | None) -> bool:
        cfg = self.config
        if not self.waiting:
            return False
        if cfg.max_queue_delay_us > DEFAULT_QUEUE_DELAY_US and len(self.waiting) >= cfg.max_prefill_batch_size:
            return True
        if now_s is None:
            return True
        return now_s - self.waiting[0].request.arrival_s >= cfg.max_queue_delay_us * 1e-6 - 1e-12

    def _select_batch(self) -> str:
        """supportSelectBatch's cost model (TptStagePolicy::Apply)."""
        cfg, running = self.config, len(self.running)
        if not self.waiting:
            self.decode_waste_ms = 0
            return DECODE
        if running <= cfg.max_batch_size:
            self.decode_waste_ms += cfg.decode_time_ms_per_req * (cfg.max_batch_size - running)
        if cfg.prefill_time_ms_per_req * running > self.decode_waste_ms:
            return DECODE
        self.decode_waste_ms = 0
        return PREFILL

    def _requeue_front(self, queue: deque[Sequence], seqs) -> None:
        queue.extendleft(reversed(sorted(seqs, key=self._order.__getitem__)))

    def _prefill_step(self, now_s: float | None) -> list[Scheduled]:
        cfg, size = self.config, self.blocks.block_size
        token_budget = max(cfg.max_seq_len, cfg.max_prefill_tokens)
        window = [self.waiting.popleft() for _ in range(min(len(self.waiting),
                                                            CANDIDATES_PER_SLOT * cfg.max_prefill_batch_size))]
        candidates = deque([s for s in window if s.generated == 0] + [s for s in window if s.generated > 0])
        out: list[Scheduled] = []
        tokens = 0
        while candidates:
            seq = candidates[0]
            total = len(seq.tokens)
            need = self.blocks.blocks_for(total)
            if seq.generated > 0 and need == self.blocks.num_free:
                break
            hits = self.blocks.cached_prefix(seq, total)
            cached = len(hits) * size
            uncached = total - cached
            if uncached == 0:
                uncached, cached = 1, cached - 1
            if need > self.blocks.num_free:
                waited_ms = None if now_s is None else (now_s - seq.request.arrival_s) * 1000
                if seq.generated == 0 and waited_ms is not None and waited_ms > cfg.max_first_token_wait_ms:
                    self._new_request_first = True
                break
            if tokens + uncached > token_budget or len(out) + 1 > cfg.max_prefill_batch_size:
                break
            candidates.popleft()
            self._admit(seq, total, hits)
            seq.computed = seq.cached_prefix = cached
            out.append(Scheduled(seq, cached, uncached))
            tokens += uncached
        self._requeue_front(self.waiting, candidates)
        self.running += [item.seq for item in out]
        return out

    def _decode_step(self) -> tuple[list[Scheduled], list[Sequence], tuple[int, int]]:
        cfg = self.config
        token_budget = max(cfg.max_seq_len, cfg.max_prefill_tokens)
        slots = CANDIDATES_PER_SLOT * cfg.max_batch_size
        taken = min(len(self.running), slots)
        candidates = deque(self.running[:taken])
        rest = self.running[taken:]
        decodes: list[Scheduled] = []
        recomputed: list[Sequence] = []
        swapped_out: list[Sequence] = []
        moved_out = moved_in = tokens = seqs = 0
        while candidates and tokens + 1 <= token_budget and seqs + 1 <= cfg.max_batch_size:
            seq = candidates.popleft()
            fits = True
            while fits and (self.blocks.new_blocks_needed(seq, len(seq.tokens)) > self.blocks.num_free
                            or self._new_request_first):
                victim = candidates.pop() if candidates else seq
                fits = victim is not seq
                host = self.blocks.blocks_for(len(victim.tokens))
                if len(swapped_out) < cfg.max_preempt_count and self._host_fits(host):
                    moved_out += self._swap_out(victim, host)
                    swapped_out.append(victim)
                else:
                    self._preempt(victim)
                    recomputed.append(victim)
                self._new_request_first = False
            if fits:
                self.blocks.allocate(seq, len(seq.tokens))
                decodes.append(Scheduled(seq, seq.computed, 1))
                tokens += 1
                seqs += 1
        if not recomputed and not swapped_out:
            for _ in range(min(len(self.swapped), slots - taken)):
                seq = self.swapped[0]
                if self.blocks.blocks_for(len(seq.tokens)) > self.blocks.num_free:
                    break
                if tokens + 1 > token_budget or seqs + 1 > cfg.max_batch_size:
                    break
                self.swapped.popleft()
                moved_in += self._swap_in(seq)
                decodes.append(Scheduled(seq, seq.computed, 1))
                tokens += 1           # MindIE does not count a swapped-in request against maxBatchSize
        order = self._order.__getitem__
        self.running = sorted(candidates, key=order) + rest + sorted((d.seq for d in decodes), key=order)
        decodes.sort(key=lambda item: order(item.seq))
        self.waiting.extend(recomputed)
        self.swapped.extend(swapped_out)
        return decodes, recomputed + swapped_out, (moved_out, moved_in)

    # -- host swap ----------------------------------------------------------------------------------------------
    def _host_fits(self, num: int) -> bool:
        return self.num_cpu_blocks is None or self.cpu_blocks_used + num <= self.num_cpu_blocks

    def _swap_out(self, seq: Sequence, host_blocks: int) -> int:
        """Copy a running request's KV to host memory: it keeps its computed tokens and waits in `swapped`."""
        moved = len(seq.block_ids)
        self.blocks.free(seq)
        self.cpu_blocks_used += host_blocks
        self._cpu_held[seq] = (host_blocks, moved)
        seq.status = SWAPPED
        seq.preemptions += 1
        return moved

    def _swap_in(self, seq: Sequence) -> int:
        """Copy a swapped request's KV back (and give it the slot for its next token); returns blocks copied."""
        host_blocks, moved = self._cpu_held.pop(seq)
        self.cpu_blocks_used -= host_blocks
        self.blocks.allocate(seq, len(seq.tokens))
        self.blocks.commit(seq, seq.computed)
        seq.status = RUNNING
        return moved
