"""The engine schedulers of om-run serve: vLLM V0 and V1 (as vllm-ascend runs them) and MindIE, over one paged KV
block manager with prefix caching; each turns waiting and running sequences into one StepPlan per engine step."""
from om_run.serve.scheduler.base import Scheduler
from om_run.serve.scheduler.blocks import BlockManager
from om_run.serve.scheduler.factory import make_scheduler
from om_run.serve.scheduler.mindie import MindieScheduler
from om_run.serve.scheduler.mindie_config import MindieConfig, load_mindie_config, mindie_config_from_dict
from om_run.serve.scheduler.vllm_settings import VllmSettings
from om_run.serve.scheduler.vllm_v0 import VllmV0Scheduler
from om_run.serve.scheduler.vllm_v1 import VllmV1Scheduler

__all__ = ["BlockManager", "MindieConfig", "MindieScheduler", "Scheduler", "VllmSettings", "VllmV0Scheduler",
           "VllmV1Scheduler", "load_mindie_config", "make_scheduler", "mindie_config_from_dict"]
