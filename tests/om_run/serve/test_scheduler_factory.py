"""The factory, and every scheduler under load: all requests finish with their output and no KV block leaks."""
from __future__ import annotations

import json
import random

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.request import FINISHED
from om_run.serve.scheduler import (
    MindieConfig,
    MindieScheduler,
    VllmSettings,
    VllmV0Scheduler,
    VllmV1Scheduler,
    make_scheduler,
)
from tests.om_run.serve.sched_util import make_seq


def mindie(**kwargs) -> MindieConfig:
    base = dict(max_batch_size=8, max_prefill_batch_size=4, max_prefill_tokens=64, prefill_time_ms_per_req=150,
                decode_time_ms_per_req=50, support_select_batch=False, max_queue_delay_us=500, max_preempt_count=0,
                cache_block_size=4, max_seq_len=64, max_input_token_len=48)
    base.update(kwargs)
    return MindieConfig(**base)


def test_factory_picks_the_engine(tmp_path):
    assert isinstance(make_scheduler("vllm", VllmSettings(scheduler="v0", max_model_len=256), 8), VllmV0Scheduler)
    assert isinstance(make_scheduler("vllm", VllmSettings(max_model_len=256), 8), VllmV1Scheduler)
    assert isinstance(make_scheduler("mindie", mindie(), 8), MindieScheduler)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"BackendConfig": {
        "ModelDeployConfig": {"maxSeqLen": 64, "maxInputTokenLen": 48},
        "ScheduleConfig": {"maxBatchSize": 8, "maxPrefillBatchSize": 4, "maxPrefillTokens": 64,
                           "prefillTimeMsPerReq": 150, "decodeTimeMsPerReq": 50, "supportSelectBatch": True,
                           "maxQueueDelayMicroseconds": 500, "maxPreemptCount": 0, "cacheBlockSize": 4}}}))
    sched = make_scheduler("mindie", str(path), 8)
    assert sched.config.support_select_batch is True and sched.blocks.block_size == 4
    with pytest.raises(AtcError, match="Value sglang for parameter --engine is invalid"):
        make_scheduler("sglang", VllmSettings(max_model_len=256), 8)
    with pytest.raises(AtcError, match="E10055.*SplitFuse"):
        make_scheduler("mindie", mindie(splitfuse=True), 8)


def _workload(rng: random.Random, shared: bool) -> list:
    seqs = []
    prefix = tuple(rng.randrange(100) for _ in range(8))
    for i in range(60):
        prompt, out = rng.randint(1, 24), rng.randint(1, 12)
        ids = None
        if shared:
            ids = prefix[:rng.randint(0, 8)] + tuple(rng.randrange(100) for _ in range(prompt))
        seqs.append(make_seq(f"r{i}", prompt, out, arrival=i * 0.01, ids=ids))
    return seqs


SCHEDULERS = [
    ("v0", lambda caching: VllmV0Scheduler(VllmSettings(scheduler="v0", max_model_len=64, max_num_batched_tokens=64,
                                                        max_num_seqs=8, block_size=4, platform="vllm",
                                                        enable_prefix_caching=caching), 24)),
    ("v0-chunked", lambda caching: VllmV0Scheduler(VllmSettings(
        scheduler="v0", max_model_len=64, max_num_batched_tokens=16, max_num_seqs=8, block_size=4, platform="vllm",
        enable_chunked_prefill=True, enable_prefix_caching=caching), 24)),
    ("v1", lambda caching: VllmV1Scheduler(VllmSettings(max_model_len=64, max_num_batched_tokens=16, max_num_seqs=8,
                                                        block_size=4, platform="vllm",
                                                        enable_prefix_caching=caching), 24)),
    ("mindie", lambda caching: MindieScheduler(mindie(prefix_cache=caching), 24)),
    ("mindie-swap", lambda caching: MindieScheduler(mindie(prefix_cache=caching, max_preempt_count=2), 24,
                                                    num_cpu_blocks=12)),
    ("mindie-select", lambda caching: MindieScheduler(mindie(prefix_cache=caching, support_select_batch=True), 24)),
]


@pytest.mark.parametrize("name, build", SCHEDULERS, ids=[name for name, _ in SCHEDULERS])
@pytest.mark.parametrize("caching", [False, True])
def test_everything_finishes_and_no_block_leaks(name, build, caching):
    rng = random.Random(7)
    sched = build(caching)
    pending = _workload(rng, shared=caching)
    done, now, preemptions = [], 0.0, 0
    while pending or sched.has_unfinished:
        while pending and pending[0].request.arrival_s <= now:
            assert sched.add(pending.pop(0))
        plan = sched.schedule(now)
        if plan is None:
            times = [t for t in (sched.wake_s, pending[0].request.arrival_s if pending else None) if t is not None]
            assert times and max(times) > now, "the scheduler stalled with work left"
            now = min(t for t in times if t > now)
            continue
        assert plan.num_tokens and plan.blocks_in_use <= plan.num_blocks
        assert len({b for s in sched.running for b in s.block_ids}) == plan.blocks_in_use
        preemptions += len(plan.preempted)
        finished = sched.update(plan, {item.seq: rng.randrange(100) for item in plan.scheduled if item.samples})
        done += finished
        now += 0.005
    assert len(done) == 60 and all(s.status == FINISHED and s.block_ids == [] for s in done)
    assert all(s.generated == s.request.output_len for s in done)
    assert sched.num_free_blocks == sched.blocks.num_blocks            # no leak
    assert all(sched.blocks.ref_count(b) == 0 for b in range(sched.blocks.num_blocks))
    assert preemptions > 0                                               # the cache was tight enough to matter
    if caching:
        assert sched.blocks.stats.hit_blocks > 0
