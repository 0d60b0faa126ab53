"""The engine loop in simulated time, with a constant step price so each case can be worked by hand: a request's
TTFT runs from when the client sent it (a --max-concurrency slot held it back until then, and that wait is its
queue time), a request arriving mid-step waits for the step to end, and the per-step record counts the waiting
queue."""
from __future__ import annotations

from om_run.serve.loop import run_loop
from om_run.serve.request import Request
from om_run.serve.scheduler import make_scheduler
from om_run.serve.scheduler.vllm_settings import VllmSettings

STEP = 0.010          # every step 10 ms, no host work


def scheduler(seqs=8):
    s = VllmSettings(scheduler="v0", max_model_len=64, max_num_seqs=seqs, block_size=16).resolved()
    return make_scheduler("vllm", s, 64)


def run(requests, max_concurrency=None, seqs=8):
    return run_loop(requests, scheduler(seqs), lambda q, kv, same: (STEP, STEP, STEP), lambda plan: 0.0,
                    max_concurrency=max_concurrency)


def test_a_concurrency_slot_holds_requests_back_and_their_wait_is_queue_time():
    # three requests at t=0, one slot: each runs prefill + 1 decode (2 steps, 20 ms) after the one before
    res = run([Request(str(k), 0.0, 4, 2) for k in range(3)], max_concurrency=1)
    sent = [r.arrival_s for r in res.records]
    assert sent == [0.0, 2 * STEP, 4 * STEP]
    assert [round(r.queued_s, 9) for r in res.records] == [0.0, 2 * STEP, 4 * STEP]
    assert all(abs(r.ttft_s - STEP) < 1e-12 for r in res.records)      # TTFT from the send: one prefill step
    assert res.max_in_flight == 1


def test_a_request_arriving_mid_step_waits_for_the_step_to_end():
    # request 0 alone from t=0 (its prefill 0-10 ms, decodes after); request 1 arrives at 5 ms: the V0 engine
    # takes it at the next step boundary (10 ms), its prefill ends at 20 ms: TTFT 15 ms from its arrival
    res = run([Request("0", 0.0, 4, 4), Request("1", 0.005, 4, 2)])
    assert abs(res.records[1].ttft_s - 0.015) < 1e-12
    assert res.records[1].arrival_s == 0.005


def test_the_step_record_counts_the_waiting_queue():
    # max_num_seqs 1: while the first request runs, the other two wait
    res = run([Request(str(k), 0.0, 4, 3) for k in range(3)], seqs=1)
    assert res.steps[0].waiting == 2
    assert res.steps[-1].waiting == 0
    assert all(r.success for r in res.records)


class FixedLag:
    """An async output processor whose next step issues its forward ISSUED after it starts, and whose output
    processing takes OUT."""
    OUT = 0.001

    def lag_s(self, next_plan, next_issued_s, plan):
        return next_issued_s + self.OUT

    def drain_s(self, plan):
        return self.OUT


ISSUED = 0.004


def run_async(requests, max_concurrency=None):
    return run_loop(requests, scheduler(), lambda q, kv, same: (STEP, STEP, ISSUED), lambda plan: 0.0,
                    max_concurrency=max_concurrency, async_output=FixedLag())


def test_an_async_output_processor_hands_tokens_over_once_the_next_step_is_issued():
    # prefill 0-10 ms, decodes 10-20 and 20-30 ms: token 1 leaves when step 2 has issued its forward (10 + 4) and
    # processed it (+1): 15 ms; token 2 at 25 ms; token 3 has no step after it: drained at 30 + 1 ms
    res = run_async([Request("0", 0.0, 4, 3)])
    assert [round(t, 9) for t in res.records[0].token_s] == [0.015, 0.025, 0.031]
    assert abs(res.records[0].ttft_s - 0.015) < 1e-12
    assert [round(s.end_s, 9) for s in res.steps] == [0.010, 0.020, 0.030]     # the steps themselves are unchanged


def test_a_client_slot_frees_when_the_last_token_reaches_the_client():
    # one slot: the second request is sent when the first one's last token arrives (31 ms), not at its step's end
    res = run_async([Request("0", 0.0, 4, 3), Request("1", 0.0, 4, 2)], max_concurrency=1)
    assert abs(res.records[1].arrival_s - 0.031) < 1e-12


def test_a_front_end_that_processes_outputs_apart_delays_each_steps_tokens_by_its_own_work():
    # vLLM V1: a step's tokens leave once the API server has detokenised them (here 2 ms), the steps unchanged
    res = run_loop([Request("0", 0.0, 4, 3)], scheduler(), lambda q, kv, same: (STEP, STEP, ISSUED),
                   lambda plan: 0.0, delivery=lambda plan: 0.002)
    assert [round(t, 9) for t in res.records[0].token_s] == [0.012, 0.022, 0.032]
    assert [round(s.end_s, 9) for s in res.steps] == [0.010, 0.020, 0.030]
