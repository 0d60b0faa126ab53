"""Events between streams: EVENT_RECORD sets its event (the notify reaches waiters event_notify_ns after it
ends); EVENT_WAIT holds its stream until the event is set, then resets it."""
from __future__ import annotations

from atc_py.om import task_types as tt

from .base import TaskHandler, ran


class EventTask(TaskHandler):
    group = "events"

    def validate(self, v, k: int, t) -> None:
        if not 0 <= t.event_id < v.m.event_num:
            v.fail(f"event {t.event_id}; the model has {v.m.event_num} events")

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        return []      # its event is every SimTask's


class EventRecord(EventTask):
    type = tt.EVENT_RECORD

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        end = start + run.prof.event_record_ns
        run.record(task, t, start, end)
        run.recorder_of_event[task.event] = task.id
        run.events[task.event] = end + run.prof.event_notify_ns
        run.at(end + run.prof.event_notify_ns, run.wake, task.event)
        run.at(end, run.finish, task, [])


class EventWait(EventTask):
    type = tt.EVENT_WAIT
    blocks = True

    def blocked(self, run, task, t: int) -> int | None:
        ev = run.events.get(task.event)
        if ev is None:
            run.waiting.setdefault(task.event, []).append(task.stream)
            return -1
        return None if ev <= t else ev

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        run.events.pop(task.event, None)           # wait + reset
        run.res.flows.append(("event", run.recorder_of_event.get(task.event, -1), task.id))
        ran(run, task, t, start, start)
