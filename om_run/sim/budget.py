"""How much simulated work one execution may do: a budget of executed tasks (device tasks, host-launched nodes,
host loop iterations), so a loop that never ends — or one whose constant trip count is 2^62 — stops within seconds
with E30007 naming the loop, instead of running for minutes and growing a record per task until memory runs out.

The default follows the model: TASKS_PER_STATIC_TASK executions of each task the file holds, and never less than
MIN_TASK_BUDGET (a loop of a few thousand iterations over a small body fits); `om-run --max-tasks N` sets it.
Per-label and per-stream entry counts (--max-loop-iterations) still apply on top.
"""
from __future__ import annotations

from dataclasses import dataclass

MIN_TASK_BUDGET = 50_000           # a few seconds of simulation with numerics (a loop body of small kernels)
TASKS_PER_STATIC_TASK = 64         # a model without loops runs each task once: 64x leaves room for loops


def default_task_budget(static_tasks: int) -> int:
    return max(MIN_TASK_BUDGET, TASKS_PER_STATIC_TASK * max(0, int(static_tasks)))


class BudgetExceeded(Exception):
    """The execution ran more tasks than its budget; `where` names what was running."""


@dataclass
class TaskBudget:
    limit: int
    used: int = 0

    def spend(self, n: int = 1) -> None:
        """Count n executed tasks (on every task: no message is built until the budget is gone)."""
        self.used += n
        if self.used > self.limit:
            raise BudgetExceeded(f"the execution ran more than --max-tasks={self.limit} tasks: a loop does not end, "
                                 "or its trip count is beyond what can be simulated (raise --max-tasks for a long "
                                 "but finite one)")
