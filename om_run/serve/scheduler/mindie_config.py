"""MindIE Service's config.json, the part its scheduler reads: BackendConfig.ScheduleConfig, the ModelDeployConfig
lengths and the first ModelConfig entry, read and checked as MindIE checks them.

Keys, ranges and defaults: MindIE-LLM's docs/zh/user_guide/user_manual/service_parameter_configuration.md and its
checks in src/config_manager/schedule_config.cpp (ScheduleConfigManager::CheckParam), model_deploy_config.cpp and
config_manager_impl.cpp (CheckAllParam), gitcode.com/Ascend/MindIE-LLM (mirrored as github.com/Ascend/MindIE-LLM).
MindIE requires every key of ScheduleConfig; here only the ones the scheduler needs are required, the others take
the documented default (maxIterTimes 512, maxFirstTokenWaitTime 2500 ms, templateType "Standard", truncation 0,
npuMemSize -1, cpuMemSize 5). maxPrefillBatchSize 0 means maxBatchSize (LoadBasicScheduleConfig). Prefix caching and
SplitFuse are ModelConfig[0].plugin_params plugin types "prefix_cache" / "splitfuse"."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from atc_py.common.errors import AtcError

MAX_FILE_BYTES = 10 * 1024 * 1024   # MindIE reads a config.json of (0, 10 MB] only
MAX_INPUT_LEN = 4 * 1024 * 1024
UINT32_MAX = 2 ** 32 - 1
SCHEDULE = "BackendConfig.ScheduleConfig"
DEPLOY = "BackendConfig.ModelDeployConfig"
MODEL = "BackendConfig.ModelDeployConfig.ModelConfig[0]"


def _bad(path: str, key: str, value: object, reason: str) -> AtcError:
    where = f"{key} in {path}" if path else key
    return AtcError("E10001", value=json.dumps(value) if value is not None else "(missing)", parameter=where,
                    reason=reason)


@dataclass(frozen=True)
class MindieConfig:
    """The scheduling settings of a MindIE config.json (MindIE's key in each field's comment); `path` names the
    file in errors."""
    max_batch_size: int                  # maxBatchSize: decodes per step
    max_prefill_batch_size: int          # maxPrefillBatchSize: prefills per step (0 -> maxBatchSize)
    max_prefill_tokens: int              # maxPrefillTokens: prompt tokens per prefill step
    prefill_time_ms_per_req: int         # prefillTimeMsPerReq (supportSelectBatch's cost model)
    decode_time_ms_per_req: int          # decodeTimeMsPerReq (supportSelectBatch's cost model)
    support_select_batch: bool           # supportSelectBatch
    max_queue_delay_us: int              # maxQueueDelayMicroseconds
    max_preempt_count: int               # maxPreemptCount: swap-outs per step (more are recomputed)
    cache_block_size: int                # cacheBlockSize
    max_seq_len: int                     # ModelDeployConfig.maxSeqLen
    max_input_token_len: int             # ModelDeployConfig.maxInputTokenLen
    max_iter_times: int = 512            # maxIterTimes: the output cap
    max_first_token_wait_ms: int = 2500  # maxFirstTokenWaitTime
    template_type: str = "Standard"      # templateType ("Mix" = SplitFuse)
    truncation: int = 0                  # ModelDeployConfig.truncation (0: a too long prompt is an error)
    npu_mem_size_gb: int = -1            # ModelConfig[0].npuMemSize (-1: what is left after the weights)
    cpu_mem_size_gb: int = 5             # ModelConfig[0].cpuMemSize (swap space)
    world_size: int | None = None        # ModelConfig[0].worldSize
    model_name: str = ""                 # ModelConfig[0].modelName
    model_weight_path: str = ""          # ModelConfig[0].modelWeightPath
    prefix_cache: bool = False           # plugin_params plugin_type prefix_cache
    splitfuse: bool = False              # plugin_params plugin_type splitfuse
    path: str = ""

    def __post_init__(self) -> None:
        p = self.path
        if self.max_prefill_batch_size == 0:
            object.__setattr__(self, "max_prefill_batch_size", self.max_batch_size)

        def in_range(key: str, value: int, low: int, high: int) -> None:
            if not low <= value <= high:
                raise _bad(p, key, value, f"must be in [{low}, {high}]")

        in_range(f"{SCHEDULE}.cacheBlockSize", self.cache_block_size, 1, 128)
        in_range(f"{SCHEDULE}.maxBatchSize", self.max_batch_size, 1, 819200)
        in_range(f"{SCHEDULE}.maxPreemptCount", self.max_preempt_count, 0, self.max_batch_size)
        in_range(f"{SCHEDULE}.maxPrefillBatchSize", self.max_prefill_batch_size, 1, self.max_batch_size)
        in_range(f"{SCHEDULE}.maxPrefillTokens", self.max_prefill_tokens, 1, MAX_INPUT_LEN)
        in_range(f"{SCHEDULE}.maxQueueDelayMicroseconds", self.max_queue_delay_us, 500, 1000000)
        in_range(f"{SCHEDULE}.prefillTimeMsPerReq", self.prefill_time_ms_per_req, 0, 1000)
        in_range(f"{SCHEDULE}.decodeTimeMsPerReq", self.decode_time_ms_per_req, 0, 1000)
        in_range(f"{SCHEDULE}.maxFirstTokenWaitTime", self.max_first_token_wait_ms, 0, 3600000)
        in_range(f"{SCHEDULE}.maxIterTimes", self.max_iter_times, 1, UINT32_MAX)
        in_range(f"{DEPLOY}.maxSeqLen", self.max_seq_len, 1, UINT32_MAX)
        in_range(f"{DEPLOY}.maxInputTokenLen", self.max_input_token_len, 1, MAX_INPUT_LEN)
        in_range(f"{DEPLOY}.truncation", self.truncation, -1, 1)
        if self.template_type not in ("Standard", "Mix"):
            raise _bad(p, f"{SCHEDULE}.templateType", self.template_type, 'must be "Standard" or "Mix"')
        if self.max_prefill_tokens < self.max_input_token_len and self.template_type != "Mix":
            raise _bad(p, f"{SCHEDULE}.maxPrefillTokens", self.max_prefill_tokens,
                       f"must be >= {DEPLOY}.maxInputTokenLen ({self.max_input_token_len})")
        if self.npu_mem_size_gb != -1 and self.npu_mem_size_gb < 1:
            raise _bad(p, f"{MODEL}.npuMemSize", self.npu_mem_size_gb, "must be -1 (automatic) or > 0")
        if self.cpu_mem_size_gb < 0 or (self.cpu_mem_size_gb == 0 and self.max_preempt_count > 0):
            raise _bad(p, f"{MODEL}.cpuMemSize", self.cpu_mem_size_gb,
                       "must be >= 0, and > 0 when maxPreemptCount > 0 (swapped requests live there)")
        if self.world_size is not None and self.world_size < 1:
            raise _bad(p, f"{MODEL}.worldSize", self.world_size, "must be >= 1")

    @property
    def input_limit(self) -> int:
        """The longest prompt MindIE accepts: min(maxInputTokenLen, maxSeqLen - 1)."""
        return min(self.max_input_token_len, self.max_seq_len - 1)


def _section(data: object, key: str, path: str) -> dict:
    value = data.get(key.rsplit(".", 1)[-1]) if isinstance(data, dict) else None
    if not isinstance(value, dict):
        raise _bad(path, key, value, "must be a JSON object" if value is not None else "the section is missing")
    return value


def _uint(section: dict, where: str, key: str, path: str, default: int | None = None, signed: bool = False) -> int:
    if key not in section:
        if default is None:
            raise _bad(path, f"{where}.{key}", None, "the key is missing")
        return default
    value = section[key]
    if isinstance(value, bool) or not isinstance(value, int) or (value < 0 and not signed):
        raise _bad(path, f"{where}.{key}", value, "must be a non-negative integer" if not signed else
                   "must be an integer")
    return value


def _plugins(model: dict, path: str) -> set[str]:
    text = model.get("plugin_params")
    if text in (None, ""):
        return set()
    try:
        params = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        params = None
    if not isinstance(params, dict):
        raise _bad(path, f"{MODEL}.plugin_params", text, 'must be a JSON object string like "{\\"plugin_type\\": '
                                                          '\\"prefix_cache\\"}"')
    return {name.strip() for name in str(params.get("plugin_type", "")).split(",") if name.strip()}


def _check_devices(ids: object, world: int | None, path: str) -> None:
    """BackendConfig.npuDeviceIds: one list of distinct device ids per model instance, as many as worldSize (MindIE
    runs one rank on each)."""
    if ids is None:
        return
    if not isinstance(ids, list) or not all(isinstance(g, list) and g and all(isinstance(d, int) and
                                                                              not isinstance(d, bool) and 0 <= d < 256
                                                                              for d in g) for g in ids):
        raise _bad(path, "BackendConfig.npuDeviceIds", ids, "must be a list of lists of device ids 0..255, e.g. "
                                                           "[[0, 1]]")
    for g in ids:
        if len(set(g)) != len(g):
            raise _bad(path, "BackendConfig.npuDeviceIds", ids, f"names a device twice in {g}")
        if world is not None and len(g) != world:
            raise _bad(path, "BackendConfig.npuDeviceIds", ids,
                       f"{g} has {len(g)} device(s), ModelConfig.worldSize is {world}: one device per rank")


def mindie_config_from_dict(data: object, path: str = "") -> MindieConfig:
    """Check a parsed config.json; errors name the key (and `path`)."""
    backend = _section(data, "BackendConfig", path)
    sched = _section(backend, SCHEDULE, path)
    deploy = _section(backend, DEPLOY, path)
    models = deploy.get("ModelConfig", [])
    if not isinstance(models, list) or (models and not isinstance(models[0], dict)):
        raise _bad(path, f"{DEPLOY}.ModelConfig", models, "must be a list of model objects")
    model = models[0] if models else {}
    select = sched.get("supportSelectBatch")
    if not isinstance(select, bool):
        raise _bad(path, f"{SCHEDULE}.supportSelectBatch", select,
                   "must be true or false" if select is not None else "the key is missing")
    template = sched.get("templateType", "Standard")
    truncation = deploy.get("truncation", 0)
    if isinstance(truncation, bool):
        truncation = -1 if truncation else 0
    if not isinstance(truncation, int):
        raise _bad(path, f"{DEPLOY}.truncation", truncation, "must be -1, 0, 1, true or false")
    for key in ("modelName", "modelWeightPath"):
        if key in model and not isinstance(model[key], str):
            raise _bad(path, f"{MODEL}.{key}", model[key], "must be a string")
    plugins = _plugins(model, path)
    world = _uint(model, MODEL, "worldSize", path) if "worldSize" in model else None
    _check_devices(backend.get("npuDeviceIds"), world, path)
    return MindieConfig(
        max_batch_size=_uint(sched, SCHEDULE, "maxBatchSize", path),
        max_prefill_batch_size=_uint(sched, SCHEDULE, "maxPrefillBatchSize", path),
        max_prefill_tokens=_uint(sched, SCHEDULE, "maxPrefillTokens", path),
        prefill_time_ms_per_req=_uint(sched, SCHEDULE, "prefillTimeMsPerReq", path),
        decode_time_ms_per_req=_uint(sched, SCHEDULE, "decodeTimeMsPerReq", path),
        support_select_batch=select,
        max_queue_delay_us=_uint(sched, SCHEDULE, "maxQueueDelayMicroseconds", path),
        max_preempt_count=_uint(sched, SCHEDULE, "maxPreemptCount", path),
        cache_block_size=_uint(sched, SCHEDULE, "cacheBlockSize", path),
        max_seq_len=_uint(deploy, DEPLOY, "maxSeqLen", path),
        max_input_token_len=_uint(deploy, DEPLOY, "maxInputTokenLen", path),
        max_iter_times=_uint(sched, SCHEDULE, "maxIterTimes", path, default=512),
        max_first_token_wait_ms=_uint(sched, SCHEDULE, "maxFirstTokenWaitTime", path, default=2500),
        template_type=template if isinstance(template, str) else repr(template),
        truncation=truncation,
        npu_mem_size_gb=_uint(model, MODEL, "npuMemSize", path, default=-1, signed=True),
        cpu_mem_size_gb=_uint(model, MODEL, "cpuMemSize", path, default=5),
        world_size=world,
        model_name=model.get("modelName", ""),
        model_weight_path=model.get("modelWeightPath", ""),
        prefix_cache="prefix_cache" in plugins,
        splitfuse="splitfuse" in plugins,
        path=path,
    )


def load_mindie_config(path: str) -> MindieConfig:
    """Read and check a MindIE config.json file."""
    try:
        size = os.path.getsize(path)
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise AtcError("E13001", file=path, errmsg=str(getattr(exc, "strerror", None) or exc)) from None
    if not 0 < size <= MAX_FILE_BYTES:
        raise AtcError("E13015", file=path, size=size, maxsize=MAX_FILE_BYTES)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AtcError("E13003", file=path,
                       errmsg=f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    return mindie_config_from_dict(data, path)
