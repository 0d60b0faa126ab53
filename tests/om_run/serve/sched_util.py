"""Helpers for the scheduler tests: sequences, one engine step, and a step's (request, start, tokens) trace."""
from __future__ import annotations

from om_run.serve.request import Request, Sequence


def make_seq(rid: str, prompt: int, output: int, arrival: float = 0.0, ids: tuple[int, ...] | None = None) -> Sequence:
    """A sequence as the engine makes it: its prompt's tokens (placeholders without `ids`)."""
    request = Request(rid, arrival, prompt if ids is None else len(ids), output, ids)
    return Sequence(request, tokens=list(ids) if ids is not None else [0] * prompt)


def step(sched, now: float | None = None):
    """Plan one step, run it (every sampling sequence gets token 1) and report it back; the plan, or None."""
    plan = sched.schedule(now) if now is not None else sched.schedule()
    if plan is None:
        return None
    sched.update(plan, {item.seq: 1 for item in plan.scheduled if item.samples})
    return plan


def trace(plan) -> list[tuple[str, int, int]]:
    return [(item.seq.request.request_id, item.start, item.num_tokens) for item in plan.scheduled]


def run(sched, now: float | None = None, limit: int = 10000) -> list[list[tuple[str, int, int]]]:
    """Steps until nothing is left; each step's trace."""
    steps = []
    while sched.has_unfinished and len(steps) < limit:
        plan = step(sched, now)
        assert plan is not None, "the scheduler stalled with work left"
        steps.append(trace(plan))
    return steps
