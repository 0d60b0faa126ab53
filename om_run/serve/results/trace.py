"""A Chrome / Perfetto trace of a serving run (chrome://tracing or ui.perfetto.dev): the engine's steps laid end
to end, the KV cache and queue as counters, preemptions as instants and each request as an async span, so the
moment a TTFT went bad can be found and the step that caused it seen.

Conventions as om_run/sim/report.py's chrome_trace: process_name / thread_name metadata events name the tracks,
"ts" and "dur" are microseconds. Tracks: pid 0 "Engine" (tid 0 "steps": one complete event per step named by its
batch, "P:<prefill tokens> D:<decode tokens>"; tid 1 "collectives": a tensor-parallel step's collectives, one
event per kind — "HcomAllReduce x57" — their summed time laid from the step's start; counters "KV blocks" and "Sequences"; "preempted" instants), pid 1
"Requests" (per request an async span "<id>" from the client's queueing to its last token, nesting "client
queue", "to first token" and "decode")."""
from __future__ import annotations

import json
import os
from typing import Sequence

from atc_py.common.atomic_write import write_atomic

from ..request import RequestRecord, StepRecord

ENGINE, REQUESTS = 0, 1


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def _step_events(steps: Sequence[StepRecord]) -> list[dict]:
    ev = []
    for s in steps:
        args = {"step": s.index, "num_seqs": s.num_seqs, "prefill_tokens": s.num_prefill_tokens,
                "decode_tokens": s.num_decode_tokens, "device_ms": s.device_s * 1000, "host_ms": s.host_s * 1000}
        ev.append({"name": f"P:{s.num_prefill_tokens} D:{s.num_decode_tokens}", "cat": "step", "ph": "X",
                   "pid": ENGINE, "tid": 0, "ts": _us(s.start_s), "dur": _us(s.end_s - s.start_s), "args": args})
        ev.append({"name": "KV blocks", "ph": "C", "pid": ENGINE, "tid": 0, "ts": _us(s.start_s),
                   "args": {"in use": s.kv_blocks_in_use, "free": max(s.num_blocks - s.kv_blocks_in_use, 0)}})
        ev.append({"name": "Sequences", "ph": "C", "pid": ENGINE, "tid": 0, "ts": _us(s.start_s),
                   "args": {"running": s.num_seqs, "waiting": s.waiting}})
        at = s.start_s
        for op, calls, nbytes, each in s.collectives:   # tensor parallel: each collective of the step, by kind
            ev.append({"name": f"{op} x{calls}", "cat": "collective", "ph": "X", "pid": ENGINE, "tid": 1,
                       "ts": _us(at), "dur": _us(calls * each),
                       "args": {"step": s.index, "calls": calls, "bytes_per_call": nbytes, "us_per_call": each * 1e6}})
            at += calls * each
        if s.preempted:
            ev.append({"name": "preempted", "cat": "preemption", "ph": "i", "s": "t", "pid": ENGINE, "tid": 0,
                       "ts": _us(s.start_s), "args": {"sequences": s.preempted}})
    return ev


def _request_events(records: Sequence[RequestRecord]) -> list[dict]:
    ev = []
    for k, r in enumerate(records):
        end = r.token_s[-1] if r.token_s else r.arrival_s
        common = {"cat": "request", "id": k, "pid": REQUESTS, "tid": 0}
        args = {"prompt_tokens": r.prompt_len, "output_tokens": len(r.token_s), "preemptions": r.preemptions}
        if r.error:
            args["error"] = r.error
        spans = [(r.request_id, r.arrival_s - r.queued_s, end, args)]
        if r.queued_s > 0:
            spans.append(("client queue", r.arrival_s - r.queued_s, r.arrival_s, None))
        if r.token_s:
            spans.append(("to first token", r.arrival_s, r.token_s[0], None))
            if len(r.token_s) > 1:
                spans.append(("decode", r.token_s[0], end, None))
        for name, start, _, a in spans:
            ev.append({**common, "name": name, "ph": "b", "ts": _us(start), **({"args": a} if a else {})})
        for name, _, stop, _ in reversed(spans):
            ev.append({**common, "name": name, "ph": "e", "ts": _us(stop)})
    return ev


def chrome_trace(records: Sequence[RequestRecord], steps: Sequence[StepRecord]) -> dict:
    """The trace as a dict: {"traceEvents": [...], "displayTimeUnit": "ms"}."""
    ev = [{"name": "process_name", "ph": "M", "pid": ENGINE, "tid": 0, "args": {"name": "Engine"}},
          {"name": "thread_name", "ph": "M", "pid": ENGINE, "tid": 0, "args": {"name": "steps"}},
          {"name": "thread_name", "ph": "M", "pid": ENGINE, "tid": 1, "args": {"name": "collectives"}},
          {"name": "process_name", "ph": "M", "pid": REQUESTS, "tid": 0, "args": {"name": "Requests"}}]
    return {"traceEvents": ev + _step_events(steps) + _request_events(records), "displayTimeUnit": "ms"}


def write_trace(path: str | os.PathLike, records: Sequence[RequestRecord], steps: Sequence[StepRecord]) -> None:
    write_atomic(path, json.dumps(chrome_trace(records, steps)).encode("utf-8"))
