"""One entry point for the engine loop: the scheduler of the served engine it simulates."""
from __future__ import annotations

from atc_py.common.errors import AtcError, internal
from om_run.serve.scheduler.base import Scheduler
from om_run.serve.scheduler.mindie import MindieScheduler
from om_run.serve.scheduler.mindie_config import MindieConfig, load_mindie_config
from om_run.serve.scheduler.vllm_settings import V0, VllmSettings
from om_run.serve.scheduler.vllm_v0 import VllmV0Scheduler
from om_run.serve.scheduler.vllm_v1 import VllmV1Scheduler

ENGINES = ("vllm", "mindie")


def make_scheduler(engine: str, settings: VllmSettings | MindieConfig | str, num_blocks: int,
                   num_cpu_blocks: int | None = None) -> Scheduler:
    """`engine` "vllm" (settings: VllmSettings; its `scheduler` picks V0 or V1) or "mindie" (settings: a
    MindieConfig or the path of its config.json; `num_cpu_blocks` bounds its swap space)."""
    if engine == "vllm":
        if not isinstance(settings, VllmSettings):
            raise internal(f"the vllm scheduler needs VllmSettings, got {type(settings).__name__}")
        return (VllmV0Scheduler if settings.scheduler == V0 else VllmV1Scheduler)(settings, num_blocks)
    if engine == "mindie":
        config = load_mindie_config(settings) if isinstance(settings, str) else settings
        if not isinstance(config, MindieConfig):
            raise internal(f"the mindie scheduler needs a MindieConfig, got {type(settings).__name__}")
        return MindieScheduler(config, num_blocks, num_cpu_blocks)
    raise AtcError("E10001", value=engine, parameter="--engine", reason=f"must be one of {', '.join(ENGINES)}")
