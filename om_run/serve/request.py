"""What the serving simulation passes between its parts: a request as the benchmark client sends it, a
sequence's state inside the engine, one engine step's plan, and what is recorded of each request.

The workloads (workload/) make Requests; a scheduler (scheduler/) turns the waiting and running sequences into
one StepPlan per engine step; the engine loop (loop.py) prices the step on the simulated device, advances the
clock and records a RequestRecord per request for the result writers (results/)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Request:
    """One request of a benchmark: it arrives at `arrival_s` (seconds from the start), carries a prompt of
    `prompt_len` tokens and asks for exactly `output_len` new tokens (vllm bench serve's ignore_eos)."""
    request_id: str
    arrival_s: float
    prompt_len: int
    output_len: int
    prompt_ids: tuple[int, ...] | None = None   # the tokens, where they matter (numerics, prefix caching)


WAITING, RUNNING, FINISHED, REJECTED = "waiting", "running", "finished", "rejected"


@dataclass(eq=False)
class Sequence:
    """A request inside the engine. `computed` counts the tokens whose keys and values are in the KV cache;
    `tokens` is the prompt followed by the tokens generated so far (placeholders when the numerics are off)."""
    request: Request
    tokens: list[int]
    status: str = WAITING
    computed: int = 0
    block_ids: list[int] = field(default_factory=list)
    preemptions: int = 0
    cached_prefix: int = 0          # tokens whose blocks a prefix-cache hit supplied at the last admission
    reason: str = ""                # why the engine rejected or cut it short (status REJECTED, or capped output)

    @property
    def generated(self) -> int:
        return len(self.tokens) - self.request.prompt_len

    @property
    def done(self) -> bool:
        return self.generated >= self.request.output_len

    @property
    def in_prefill(self) -> bool:
        """Tokens the engine has but the cache lacks, more than the one a decode step feeds."""
        return len(self.tokens) - self.computed > 1


@dataclass(frozen=True)
class Scheduled:
    """One sequence's share of a step: `num_tokens` tokens from position `start` (== seq.computed when planned);
    the step samples a token for it when start + num_tokens reaches len(seq.tokens)."""
    seq: Sequence
    start: int
    num_tokens: int

    @property
    def samples(self) -> bool:
        return self.start + self.num_tokens >= len(self.seq.tokens)

    @property
    def is_prefill(self) -> bool:
        return self.num_tokens > 1 or self.start < self.seq.request.prompt_len


@dataclass
class StepPlan:
    """One engine step: its sequences in batch order (vLLM puts decodes first), the sequences preempted to make
    room (recompute: their blocks freed, back to the waiting queue) and the KV blocks in use once it is planned."""
    scheduled: list[Scheduled]
    preempted: list[Sequence] = field(default_factory=list)
    blocks_in_use: int = 0
    num_blocks: int = 0
    blocks_swapped_out: int = 0     # KV blocks copied device -> host this step (MindIE's swap preemption)
    blocks_swapped_in: int = 0      # KV blocks copied host -> device this step

    @property
    def num_tokens(self) -> int:
        return sum(s.num_tokens for s in self.scheduled)

    @property
    def num_prefill_tokens(self) -> int:
        return sum(s.num_tokens for s in self.scheduled if s.is_prefill)

    @property
    def num_decode_tokens(self) -> int:
        return sum(s.num_tokens for s in self.scheduled if not s.is_prefill)


@dataclass
class RequestRecord:
    """What the client saw of one request, in simulated seconds from the start (the result writers' input):
    `token_s` holds the time each output token arrived (the first is TTFT's end); a failed request has `error`.
    `arrival_s` is when the client sent it (vllm bench serve's start_time, TTFT's start); `queued_s` is how long
    the client held it before that under --max-concurrency (vllm's client_queue_time)."""
    request_id: str
    arrival_s: float
    prompt_len: int
    output_len: int
    token_s: list[float] = field(default_factory=list)
    error: str = ""
    preemptions: int = 0
    queued_s: float = 0.0

    @property
    def success(self) -> bool:
        return not self.error and len(self.token_s) == self.output_len and self.output_len > 0

    @property
    def ttft_s(self) -> float:
        return self.token_s[0] - self.arrival_s

    @property
    def e2el_s(self) -> float:
        return self.token_s[-1] - self.arrival_s

    @property
    def itl_s(self) -> list[float]:
        return [b - a for a, b in zip(self.token_s, self.token_s[1:])]

    @property
    def tpot_s(self) -> float:
        """vllm bench serve's TPOT: (latency - TTFT) / (output tokens - 1); 0 for a single-token output."""
        n = len(self.token_s)
        return (self.token_s[-1] - self.token_s[0]) / (n - 1) if n > 1 else 0.0


@dataclass(frozen=True)
class StepRecord:
    """One engine step as the per-step CSV and the trace show it."""
    index: int
    start_s: float
    end_s: float
    num_seqs: int
    num_prefill_tokens: int
    num_decode_tokens: int
    kv_blocks_in_use: int
    num_blocks: int
    preempted: int
    waiting: int
    device_s: float
    host_s: float
    comm_s: float = 0.0              # tensor parallel: its collectives' seconds (within device_s)
    collectives: tuple = ()          # (op type, calls, bytes per call, seconds per call) of each collective
