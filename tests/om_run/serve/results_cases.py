"""A hand-worked run for the result writers' tests: four requests (one failed) and three engine steps.

A: sent 0.00, 10 prompt tokens, tokens at 0.10 0.15 0.25 -> TTFT 100 ms, ITL 50 and 100 ms, TPOT 75 ms, E2EL 250 ms
B: sent 0.20, 20 prompt tokens, tokens at 0.50 0.60      -> TTFT 300 ms, ITL 100 ms,        TPOT 100 ms, E2EL 400 ms
C: sent 0.30, 30 prompt tokens, token  at 0.40           -> TTFT 100 ms, no ITL, no TPOT (one token), E2EL 100 ms
D: sent 0.35, 40 prompt tokens, asked 4, one token at 0.45, then failed ("boom"): counted nowhere but `failed`.
The run lasts 0.6 s (B's last token)."""
from __future__ import annotations

from om_run.serve.request import RequestRecord, StepRecord


def records() -> list[RequestRecord]:
    return [RequestRecord("A", 0.0, 10, 3, [0.1, 0.15, 0.25]),
            RequestRecord("B", 0.2, 20, 2, [0.5, 0.6], preemptions=1),
            RequestRecord("C", 0.3, 30, 1, [0.4]),
            RequestRecord("D", 0.35, 40, 4, [0.45], error="boom")]


def steps() -> list[StepRecord]:
    return [StepRecord(0, 0.00, 0.10, 1, 10, 0, 1, 64, 0, 0, 0.09, 0.01),
            StepRecord(1, 0.10, 0.30, 2, 20, 1, 3, 64, 1, 1, 0.18, 0.02),
            StepRecord(2, 0.30, 0.60, 3, 70, 2, 6, 64, 0, 0, 0.27, 0.03)]


RUN_INFO = {"model_id": "Qwen/Qwen3-8B", "backend": "vllm", "num_prompts": 4, "dataset": "random",
            "request_rate": float("inf"), "burstiness": 1.0, "max_concurrency": None, "date": "20250101-120000",
            "engine": "vllm-ascend", "settings": {"max_num_seqs": 8, "block_size": 128}}
