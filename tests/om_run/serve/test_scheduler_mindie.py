"""MindIE's PD-mixed scheduler on small hand-worked cases (cacheBlockSize 4); `now` is the simulated clock (s)."""
from __future__ import annotations

from om_run.serve.request import REJECTED
from om_run.serve.scheduler.mindie import SWAPPED, MindieScheduler
from om_run.serve.scheduler.mindie_config import MindieConfig
from tests.om_run.serve.sched_util import make_seq, run, step, trace


def config(**kwargs) -> MindieConfig:
    base = dict(max_batch_size=4, max_prefill_batch_size=2, max_prefill_tokens=16, prefill_time_ms_per_req=150,
                decode_time_ms_per_req=50, support_select_batch=False, max_queue_delay_us=500, max_preempt_count=0,
                cache_block_size=4, max_seq_len=16, max_input_token_len=15)
    base.update(kwargs)
    return MindieConfig(**base)


def kinds(sched, now: float) -> str:
    out = ""
    while sched.has_unfinished:
        out += "P" if step(sched, now).num_prefill_tokens else "D"
    return out


def test_max_prefill_batch_size_bounds_a_prefill_step_and_prefill_comes_first():
    # maxPrefillBatchSize 2: A, B in step 1; C, D in step 2 although A and B could decode (prefill first)
    sched = MindieScheduler(config(), 20)
    for rid, prompt in (("A", 6), ("B", 6), ("C", 6), ("D", 3)):
        sched.add(make_seq(rid, prompt, 2))
    assert run(sched, now=1.0) == [
        [("A", 0, 6), ("B", 0, 6)],
        [("C", 0, 6), ("D", 0, 3)],
        [("A", 6, 1), ("B", 6, 1), ("C", 6, 1), ("D", 3, 1)],
    ]
    assert sched.num_free_blocks == 20


def test_prefill_tokens_bound_is_the_larger_of_max_seq_len_and_max_prefill_tokens():
    # maxPrefillTokens 12 >= maxSeqLen 8: A (6) + B (6) = 12 fit, C would make 18
    sched = MindieScheduler(config(max_prefill_batch_size=4, max_prefill_tokens=12, max_seq_len=8,
                                   max_input_token_len=7), 20)
    for rid in "ABC":
        sched.add(make_seq(rid, 6, 1))
    assert run(sched, now=1.0) == [[("A", 0, 6), ("B", 0, 6)], [("C", 0, 6)]]
    # maxSeqLen 12 > maxPrefillTokens 8: MindIE's budget is 12 (its docs say maxPrefillTokens)
    sched = MindieScheduler(config(max_prefill_batch_size=4, max_prefill_tokens=8, max_seq_len=12,
                                   max_input_token_len=8), 20)
    for rid in "AB":
        sched.add(make_seq(rid, 6, 1))
    assert run(sched, now=1.0) == [[("A", 0, 6), ("B", 0, 6)]]


def test_max_batch_size_bounds_decodes_and_the_unreached_go_first_next():
    # maxBatchSize 2 with 3 running: A, B decode; C (not reached) leads the next step; decodes go back in order
    sched = MindieScheduler(config(max_batch_size=2), 20)
    for rid in "ABC":
        sched.add(make_seq(rid, 2, 3))
    assert run(sched, now=1.0) == [
        [("A", 0, 2), ("B", 0, 2)],
        [("C", 0, 2)],
        [("A", 2, 1), ("B", 2, 1)],
        [("A", 3, 1), ("C", 2, 1)],
        [("B", 3, 1), ("C", 3, 1)],
    ]


def test_queue_delay_holds_a_prefill_and_wake_says_until_when():
    # maxQueueDelayMicroseconds 5000: A (arrived at 0) is not prefilled at 1 ms; it is at 5 ms
    sched = MindieScheduler(config(max_queue_delay_us=5000), 20)
    sched.add(make_seq("A", 2, 2, arrival=0.0))
    assert sched.schedule(0.001) is None
    assert sched.wake_s == 0.005
    assert trace(step(sched, 0.005)) == [("A", 0, 2)]
    # with A running, a new B (arrived 0.010) waits while A decodes until B has waited 5 ms
    sched.add(make_seq("B", 2, 1, arrival=0.010))
    assert trace(step(sched, 0.012)) == [("A", 2, 1)]
    assert trace(step(sched, 0.015)) == [("B", 0, 2)]


def test_long_delay_lets_a_full_prefill_batch_go_at_once():
    # maxQueueDelayMicroseconds > 5000 and maxPrefillBatchSize (2) requests waiting: no need to wait
    sched = MindieScheduler(config(max_queue_delay_us=100000), 20)
    sched.add(make_seq("A", 2, 1, arrival=0.0))
    assert sched.schedule(0.001) is None
    sched.add(make_seq("B", 2, 1, arrival=0.001))
    assert trace(step(sched, 0.001)) == [("A", 0, 2), ("B", 0, 2)]


def test_select_batch_compares_prefill_wait_with_decode_waste():
    # maxBatchSize 4, prefill 100 ms/request, decode 10 ms/request, one prefill per step. With A running:
    # prefill wait 100 x 1; waste grows 10 x 3 per decode choice: 30, 60, 90 -> decode, 120 -> prefill (B).
    # With 2 running: wait 200, waste 20 -> decode (A ends), then 1 running: 50, 80 -> decode, 110 -> prefill (C).
    sched = MindieScheduler(config(max_prefill_batch_size=1, support_select_batch=True, prefill_time_ms_per_req=100,
                                   decode_time_ms_per_req=10), 20)
    for rid in "ABC":
        sched.add(make_seq(rid, 2, 5))
    assert kinds(sched, 1.0) == "PDDDPDDDPDDDD"
    # without select-batch the same three are prefilled first
    sched = MindieScheduler(config(max_prefill_batch_size=1), 20)
    for rid in "ABC":
        sched.add(make_seq(rid, 2, 5))
    assert kinds(sched, 1.0) == "PPPDDDD"


def test_decode_first_when_blocks_are_short():
    # 40 blocks keep 5% (2) for decodes: with 1 free, the waiting B (needs 1) waits while A decodes
    sched = MindieScheduler(config(max_seq_len=200, max_input_token_len=199, max_prefill_tokens=200), 40)
    sched.add(make_seq("A", 156, 2))            # 39 blocks
    assert trace(step(sched, 1.0)) == [("A", 0, 156)]
    sched.add(make_seq("B", 4, 1))
    assert run(sched, now=1.0) == [[("A", 156, 1)], [("B", 0, 4)]]


def test_recompute_preemption_goes_to_the_back_and_fresh_requests_go_first():
    # 4 blocks; A, B: prompt 4, 6 out. Tokens 5..8 fit 2 blocks each; A's 9th needs a 3rd: B (the last candidate)
    # is preempted by recompute (maxPreemptCount 0) and queued behind C. C is prefilled first (fresh before
    # recompute); B (9 tokens = 3 blocks) would then take exactly the 3 free blocks, which MindIE does not do.
    sched = MindieScheduler(config(max_prefill_batch_size=4, max_input_token_len=8), 4)
    a, b = make_seq("A", 4, 6), make_seq("B", 4, 6)
    sched.add(a)
    sched.add(b)
    for _ in range(5):
        step(sched, 1.0)
    sched.add(make_seq("C", 4, 1))
    got = []
    while sched.has_unfinished:
        plan = step(sched, 1.0)
        got.append((trace(plan), [s.request.request_id for s in plan.preempted]))
    assert got == [
        ([("A", 8, 1)], ["B"]),       # a prefill of C was tried first: no block, so this decode step
        ([("C", 0, 4)], []),
        ([("B", 0, 9)], []),          # the recompute covers prompt + 5 generated
    ]
    assert b.preemptions == 1 and sched.num_free_blocks == 4


def test_the_victim_is_the_last_candidate_not_the_last_running():
    # maxBatchSize 1 -> 2 candidates per decode step. 3 blocks: A, B, C prefilled one per step (maxPrefillBatchSize
    # 1), no block left. A's token 5 needs a block: the victim is B (last of the candidates A, B), not C; C, not
    # reached, leads the running queue, A follows
    sched = MindieScheduler(config(max_batch_size=1, max_prefill_batch_size=1), 3)
    for rid in "ABC":
        sched.add(make_seq(rid, 4, 3))
    assert [trace(step(sched, 1.0)) for _ in range(3)] == [[("A", 0, 4)], [("B", 0, 4)], [("C", 0, 4)]]
    plan = step(sched, 1.0)
    assert trace(plan) == [("A", 4, 1)] and [s.request.request_id for s in plan.preempted] == ["B"]
    assert [s.request.request_id for s in sched.running] == ["C", "A"]


def test_max_preempt_count_swaps_instead_of_recomputing():
    # the same two with maxPreemptCount 1: B is swapped to host (keeps its 8 computed tokens) and comes back as a
    # decode once A ends; its 2 blocks go out and back
    sched = MindieScheduler(config(max_prefill_batch_size=4, max_input_token_len=8, max_preempt_count=1), 4)
    a, b = make_seq("A", 4, 6), make_seq("B", 4, 6)
    sched.add(a)
    sched.add(b)
    for _ in range(5):
        step(sched, 1.0)
    plan = step(sched, 1.0)
    assert trace(plan) == [("A", 8, 1)] and plan.blocks_swapped_out == 2
    assert b.status == SWAPPED and b.computed == 8 and sched.cpu_blocks_used == 3
    plan = step(sched, 1.0)
    assert trace(plan) == [("B", 8, 1)] and plan.blocks_swapped_in == 2
    assert not sched.has_unfinished and sched.num_free_blocks == 4 and sched.cpu_blocks_used == 0
    # with no host room it falls back to recompute
    sched = MindieScheduler(config(max_prefill_batch_size=4, max_input_token_len=8, max_preempt_count=1), 4,
                            num_cpu_blocks=2)
    b = make_seq("B", 4, 6)
    sched.add(make_seq("A", 4, 6))
    sched.add(b)
    for _ in range(6):
        step(sched, 1.0)
    assert b.status != SWAPPED and b.computed == 0


def test_first_token_wait_makes_the_next_decode_step_preempt():
    # maxFirstTokenWaitTime 0: B (8 tokens, 2 blocks) finds 1 free block -> the decode step that follows preempts
    # one request (here A, the only one) although A's decode fits; B is then prefilled, A recomputed after it
    sched = MindieScheduler(config(max_first_token_wait_ms=0), 3)
    a = make_seq("A", 4, 4)
    sched.add(a)
    assert trace(step(sched, 0.1)) == [("A", 0, 4)]
    assert trace(step(sched, 0.2)) == [("A", 4, 1)]
    sched.add(make_seq("B", 8, 1, arrival=0.3))
    plan = step(sched, 0.4)
    assert trace(plan) == [("B", 0, 8)] and [s.request.request_id for s in plan.preempted] == ["A"]
    assert run(sched, now=0.5) == [[("A", 0, 6)], [("A", 6, 1)]]
    assert a.preemptions == 1 and sched.num_free_blocks == 3


def test_admission_limits_and_output_cap():
    sched = MindieScheduler(config(max_seq_len=16, max_input_token_len=15, max_iter_times=2), 20)
    long_prompt = make_seq("L", 16, 1)             # > min(maxInputTokenLen 15, maxSeqLen - 1 = 15)
    assert not sched.add(long_prompt)
    assert long_prompt.status == REJECTED and "more than min(maxInputTokenLen, maxSeqLen - 1) = 15" in long_prompt.reason
    capped = make_seq("C", 4, 5)                   # maxIterTimes 2: MindIE stops after 2 tokens
    assert sched.add(capped)
    assert run(sched, now=1.0) == [[("C", 0, 4)], [("C", 4, 1)]]
    assert capped.generated == 2 and "output cut at 2 tokens" in capped.reason
    small = MindieScheduler(config(), 2)
    huge = make_seq("H", 6, 4)                     # 9 KV slots -> 3 blocks > 2
    assert not small.add(huge) and "can never run" in huge.reason


def test_prefix_cache_plugin_works_as_v0():
    sched = MindieScheduler(config(prefix_cache=True), 10)
    sched.add(make_seq("A", 0, 1, ids=tuple(range(1, 9))))
    run(sched, now=1.0)
    c = make_seq("C", 0, 1, ids=tuple(range(1, 9)))
    sched.add(c)
    assert run(sched, now=1.0) == [[("C", 7, 1)]]
    assert c.cached_prefix == 7 and sched.num_free_blocks == 10
