"""vLLM V1's unified scheduler on small hand-worked cases (block size 4)."""
from __future__ import annotations

from om_run.serve.request import REJECTED
from om_run.serve.scheduler.vllm_settings import VllmSettings
from om_run.serve.scheduler.vllm_v1 import VllmV1Scheduler
from tests.om_run.serve.sched_util import make_seq, run, step, trace


def v1(num_blocks: int, **kwargs) -> VllmV1Scheduler:
    kwargs.setdefault("max_model_len", 32)
    kwargs.setdefault("max_num_seqs", 4)
    kwargs.setdefault("enable_prefix_caching", False)
    return VllmV1Scheduler(VllmSettings(scheduler="v1", block_size=4, platform="vllm", **kwargs), num_blocks)


def test_chunked_prefill_mixes_running_and_new_in_one_step():
    # budget 8: A (10) gets 8; next step A's last 2 (running first), then B (3) from the 6 left; then both decode.
    # Blocks follow the chunks: 2 for A's first 8 tokens, a 3rd with its last 2.
    sched = v1(10, max_num_batched_tokens=8)
    a = make_seq("A", 10, 2)
    sched.add(a)
    sched.add(make_seq("B", 3, 2))
    assert trace(step(sched)) == [("A", 0, 8)]
    assert len(a.block_ids) == 2
    assert run(sched) == [[("A", 8, 2), ("B", 0, 3)], [("A", 10, 1), ("B", 3, 1)]]
    assert sched.num_free_blocks == 10


def test_budget_left_by_running_bounds_the_new_chunk_and_max_num_seqs_bounds_admission():
    # budget 4, 2 sequences at most. A, B (2 each) fill it; C waits for a free seat, not for tokens
    sched = v1(10, max_num_batched_tokens=4, max_num_seqs=2)
    for rid in "AB":
        sched.add(make_seq(rid, 2, 2))
    sched.add(make_seq("C", 5, 1))
    assert run(sched) == [
        [("A", 0, 2), ("B", 0, 2)],
        [("A", 2, 1), ("B", 2, 1)],          # 2 tokens left, but 2 running = max_num_seqs: C waits
        [("C", 0, 4)],
        [("C", 4, 1)],
    ]


def test_preemption_only_when_a_new_block_is_needed():
    # 4 blocks; A and B: prompt 4, 6 out. Step 2 gives each its 2nd block (0 free); steps 3-5 fit tokens 6-8 in
    # it (V1 does not preempt then, V0 would). Step 6: A's 9th token needs a 3rd block -> the last running, B, is
    # preempted (recompute), and nothing is admitted in that step. A ends; B's recompute covers prompt + 5 = 9.
    sched = v1(4, max_model_len=16, max_num_batched_tokens=16)
    a, b = make_seq("A", 4, 6), make_seq("B", 4, 6)
    sched.add(a)
    sched.add(b)
    got = []
    while sched.has_unfinished:
        plan = step(sched)
        got.append((trace(plan), [s.request.request_id for s in plan.preempted]))
    assert got == [
        ([("A", 0, 4), ("B", 0, 4)], []),
        ([("A", 4, 1), ("B", 4, 1)], []),
        ([("A", 5, 1), ("B", 5, 1)], []),
        ([("A", 6, 1), ("B", 6, 1)], []),
        ([("A", 7, 1), ("B", 7, 1)], []),
        ([("A", 8, 1)], ["B"]),
        ([("B", 0, 9)], []),
    ]
    assert (a.preemptions, b.preemptions) == (0, 1) and sched.num_free_blocks == 4


def test_no_admission_in_a_step_that_preempted_and_preempted_go_first():
    # 3 blocks: A, B prompt 4 (1 block each); C arrives. Step 2: A takes the last free block for token 5; B needs
    # one -> preempts itself (the last running); C is not admitted although B's block is free now.
    sched = v1(3, max_model_len=12, max_num_batched_tokens=12)
    for rid in "AB":
        sched.add(make_seq(rid, 4, 3))
    assert trace(step(sched)) == [("A", 0, 4), ("B", 0, 4)]
    sched.add(make_seq("C", 4, 1))
    plan = step(sched)
    assert trace(plan) == [("A", 4, 1)] and [s.request.request_id for s in plan.preempted] == ["B"]
    assert [s.request.request_id for s in sched.waiting] == ["B", "C"]
    # next step: A (token 6, same block), then B recomputes 5 tokens (2 blocks: free 1 -> stops the queue)
    assert trace(step(sched)) == [("A", 5, 1)]


def test_prefix_cache_hits_stop_before_the_last_token():
    # A = [1..8] leaves two cached blocks. B = [1..10] hits both and computes 2. C = [1..8] may hit only within
    # its first 7 tokens: 1 block, and computes the whole last block (start 4, 4 tokens).
    sched = v1(10, max_num_batched_tokens=32, enable_prefix_caching=True)
    sched.add(make_seq("A", 0, 1, ids=tuple(range(1, 9))))
    assert run(sched) == [[("A", 0, 8)]]
    b, c = make_seq("B", 0, 1, ids=tuple(range(1, 11))), make_seq("C", 0, 1, ids=tuple(range(1, 9)))
    sched.add(b)
    sched.add(c)
    assert run(sched) == [[("B", 8, 2), ("C", 4, 4)]]
    assert (b.cached_prefix, c.cached_prefix) == (8, 4)
    assert sched.blocks.stats.hit_blocks == 3 and sched.num_free_blocks == 10


def test_prefix_cache_hit_within_one_step_and_after_preemption():
    # blocks are named when scheduled: B admitted after A in the same step already hits A's first block
    sched = v1(10, max_num_batched_tokens=32, enable_prefix_caching=True)
    a, b = make_seq("A", 0, 2, ids=(1, 2, 3, 4, 5)), make_seq("B", 0, 1, ids=(1, 2, 3, 4, 9))
    sched.add(a)
    sched.add(b)
    assert trace(step(sched)) == [("A", 0, 5), ("B", 4, 1)]
    assert b.cached_prefix == 4


def test_cached_hits_in_the_free_pool_count_against_free_blocks():
    # 4 blocks: A = [1..8] (2 blocks) and D (3 tokens, 1 block) run; A ends, its 2 blocks stay cached but free
    # (3 free). B = [1..8, 9..13] hits them: 4 blocks for 13 tokens, 2 hits, but both hits come out of the free
    # pool -> 4 needed > 3 free: B waits for D to end
    sched = v1(4, max_model_len=16, max_num_batched_tokens=16, enable_prefix_caching=True)
    sched.add(make_seq("A", 0, 1, ids=tuple(range(1, 9))))
    sched.add(make_seq("D", 0, 2, ids=(50, 51, 52)))
    assert trace(step(sched)) == [("A", 0, 8), ("D", 0, 3)]
    b = make_seq("B", 0, 1, ids=tuple(range(1, 14)))
    sched.add(b)
    assert run(sched) == [[("D", 3, 1)], [("B", 8, 5)]]
    assert b.cached_prefix == 8 and sched.num_free_blocks == 4


def test_chunked_prefill_off_stops_at_a_prompt_that_does_not_fit():
    sched = v1(20, max_model_len=16, max_num_batched_tokens=16, enable_chunked_prefill=False)
    for rid, prompt in (("A", 10), ("B", 10)):
        sched.add(make_seq(rid, prompt, 2))
    assert run(sched) == [[("A", 0, 10)], [("A", 10, 1), ("B", 0, 10)], [("B", 10, 1)]]


def test_rejection():
    sched = v1(10)
    seq = make_seq("L", 30, 3)
    assert not sched.add(seq) and seq.status == REJECTED and "maximum context length is 32 tokens. However, you requested 33" in seq.reason
