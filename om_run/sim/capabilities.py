"""What the simulated device answers when an online build (atc_py.build(..., online=True)) asks for its
capabilities."""
from __future__ import annotations

from atc_py.platform import load_soc

FEATURE_TYPE_MODEL_TASK_UPDATE = "FEATURE_TYPE_MODEL_TASK_UPDATE"


class Device:
    """A simulated NPU that answers capability queries the way aclrtGetDeviceCapability does (online builds)."""

    def __init__(self, soc_version: str):
        self.soc = load_soc(soc_version)
        self.soc_version = soc_version

    def get_capability(self, feature: str) -> bool:
        if feature == FEATURE_TYPE_MODEL_TASK_UPDATE:
            return self.soc.model_task_update
        return False
