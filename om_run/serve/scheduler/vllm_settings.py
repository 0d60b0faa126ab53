"""The vllm serve settings the schedulers read, with vLLM's and vllm-ascend's defaults and vLLM's checks.

Defaults (None = "not given", filled by `resolved()` once max_model_len is known):
- max_num_seqs: 256. V0: vLLM v0.7.x EngineArgs (vllm/engine/arg_utils.py `256 if not VLLM_USE_V1`). V1: vLLM
  EngineArgs.get_batch_defaults gives `vllm serve` 256 unless the device reports >= 70 GiB (then 1024); vllm-ascend
  leaves NPUPlatform.get_device_total_memory unimplemented (vllm_ascend/platform.py, v0.23.0), so 0 GiB -> 256.
- max_num_batched_tokens: V0 (vllm/config.py SchedulerConfig.__post_init__, v0.7.x): 2048 with chunked prefill,
  max(max_model_len, 2048) without. V1 `vllm serve` on a < 70 GiB device: 2048 (8192 is the LLM class's and the
  >= 70 GiB serve default), from the same get_batch_defaults; without chunked prefill we take max(max_model_len,
  2048) so the vLLM check below passes (SchedulerConfig's fallback; doubtful for V1).
- block_size: 128 on Ascend (vllm_ascend/platform.py v0.7.3 check_and_update_config; v0.23.0 utils.py
  refresh_block_size); 16 upstream (platform "vllm").
- enable_chunked_prefill: V0 off (v0.7.x create_engine_config turns it on by itself only for a > 32K context on a
  CUDA GPU); V1 on ("V1 always uses chunked prefills", _set_default_args_v1).
- enable_prefix_caching: V0 off, V1 on (EngineArgs: `enable_prefix_caching = VLLM_USE_V1` / V1 default True).
- gpu_memory_utilization 0.9, enforce_eager False (EngineArgs).

Checks (vLLM SchedulerConfig._verify_args / verify_max_model_len, CacheConfig._verify_args): without chunked
prefill max_num_batched_tokens >= max_model_len; max_num_batched_tokens >= max_num_seqs; 0 < gpu_memory_utilization
<= 1. vllm-ascend's platform rules (platform "ascend"): V0 with prefix caching needs block_size 128 (v0.7.3 raises);
V1 with prefix caching or chunked prefill gets block_size 128 whatever was asked (v0.23.0 refresh_block_size
overrides it with an info log)."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

from atc_py.common.errors import AtcError

V0, V1 = "v0", "v1"
PLATFORMS = ("ascend", "vllm")
_FLAG = {f: "--" + f.replace("_", "-") for f in (
    "max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size", "enable_chunked_prefill",
    "enable_prefix_caching", "gpu_memory_utilization", "enforce_eager")}
_FLAG.update(scheduler="--scheduler", platform="--platform")


def _bad(name: str, value: object, reason: str) -> AtcError:
    return AtcError("E10001", value=value, parameter=_FLAG[name], reason=reason)


@dataclass(frozen=True)
class VllmSettings:
    """vllm serve's scheduling and cache settings; `scheduler` picks the V0 or V1 engine."""
    scheduler: str = V1
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    gpu_memory_utilization: float = 0.9
    enforce_eager: bool = False
    platform: str = "ascend"

    def __post_init__(self) -> None:
        if self.scheduler not in (V0, V1):
            raise _bad("scheduler", self.scheduler, f"must be one of {V0}, {V1}")
        if self.platform not in PLATFORMS:
            raise _bad("platform", self.platform, f"must be one of {', '.join(PLATFORMS)}")
        for name in ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise _bad(name, value, "must be an integer")
            if value < 1:
                raise _bad(name, value, "must be >= 1")
        for name in ("enable_chunked_prefill", "enable_prefix_caching", "enforce_eager"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise _bad(name, value, "must be true or false")
        util = self.gpu_memory_utilization
        if isinstance(util, bool) or not isinstance(util, (int, float)) or not 0 < util <= 1:
            raise _bad("gpu_memory_utilization", util, "must be > 0 and <= 1")

    @property
    def is_resolved(self) -> bool:
        return all(getattr(self, f.name) is not None for f in fields(self))

    def resolved(self) -> VllmSettings:
        """Every default filled in and the cross-setting checks passed; needs max_model_len."""
        if self.max_model_len is None:
            raise _bad("max_model_len", None, "not given: vLLM takes it from the model's config "
                                              "(max_position_embeddings); pass the model's context length")
        v1 = self.scheduler == V1
        chunked = v1 if self.enable_chunked_prefill is None else self.enable_chunked_prefill
        caching = v1 if self.enable_prefix_caching is None else self.enable_prefix_caching
        seqs = 256 if self.max_num_seqs is None else self.max_num_seqs
        block = self.block_size if self.block_size is not None else (128 if self.platform == "ascend" else 16)
        if self.platform == "ascend":
            if v1 and (caching or chunked):
                block = 128
            elif caching and block != 128:
                raise _bad("block_size", block, "vllm-ascend (V0) needs block size 128 with prefix caching")
        budget = self.max_num_batched_tokens
        if budget is None:
            budget = 2048 if chunked else max(self.max_model_len, 2048)
        if not chunked and budget < self.max_model_len:
            raise _bad("max_num_batched_tokens", budget,
                       f"smaller than max_model_len ({self.max_model_len}) without chunked prefill: vLLM would "
                       "reject longer sequences; increase it, decrease --max-model-len or enable chunked prefill")
        if budget < seqs:
            raise _bad("max_num_batched_tokens", budget, f"must be >= max_num_seqs ({seqs})")
        return replace(self, max_num_seqs=seqs, max_num_batched_tokens=budget, block_size=block,
                       enable_chunked_prefill=chunked, enable_prefix_caching=caching)


def check_kv_capacity(settings: VllmSettings, num_blocks: int) -> None:
    """vLLM refuses to start when one max_model_len sequence cannot fit in the KV cache (V0: worker.py
    raise_if_cache_size_invalid; V1: kv_cache_utils.py check_enough_kv_cache_memory)."""
    capacity = num_blocks * settings.block_size
    if settings.max_model_len > capacity:
        raise _bad("max_model_len", settings.max_model_len,
                   f"larger than the KV cache holds ({num_blocks} blocks x {settings.block_size} = {capacity} "
                   "tokens): vLLM refuses to start; raise --gpu-memory-utilization or lower --max-model-len")
