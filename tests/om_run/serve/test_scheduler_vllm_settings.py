"""vllm settings: vLLM's and vllm-ascend's defaults per engine version, and vLLM's checks as E10001 errors."""
from __future__ import annotations

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.scheduler.vllm_settings import VllmSettings, check_kv_capacity


def test_v0_defaults_on_ascend():
    s = VllmSettings(scheduler="v0", max_model_len=4096).resolved()
    assert (s.max_num_seqs, s.max_num_batched_tokens, s.block_size) == (256, 4096, 128)
    assert s.enable_chunked_prefill is False and s.enable_prefix_caching is False
    assert VllmSettings(scheduler="v0", max_model_len=1024).resolved().max_num_batched_tokens == 2048
    chunked = VllmSettings(scheduler="v0", max_model_len=4096, enable_chunked_prefill=True).resolved()
    assert chunked.max_num_batched_tokens == 2048
    assert s.gpu_memory_utilization == 0.9 and s.enforce_eager is False and s.is_resolved


def test_v1_defaults_on_ascend():
    s = VllmSettings(max_model_len=4096).resolved()
    assert s.scheduler == "v1"
    assert (s.max_num_seqs, s.max_num_batched_tokens, s.block_size) == (256, 2048, 128)
    assert s.enable_chunked_prefill is True and s.enable_prefix_caching is True
    # vllm-ascend forces block size 128 when chunked prefill or prefix caching is on; upstream keeps the choice
    assert VllmSettings(max_model_len=4096, block_size=16).resolved().block_size == 128
    assert VllmSettings(max_model_len=4096, block_size=16, platform="vllm").resolved().block_size == 16
    assert VllmSettings(max_model_len=4096, platform="vllm").resolved().block_size == 16


@pytest.mark.parametrize("kwargs, text", [
    (dict(max_num_seqs=0), "Value 0 for parameter --max-num-seqs is invalid. Reason: must be >= 1"),
    (dict(max_num_batched_tokens=-1), "--max-num-batched-tokens is invalid. Reason: must be >= 1"),
    (dict(block_size=2.5), "--block-size is invalid. Reason: must be an integer"),
    (dict(gpu_memory_utilization=0), "Value 0 for parameter --gpu-memory-utilization is invalid"),
    (dict(gpu_memory_utilization=1.5), "must be > 0 and <= 1"),
    (dict(enable_prefix_caching="yes"), "--enable-prefix-caching is invalid. Reason: must be true or false"),
    (dict(scheduler="v2"), "--scheduler is invalid. Reason: must be one of v0, v1"),
])
def test_bad_values_name_the_flag(kwargs, text):
    with pytest.raises(AtcError) as err:
        VllmSettings(**kwargs)
    assert err.value.code == "E10001" and text in str(err.value)


def test_gpu_memory_utilization_of_one_is_allowed():
    assert VllmSettings(gpu_memory_utilization=1.0).gpu_memory_utilization == 1.0


@pytest.mark.parametrize("kwargs, text", [
    (dict(scheduler="v0", max_model_len=4096, max_num_batched_tokens=2048),
     "smaller than max_model_len (4096) without chunked prefill"),
    (dict(scheduler="v1", max_model_len=4096, enable_chunked_prefill=False, max_num_batched_tokens=2048),
     "smaller than max_model_len (4096) without chunked prefill"),
    (dict(max_model_len=4096, max_num_batched_tokens=64, max_num_seqs=128), "must be >= max_num_seqs (128)"),
    (dict(scheduler="v0", max_model_len=4096, enable_prefix_caching=True, block_size=16),
     "vllm-ascend (V0) needs block size 128 with prefix caching"),
    (dict(), "--max-model-len is invalid. Reason: not given"),
])
def test_cross_checks(kwargs, text):
    with pytest.raises(AtcError) as err:
        VllmSettings(**kwargs).resolved()
    assert text in str(err.value)


def test_v0_chunked_prefill_lifts_the_max_model_len_check():
    s = VllmSettings(scheduler="v0", max_model_len=4096, enable_chunked_prefill=True,
                     max_num_batched_tokens=512).resolved()
    assert s.max_num_batched_tokens == 512


def test_kv_capacity_check():
    s = VllmSettings(max_model_len=1000, block_size=4, platform="vllm", enable_prefix_caching=False).resolved()
    check_kv_capacity(s, 250)            # 250 x 4 = 1000 tokens: fits exactly
    with pytest.raises(AtcError, match="larger than the KV cache holds"):
        check_kv_capacity(s, 249)
