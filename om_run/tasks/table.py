"""The one table of task types om-run runs: {rtModelTaskType_t: handler}. The loader refuses a type that is not in
it; the validator, the program's decoder and the device dispatch through it with one lookup on the type; the sets
of types the scheduler and the program test against derive from the handlers' flags. A new task type is a
handler class (base.TaskHandler) in its group's module and its row here."""
from __future__ import annotations

from .base import TaskHandler
from .events import EventRecord, EventWait
from .hccl import Hccl
from .kernels import AllKernel, FftsPlusTask, Kernel, SuperKernel
from .labels import LabelGotoEx, LabelSet, LabelSwitchByIndex
from .memcpy import MemcpyAsync
from .streams import StreamActive, StreamSwitch
from .tiling_sink import Nop, PreprocessKernel, Update

# in this order the handlers' check_model runs after the tasks (labels before the tiling sink's UPDATEs)
HANDLERS: dict[int, TaskHandler] = {h.type: h for h in (
    Kernel(), AllKernel(), FftsPlusTask(), SuperKernel(),
    EventRecord(), EventWait(),
    LabelSet(), LabelGotoEx(), LabelSwitchByIndex(),
    StreamActive(), StreamSwitch(),
    MemcpyAsync(),
    Hccl(),
    PreprocessKernel(), Update(), Nop(),
)}


def _types(flag: str) -> frozenset[int]:
    return frozenset(t for t, h in HANDLERS.items() if getattr(h, flag))


GROUPS: dict[str, frozenset[int]] = {g: frozenset(t for t, h in HANDLERS.items() if h.group == g)
                                     for g in dict.fromkeys(h.group for h in HANDLERS.values())}
KERNEL_KINDS = _types("launch")                    # one kernel from its SQE (UPDATE, prefetch, inline runs)
BLOCKING_KINDS = _types("blocks")                  # what may hold a stream's head back
VALUE_BRANCH_KINDS = _types("branches_on_memory")  # control flow that reads device memory
MEMORY_READ_KINDS = _types("reads_memory")         # run by reading device memory (after the kernels before)
STREAM_START_KINDS = _types("starts_stream")       # start a stream that waits for them
LABEL_SET_KINDS = _types("sets_label")             # mark a jump's target
