"""Labels of lowered control flow (If / While / Case in one stream): LABEL_SET marks a position, LABEL_GOTO_EX
jumps to its label, LABEL_SWITCH_BY_INDEX jumps to the label its index (a uint32 in device memory) picks, the
last one for an index past the end. Each jump counts toward --max-loop-iterations (DeviceRun.label_target)."""
from __future__ import annotations

from atc_py.ir.dtypes import dtype_from_proto
from atc_py.ir.graph import TensorDesc
from atc_py.om import task_types as tt
from atc_py.om.attrs import from_attr
from atc_py.ops.core.base import OpError

from .base import TaskHandler, is_int, ran

_U32 = TensorDesc((1,), "uint32")


class LabelSet(TaskHandler):
    type = tt.LABEL_SET
    group = "labels"
    sets_label = True

    def validate(self, v, k: int, t) -> None:
        if not t.HasField("label_set"):
            v.fail("LABEL_SET task has no label definition")
        v.rts_op(t.label_set.op_index, self.name, "LabelSet")
        label = v.label_id(t.label_set.label_id)
        if label in v.label_set:
            v.fail(f"label {label} is set twice (tasks {v.label_set[label]} and {k})")
        v.label_set[label] = k

    def check_model(self, v) -> None:
        for k, label in v.label_uses:
            if label not in v.label_set:
                v.fail(f"task {k} jumps to label {label}, which no LABEL_SET task sets")

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        st.label, st.op = t.label_set.label_id, p.model.ops[t.label_set.op_index]
        return []

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        run.hazard_check(task, start)
        ran(run, task, t, start, start + run.prof.label_set_ns)


class LabelGotoEx(TaskHandler):
    type = tt.LABEL_GOTO_EX
    group = "labels"

    def validate(self, v, k: int, t) -> None:
        if not t.HasField("label_goto_ex"):
            v.fail("LABEL_GOTO_EX task has no label definition")
        v.rts_op(t.label_goto_ex.op_index, self.name, "LabelGotoEx")
        v.label_uses.append((k, v.label_id(t.label_goto_ex.label_id)))

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        st.label, st.op = t.label_goto_ex.label_id, p.model.ops[t.label_goto_ex.op_index]
        return []

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        run.jump[task.id] = run.label_target(task, task.label)
        run.hazard_check(task, start)
        ran(run, task, t, start, start + run.prof.label_jump_ns)


class LabelSwitchByIndex(TaskHandler):
    type = tt.LABEL_SWITCH_BY_INDEX
    group = "labels"
    branches_on_memory = True
    reads_memory = True

    def validate(self, v, k: int, t) -> None:
        if not t.HasField("label_switch_by_index"):
            v.fail("LABEL_SWITCH_BY_INDEX task has no switch definition")
        d = t.label_switch_by_index
        op = v.rts_op(d.op_index, self.name, "LabelSwitchByIndex")
        labels = from_attr(op.attr["_label_switch_list"]) if "_label_switch_list" in op.attr else None
        if not isinstance(labels, list) or not labels or not all(is_int(x) for x in labels):
            v.fail(f"LabelSwitchByIndex {op.name!r} has no integer list _label_switch_list")
        if d.label_max != len(labels):
            v.fail(f"label_max {d.label_max} of {op.name!r} is not the {len(labels)} labels of its list")
        for label in labels:
            v.label_uses.append((k, v.label_id(label)))
        if len(op.input_desc) != 1 or dtype_from_proto(op.input_desc[0].dtype) is None or \
                dtype_from_proto(op.input_desc[0].dtype).name not in ("int32", "uint32"):
            v.fail(f"the index of {op.name!r} must be one int32/uint32 input")
        v.input_addr(op, 0, 4, "the index")

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        """It reads its index (4 bytes)."""
        st.op = p.model.ops[t.label_switch_by_index.op_index]
        st.labels = [int(x) for x in from_attr(st.op.attr["_label_switch_list"])]
        st.addrs = [st.op.input_i[0]]
        return [(st.addrs[0], st.addrs[0] + 4, False)]

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        run.hazard_check(task, start)
        if run.mem is None:
            raise OpError("a label switch needs the index in device memory (run with numeric compute)")
        run.drain()
        idx = int(run.mem.read(task.addrs[0], _U32).reshape(-1)[0])
        label = task.labels[min(idx, len(task.labels) - 1)]   # past the end: the last label
        run.jump[task.id] = run.label_target(task, label)
        run.res.flows.append(("label", task.id, run.p.label_at.get(label, (0, 0))[1]))
        ran(run, task, t, start, start + run.prof.label_jump_ns)
