"""Moved to atc_py/om/task_types.py (the enums are the .om's, which om/model_info reads: from engines they
closed an om/ <-> engines/ import cycle). This re-export keeps runner/sim/device.py and runner/sim/program.py
working while runner/sim is being moved; delete it once they import atc_py.om.task_types."""
from ..om.task_types import *  # noqa: F401,F403
