"""The engine loop of a serving benchmark in simulated time: requests arrive (as the benchmark client sends them,
at most --max-concurrency in flight), the scheduler plans each step, the step costs what the engine's host work
and the compiled decoder's step cost, and every sampled token reaches the client when its step ends (plus its
front end's processing: vLLM V1) - or, with an asynchronous output processor (vLLM's V0 engine), while the next
step runs: that engine processes step N's output (stop checks, detokenising, the response) in a callback the next
step's forward call returns to, so step N's tokens leave once step N + 1 has been scheduled, prepared and issued."""
from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Protocol

from .request import REJECTED, Request, RequestRecord, Sequence, StepPlan, StepRecord


@dataclass
class LoopResult:
    records: list[RequestRecord]
    steps: list[StepRecord]
    duration_s: float
    max_in_flight: int = 0
    preemptions: int = 0
    extras: dict = field(default_factory=dict)


class AsyncOutput(Protocol):
    """When an asynchronous output processor hands a step's tokens to the client."""

    def lag_s(self, next_plan: StepPlan, next_issued_s: float, plan: StepPlan) -> float:
        """Seconds from the start of the step after `plan` until `plan`'s tokens leave (its forward issued)."""

    def drain_s(self, plan: StepPlan) -> float:
        """Seconds after `plan`'s end until its tokens leave when no step follows (the engine drains them)."""


def _lengths(plan: StepPlan) -> tuple[list[int], list[int]]:
    return [s.num_tokens for s in plan.scheduled], [s.start + s.num_tokens for s in plan.scheduled]


def run_loop(requests: list[Request], scheduler, step_cost: Callable[[list[int], list[int], bool], tuple[float, float]],
             host_cost: Callable[[StepPlan], float], sample: Callable[[StepPlan], dict] | None = None,
             max_concurrency: int | None = None, progress: Callable[[float, int, int], None] | None = None,
             max_steps: int = 50_000_000, collectives: Callable[[list[int]], list] | None = None,
             async_output: AsyncOutput | None = None,
             delivery: Callable[[StepPlan], float] | None = None) -> LoopResult:
    """Run `requests` to completion. step_cost(q_lens, kv_lens, same_shape_as_last) -> (seconds, device seconds,
    issued seconds: when the forward's last kernel was launched);
    host_cost(plan) -> the engine's own seconds around the model (scheduling, input preparation, sampling,
    output processing); sample(plan) -> {Sequence: token id} (None: placeholder tokens, timing only);
    collectives(q_lens) -> the step's collectives (tensor parallel: StepPricer.collectives), kept on its record;
    async_output: the engine's asynchronous output processor (None: tokens leave at their step's end); delivery(plan):
    the seconds after a step's end until its tokens leave (a front end that processes outputs apart: vLLM V1)."""
    pending = deque(sorted(requests, key=lambda r: (r.arrival_s, int(r.request_id) if r.request_id.isdigit() else 0)))
    records: dict[str, RequestRecord] = {}
    seqs: dict[str, Sequence] = {}
    now, in_flight, peak, preemptions = 0.0, 0, 0, 0
    steps: list[StepRecord] = []
    last_shape = None
    done = 0
    free_slots = [0.0] * (max_concurrency or 0)      # when each client slot became free (a semaphore's)
    held = None     # (plan, end, sampled seqs, finished seqs) whose tokens the async output processor still holds

    def deliver(sampled, finished, t: float) -> None:
        for seq in sampled:
            records[seq.request.request_id].token_s.append(t)
        if max_concurrency:
            for _ in finished:
                heapq.heappush(free_slots, t)

    def drain() -> None:
        nonlocal held
        if held is not None:
            plan0, end0, sampled0, finished0 = held
            deliver(sampled0, finished0, end0 + async_output.drain_s(plan0))
            held = None

    def slot_free_by(t: float) -> bool:
        """A client slot is free by `t` (a slot frees when its request's last token reaches the client)."""
        return bool(free_slots) and free_slots[0] <= t

    def next_send() -> float | None:
        """When the client sends its next request (its arrival, or a slot freeing after it), if it can."""
        if not pending:
            return None
        if not max_concurrency:
            return pending[0].arrival_s
        return max(pending[0].arrival_s, free_slots[0]) if free_slots else None

    def admit(until: float) -> None:
        nonlocal in_flight, peak, done
        while pending and pending[0].arrival_s <= until and (not max_concurrency or slot_free_by(until)):
            r = pending.popleft()
            sent = max(r.arrival_s, heapq.heappop(free_slots)) if max_concurrency else r.arrival_s
            rec = RequestRecord(r.request_id, sent, r.prompt_len, r.output_len, queued_s=sent - r.arrival_s)
            records[r.request_id] = rec
            seq = Sequence(r, list(r.prompt_ids) if r.prompt_ids is not None else [0] * r.prompt_len)
            scheduler.add(seq)
            if seq.status == REJECTED:
                rec.error = getattr(seq, "reason", "") or "rejected by the engine"
                done += 1
                if max_concurrency:
                    heapq.heappush(free_slots, sent)
                continue
            seqs[r.request_id] = seq
            in_flight += 1
            peak = max(peak, in_flight)

    while pending or scheduler.has_unfinished:
        if len(steps) >= max_steps:
            raise RuntimeError(f"more than {max_steps} engine steps")
        admit(now)
        plan = scheduler.schedule(now) if scheduler.has_unfinished else None
        if plan is None or not plan.scheduled:
            drain()
            wake = getattr(scheduler, "wake_s", None)   # a scheduler holding a batch back until then (MindIE)
            wake = wake() if callable(wake) else wake
            nxt = next_send()
            times = [t for t in (wake, nxt) if t is not None and t > now]
            if not times:
                if not pending and not scheduler.has_unfinished:
                    break
                raise RuntimeError("the engine plans nothing and nothing will change: requests can never run")
            now = min(times)
            continue
        q, kv = _lengths(plan)
        shape = (sum(q), len(q))
        model_s, device_s, issued_s = step_cost(q, kv, shape == last_shape)
        last_shape = shape
        host_s = host_cost(plan)
        start, end = now, now + model_s + host_s
        if held is not None:
            deliver(held[2], held[3], start + async_output.lag_s(plan, issued_s, held[0]))
            held = None
        sampled = sample(plan) if sample is not None else {s.seq: 0 for s in plan.scheduled if s.samples}
        preemptions += len(plan.preempted)
        for s in plan.preempted:
            records[s.request.request_id].preemptions += 1
        finished = scheduler.update(plan, sampled)
        if async_output is not None:
            held = (plan, end, list(sampled), list(finished))
        else:
            deliver(sampled, finished, end + (delivery(plan) if delivery is not None else 0.0))
        in_flight -= len(finished)
        done += len(finished)
        colls = tuple(collectives(q)) if collectives is not None else ()
        steps.append(StepRecord(len(steps), start, end, len(q), plan.num_prefill_tokens, plan.num_decode_tokens,
                                plan.blocks_in_use, plan.num_blocks, len(plan.preempted),
                                _waiting(scheduler), device_s, host_s, sum(c * s for _, c, _, s in colls), colls))
        now = end
        if progress is not None:
            progress(now, done, len(records) + len(pending))
    drain()
    ordered = sorted(records.values(), key=lambda r: int(r.request_id) if r.request_id.isdigit() else 0)
    first = min((r.arrival_s for r in ordered), default=0.0)
    return LoopResult(ordered, steps, max(0.0, now - first), peak, preemptions)


def _waiting(scheduler) -> int:
    """Requests the engine holds but did not run in this step (its waiting queue)."""
    return len(getattr(scheduler, "waiting", ()))
