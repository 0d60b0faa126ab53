"""Streams started by others: STREAM_ACTIVE starts its stream from the top; STREAM_SWITCH compares two values in
device memory (rtCondition_t) and, when the condition holds, moves there itself (the branch taken). A started
stream counts toward --max-loop-iterations (DeviceRun.enter)."""
from __future__ import annotations

from atc_py.ir.graph import TensorDesc
from atc_py.om import task_types as tt
from atc_py.om.attrs import from_attr
from atc_py.ops.core.base import OpError

from .base import TaskHandler, is_int, ran

_I32, _I64 = TensorDesc((1,), "int32"), TensorDesc((1,), "int64")
# rtCondition_t: EQUAL, NOT_EQUAL, GREATER, GREATER_OR_EQUAL, LESS, LESS_OR_EQUAL
_COMPARE = [lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a > b, lambda a, b: a >= b,
            lambda a, b: a < b, lambda a, b: a <= b]


class StreamActive(TaskHandler):
    type = tt.STREAM_ACTIVE
    group = "streams"
    starts_stream = True

    def validate(self, v, k: int, t) -> None:
        if not t.HasField("stream_active"):
            v.fail("STREAM_ACTIVE task has no stream definition")
        v.rts_op(t.stream_active.op_index, self.name, "StreamActive")
        v.stream_id(t.stream_active.active_stream_id, "STREAM_ACTIVE")

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        st.op, st.target = p.model.ops[t.stream_active.op_index], t.stream_active.active_stream_id
        return []

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        end = start + run.prof.stream_active_ns
        run.enter(("stream", task.target), task)
        target = run.streams.get(task.target)
        if target is not None:
            target.head, target.active = 0, True
            target.ready = max(target.ready, end)
        run.hazard_check(task, start)
        ran(run, task, t, start, end)
        if target is not None:      # after the finish: what the started stream reads was written before it
            run.at(end, run.kick, task.target)


class StreamSwitch(TaskHandler):
    type = tt.STREAM_SWITCH
    group = "streams"
    starts_stream = True
    branches_on_memory = True
    reads_memory = True

    def validate(self, v, k: int, t) -> None:
        if not t.HasField("stream_switch"):
            v.fail("STREAM_SWITCH task has no switch definition")
        d = t.stream_switch
        op = v.rts_op(d.op_index, self.name, "StreamSwitch")
        v.stream_id(d.true_stream_id, "STREAM_SWITCH")
        cond = from_attr(op.attr["switch_condition"]) if "switch_condition" in op.attr else 0
        if not is_int(cond) or not 0 <= cond <= 5:
            v.fail(f"switch_condition {cond!r} of {op.name!r} is not one of rtCondition_t 0..5")
        if d.data_type not in (0, 1):
            v.fail(f"data_type {d.data_type} of {op.name!r} is neither 0 (int32) nor 1 (int64)")
        width = 4 if d.data_type == 0 else 8
        if len(op.input_desc) != 2:
            v.fail(f"StreamSwitch {op.name!r} needs two inputs (value and the value it is compared with)")
        for slot in (0, 1):
            v.input_addr(op, slot, width, f"input {slot}")

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        """It reads the value and the value it is compared with."""
        st.op, st.target = p.model.ops[t.stream_switch.op_index], t.stream_switch.true_stream_id
        st.cond = int(from_attr(st.op.attr["switch_condition"])) if "switch_condition" in st.op.attr else 0
        st.count = 4 if t.stream_switch.data_type == 0 else 8
        st.addrs = list(st.op.input_i[:2])
        return [(a, a + st.count, False) for a in st.addrs]

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        end = start + run.prof.stream_active_ns
        if run.mem is None:
            raise OpError("a stream switch needs its values in device memory (run with numeric compute)")
        dt = _I32 if task.count == 4 else _I64
        run.drain()
        a, b = (int(run.mem.read(x, dt).reshape(-1)[0]) for x in task.addrs)
        if _COMPARE[task.cond](a, b):
            run.enter(("stream", task.target), task)
            if task.target in run.streams:
                run.jump[task.id] = (task.target, 0)
        run.hazard_check(task, start)
        ran(run, task, t, start, end)
