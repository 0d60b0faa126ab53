"""vLLM V0's scheduler on small hand-worked cases (block size 4): each step written as (request, start, tokens)."""
from __future__ import annotations

from om_run.serve.request import REJECTED
from om_run.serve.scheduler.vllm_settings import VllmSettings
from om_run.serve.scheduler.vllm_v0 import VllmV0Scheduler
from tests.om_run.serve.sched_util import make_seq, run, step, trace


def v0(num_blocks: int, **kwargs) -> VllmV0Scheduler:
    kwargs.setdefault("max_model_len", 16)
    kwargs.setdefault("max_num_batched_tokens", 16)
    kwargs.setdefault("max_num_seqs", 4)
    return VllmV0Scheduler(VllmSettings(scheduler="v0", block_size=4, platform="vllm", **kwargs), num_blocks)


def test_token_budget_and_prefill_first_steps():
    # budget 16 tokens, 3 sequences, 10 blocks (watermark int(0.1) = 0).
    # step 1: A (6) + B (6) = 12; C (5) would make 17 > 16 -> stops. Step 2: prefill step for C although A and B
    # could decode (V0: prefills first, no decode in a prefill step). Step 3: all decode; B and C are done (2 out).
    sched = v0(10, max_num_seqs=3)
    for seq in (make_seq("A", 6, 3), make_seq("B", 6, 2), make_seq("C", 5, 2)):
        sched.add(seq)
    assert run(sched) == [
        [("A", 0, 6), ("B", 0, 6)],
        [("C", 0, 5)],
        [("A", 6, 1), ("B", 6, 1), ("C", 5, 1)],
        [("A", 7, 1)],
    ]
    assert sched.num_free_blocks == 10


def test_max_num_seqs_counts_running_sequences():
    # 2 sequences at most: C waits although the budget has room, and the running two keep it out until they end
    sched = v0(10, max_num_seqs=2)
    for seq in (make_seq("A", 2, 2), make_seq("B", 2, 2), make_seq("C", 2, 1)):
        sched.add(seq)
    assert run(sched) == [
        [("A", 0, 2), ("B", 0, 2)],
        [("A", 2, 1), ("B", 2, 1)],
        [("C", 0, 2)],
    ]
    assert sched.num_free_blocks == 10


def test_preemption_by_recompute_and_v0_touched_block_rule():
    # 4 blocks, A and B: prompt 4, 6 out. Step 1 prefills both (1 block each), step 2 decodes both (a 2nd block
    # each: 0 free). Step 3: A's token 6 fits its 2nd block, but V0 wants one free "touched" block -> preempts the
    # last running, B (its 2 blocks back). Step 4: B's recompute prefill covers prompt + its 2 generated = 6.
    # Every A decode then preempts B again (0 free), B recomputes 7, 8 tokens; A's 9th token needs its 3rd block.
    sched = v0(4, max_num_seqs=4)
    a, b = make_seq("A", 4, 6), make_seq("B", 4, 6)
    sched.add(a)
    sched.add(b)
    expected = [
        ([("A", 0, 4), ("B", 0, 4)], []),
        ([("A", 4, 1), ("B", 4, 1)], []),
        ([("A", 5, 1)], ["B"]),
        ([("B", 0, 6)], []),
        ([("A", 6, 1)], ["B"]),
        ([("B", 0, 7)], []),
        ([("A", 7, 1)], ["B"]),
        ([("B", 0, 8)], []),
        ([("A", 8, 1)], ["B"]),
        ([("B", 0, 9)], []),
    ]
    got = []
    while sched.has_unfinished:
        plan = step(sched)
        got.append((trace(plan), [s.request.request_id for s in plan.preempted]))
    assert got == expected
    assert (a.preemptions, b.preemptions) == (0, 4)
    assert b.generated == 6 and sched.num_free_blocks == 4


def test_preempted_go_back_to_the_front_in_arrival_order():
    # 3 blocks; A, B, C: prompt 4 (1 block each: 0 free), D: prompt 5 (2 blocks, waits). Step 2 has no prefill
    # (D does not fit) so all decode: A finds no free block -> preempts C (the last) and takes its block; B finds
    # none and nothing after it -> preempts itself. Both return to the front of the queue, earliest first.
    sched = v0(3, max_model_len=12, max_num_batched_tokens=12)
    for rid in "ABC":
        sched.add(make_seq(rid, 4, 3))
    sched.add(make_seq("D", 5, 1))
    assert trace(step(sched)) == [("A", 0, 4), ("B", 0, 4), ("C", 0, 4)]
    plan = step(sched)
    assert trace(plan) == [("A", 4, 1)] and [s.request.request_id for s in plan.preempted] == ["C", "B"]
    assert [s.request.request_id for s in sched.waiting] == ["B", "C", "D"]


def test_watermark_keeps_one_percent_free_at_admission():
    # 100 blocks keep int(1%) = 1 free: A takes 99 (396 tokens), B (1 block) would take the last one -> waits
    sched = VllmV0Scheduler(VllmSettings(scheduler="v0", max_model_len=400, block_size=4, max_num_seqs=4,
                                         platform="vllm"), 100)
    sched.add(make_seq("A", 396, 1))
    sched.add(make_seq("B", 4, 1))
    assert run(sched) == [[("A", 0, 396)], [("B", 0, 4)]]


def test_chunked_prefill_decodes_first_then_chunks_then_new_prefills():
    # budget 8: A (10) gets 8 tokens; next step A's last 2 (a running chunk) come before B's admission (3), and V0's
    # batch order is new prefills, running chunks, decodes. All its prompt's 3 blocks are taken at admission.
    sched = v0(10, max_model_len=32, max_num_batched_tokens=8, max_num_seqs=4, enable_chunked_prefill=True)
    a = make_seq("A", 10, 2)
    sched.add(a)
    sched.add(make_seq("B", 3, 2))
    assert trace(step(sched)) == [("A", 0, 8)]
    assert len(a.block_ids) == 3
    assert run(sched) == [[("B", 0, 3), ("A", 8, 2)], [("A", 10, 1), ("B", 3, 1)]]
    assert sched.num_free_blocks == 10


def test_chunked_prefill_chunk_takes_what_the_decodes_leave():
    # budget 4: A and B decode (1 token each) before the new prompt C (3) gets the 2 tokens left
    sched = v0(20, max_model_len=16, max_num_batched_tokens=4, max_num_seqs=4, enable_chunked_prefill=True)
    for rid in "AB":
        sched.add(make_seq(rid, 2, 3))
    assert trace(step(sched)) == [("A", 0, 2), ("B", 0, 2)]
    sched.add(make_seq("C", 3, 1))
    assert trace(step(sched)) == [("C", 0, 2), ("A", 2, 1), ("B", 2, 1)]   # C's chunk takes what is left (2)


def test_chunked_prefill_with_prefix_caching_cuts_chunks_at_block_boundaries():
    # budget 10, block 4: a chunk takes 8 (10 rounded down to a block multiple), then the last 4
    sched = v0(10, max_model_len=32, max_num_batched_tokens=10, enable_chunked_prefill=True,
               enable_prefix_caching=True)
    sched.add(make_seq("A", 0, 1, ids=tuple(range(1, 13))))
    assert run(sched) == [[("A", 0, 8)], [("A", 8, 4)]]


def test_a_running_chunk_on_a_full_tiny_cache_goes_on():
    # 3 blocks (no watermark), budget 4: A (10) holds all 3 blocks from admission; its chunks run although none is
    # free; its first decode (token 11) then preempts itself and recomputes 11 tokens in chunks
    sched = v0(3, max_model_len=12, max_num_batched_tokens=4, enable_chunked_prefill=True)
    a = make_seq("A", 10, 2)
    sched.add(a)
    assert run(sched) == [[("A", 0, 4)], [("A", 4, 4)], [("A", 8, 2)],
                          [("A", 0, 4)], [("A", 4, 4)], [("A", 8, 3)]]
    assert a.preemptions == 1 and sched.num_free_blocks == 3


def test_prefix_cache_full_hit_recomputes_one_token():
    # A = [1..8] leaves two cached blocks. B = [1..10] hits both (computes 2); C = [1..8] hits both too, and V0
    # still computes its last token (start 7, 1 token) in the last shared block.
    sched = v0(10, max_model_len=32, max_num_batched_tokens=32, enable_prefix_caching=True)
    sched.add(make_seq("A", 0, 1, ids=tuple(range(1, 9))))
    assert run(sched) == [[("A", 0, 8)]]
    b, c = make_seq("B", 0, 1, ids=tuple(range(1, 11))), make_seq("C", 0, 1, ids=tuple(range(1, 9)))
    sched.add(b)
    sched.add(c)
    assert run(sched) == [[("B", 8, 2), ("C", 7, 1)]]
    assert (b.cached_prefix, c.cached_prefix) == (8, 7)
    assert sched.blocks.stats.hit_blocks == 4 and sched.num_free_blocks == 10


def test_rejections():
    sched = v0(4)
    too_long = make_seq("L", 10, 7)                      # 17 > max_model_len 16
    assert not sched.add(too_long)
    assert too_long.status == REJECTED and "maximum context length is 16 tokens. However, you requested 17" in too_long.reason
    empty = make_seq("E", 3, 0)
    assert not sched.add(empty) and "max_tokens must be at least 1" in empty.reason
    # 100 blocks keep a watermark of 1: a sequence needing all 100 would never be admitted by V0
    big = VllmV0Scheduler(VllmSettings(scheduler="v0", max_model_len=400, block_size=4, platform="vllm"), 100)
    whole = make_seq("W", 200, 200)                      # 399 KV slots -> 100 blocks
    assert not big.add(whole) and "watermark" in whole.reason
    assert big.add(make_seq("X", 200, 196))              # 395 slots -> 99 blocks
    assert big.rejected == [whole] and not sched.has_unfinished
