"""What a task type is to om-run: one handler class per rtModelTaskType_t value, found by the TaskDef's type in
the one table (table.py). A handler is the single place that knows its type: how the loader checks it
(validate), what the simulator decodes it into and which device memory it touches (decode), and how the
simulated device runs it (execute). This package sits below load and sim, so what a handler works on is handed
to it, the way an interpreter hands itself to the handler of a node's kind: the validator (load/validate.py),
the program's decoder (sim/program.py), the run (sim/device.py)."""
from __future__ import annotations

from atc_py.engines.aicore import kernel_of
from atc_py.om.task_types import TASK_TYPE_NAMES


class TaskHandler:
    """One task type. The flags tell the scheduler and the program what it needs to know about the type without
    naming it; each default is what most types are."""
    type: int                       # its rtModelTaskType_t value
    group: str                      # its family: "kernels", "tiling sink", "events", "labels", "streams", "memcpy"
    launch = False                  # one kernel run from its SQE: UPDATE patches it, a prefetch snapshots it, an
                                    # idle machine runs it to its end at once (DeviceRun.kick)
    blocks = False                  # may hold its stream's head back (blocked() says until when)
    branches_on_memory = False      # where its stream goes next depends on values in device memory
    reads_memory = False            # the scheduler reads device memory to run it (after the kernels before it)
    starts_stream = False           # starts another stream, which waits for it
    sets_label = False              # marks the position in its stream that jumps to its label go to

    @property
    def name(self) -> str:
        return TASK_TYPE_NAMES[self.type]

    # -- load (om_run/load/validate.py): v is the StaticValidator -----------------------------------------------
    def validate(self, v, k: int, t) -> None:
        """Check task k (its type and stream are checked already); v.fail(reason) refuses the file."""
        raise NotImplementedError

    def check_model(self, v) -> None:
        """Once, after every task was validated: what holds between tasks of this type and others."""

    # -- the program (om_run/sim/program.py): p is its Decoder ------------------------------------------------
    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        """Fill the SimTask st from the (validated) TaskDef t; the device memory it touches: (lo, hi, written)."""
        raise NotImplementedError

    # -- the device (om_run/sim/device.py): run is the DeviceRun -------------------------------------------------
    def blocked(self, run, task, t: int) -> int | None:
        """None if the task can start at t, else when to retry (-1: when a wake-up comes). Asked only of types
        whose `blocks` is set."""
        return None

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> int | None:
        """Run the task that reached its stream's head at t and was dispatched at start. inline (a `launch` type
        only): run it to its end now and return the end, None if it went through the event queue after all.
        What a type keeps between its tasks of one execution goes in run.task_state.setdefault(self.type, {})."""
        raise NotImplementedError


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def kernel_def(v, t, name: str):
    """The KernelDef of a task that must have one (validation)."""
    kd = kernel_of(t)
    if kd is None:
        v.fail(f"{name} task has no kernel definition")
    return kd


def ran(run, task, arrive: int, start: int, end: int, writes=()) -> None:
    """A task the scheduler ran from start to end: its record now, its finish (and writes landing) at end."""
    run.record(task, arrive, start, end)
    run.at(end, run.finish, task, writes)
