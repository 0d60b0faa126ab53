"""The per-request and per-step CSV tables: the simulation's own record of a run, one row per request and one
per engine step, for a spreadsheet or pandas when the aggregate numbers raise a question. Times are in ms from
the benchmark's start, printed to the microsecond."""
from __future__ import annotations

import csv
import io
from typing import Sequence

from ..request import RequestRecord, StepRecord

REQUEST_COLUMNS = ["request_id", "arrival_ms", "queued_ms", "first_token_ms", "finish_ms", "prompt_tokens",
                   "output_tokens", "ttft_ms", "tpot_ms", "e2el_ms", "preemptions", "error"]
STEP_COLUMNS = ["step", "start_ms", "end_ms", "duration_ms", "num_seqs", "num_prefill_tokens", "num_decode_tokens",
                "kv_blocks_in_use", "num_blocks", "preempted", "waiting", "device_ms", "host_ms", "collectives_ms"]


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1000:.3f}"


def requests_csv(records: Sequence[RequestRecord]) -> str:
    """One row per request in the order given; a request without tokens leaves its token columns empty."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(REQUEST_COLUMNS)
    for r in records:
        has = bool(r.token_s)
        w.writerow([r.request_id, _ms(r.arrival_s), _ms(r.queued_s), _ms(r.token_s[0] if has else None),
                    _ms(r.token_s[-1] if has else None), r.prompt_len, len(r.token_s),
                    _ms(r.ttft_s if has else None), _ms(r.tpot_s if has else None), _ms(r.e2el_s if has else None),
                    r.preemptions, r.error or ("" if r.success else "incomplete")])
    return buf.getvalue()


def steps_csv(steps: Sequence[StepRecord]) -> str:
    """One row per engine step: its span, its batch, the KV cache and the queue after it was planned."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(STEP_COLUMNS)
    for s in steps:
        w.writerow([s.index, _ms(s.start_s), _ms(s.end_s), _ms(s.end_s - s.start_s), s.num_seqs,
                    s.num_prefill_tokens, s.num_decode_tokens, s.kv_blocks_in_use, s.num_blocks, s.preempted,
                    s.waiting, _ms(s.device_s), _ms(s.host_s), _ms(s.comm_s)])
    return buf.getvalue()
