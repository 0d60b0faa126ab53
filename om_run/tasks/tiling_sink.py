"""Tiling sink: PREPROCESS_KERNEL (the op's tiling computed on the AICPU from device values, notifying whoever
waits for it), UPDATE (patches its kernel's SQE with that tiling's block count and key) and NOP (the padding that
keeps a prefetch from fetching the kernel before UPDATE patched it)."""
from __future__ import annotations

from atc_py.engines.aicore import kernel_of
from atc_py.om import task_types as tt
from atc_py.ops import get_op
from atc_py.ops.core.base import OpError

from .base import TaskHandler, kernel_def, ran


class PreprocessKernel(TaskHandler):
    type = tt.PREPROCESS_KERNEL
    group = "tiling sink"

    def validate(self, v, k: int, t) -> None:
        kd = kernel_def(v, t, self.name)
        op = v.op_of(kd.context.op_index, self.name)
        spec = get_op(op.type)
        if not spec.tiling_depend:
            v.fail(f"PREPROCESS_KERNEL for op {op.name!r} ({op.type}), which has no device tiling")
        present = [i for i, s in enumerate(op.input) if s]
        for slot, i in enumerate(present):
            if i in spec.tiling_depend:
                if slot >= len(op.input_i) or not v.in_memory(op.input_i[slot], v.nbytes(op.input_desc[slot])):
                    v.fail(f"the tiling input {i} of op {op.name!r} has no address inside device memory")
        v.tiling_of_op.add(op.id)

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        """It reads the inputs its op's tiling depends on."""
        st.op = p.model.ops[kernel_of(t).context.op_index]
        spec = get_op(st.op.type)
        present = [i for i, s in enumerate(st.op.input) if s]
        return [(st.op.input_i[slot], st.op.input_i[slot] + p.nbytes(st.op.input_desc[slot]), False)
                for slot, i in enumerate(present) if i in spec.tiling_depend]

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        """One AICPU core runs the op's tiling on the values in device memory (timing only: on its compile-time
        worst case); when it ends, its result is there for UPDATE and whoever waits for the op's notify."""
        op, spec = task.op, get_op(task.op.type)
        s, e = run.machine.run_aicpu(start, run.prof.aicpu_launch_ns + run.prof.aicpu_tiling_ns)
        run.hazard_check(task, s)
        ctx = run.tiling_context(op)
        if run.mem is not None:
            run.drain()
            values = run.read_inputs(op)
            ctx.depend_values = {i: values[i] for i in spec.tiling_depend if i < len(values) and values[i] is not None}
        else:  # timing only: the values it was told (model inputs), else the op's compile-time worst case
            present = [i for i, src in enumerate(op.input) if src]
            told = {i: run.known_values.get(op.input[i].rsplit(":", 1)[0]) for i in present if i in spec.tiling_depend}
            ctx.depend_values = told if told and all(v is not None for v in told.values()) else \
                spec.placeholder_values(ctx)
        res = spec.tiling(ctx)
        run.record(task, t, s, e, 1, "AICPU")

        def done(time):
            run.sink_ctx[op.id] = res
            run.sink_depend[op.id] = ctx.depend_values
            run.notify[op.id] = time
            run.wake(time, ("notify", op.id))
        run.at(e, lambda time: done(time))
        run.at(e, run.finish, task, [])


class Update(TaskHandler):
    type = tt.UPDATE
    group = "tiling sink"

    def validate(self, v, k: int, t) -> None:
        if not t.HasField("update_pc_task"):
            v.fail("UPDATE task has no update definition")
        v.updates.append((k, t.update_pc_task.op_index))

    def check_model(self, v) -> None:
        for k, op_id in v.updates:
            if op_id not in v.kernel_of_op:
                v.fail(f"UPDATE task {k} patches op {op_id}, which has no kernel task")
        if v.updates and not v.soc.model_task_update:
            v.fail(f"the model uses UPDATE tasks (tiling sink) but {v.m.soc_version} has no task-update capability "
                   "(FEATURE_TYPE_MODEL_TASK_UPDATE); compile it without --tiling_schedule_optimize=1 for this SoC")

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        st.target_op = t.update_pc_task.op_index
        p.update_of_op[st.target_op] = st.id
        return []

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        """The kernel's live SQE takes the block count and key its device tiling decided."""
        end = start + run.prof.update_ns
        res = run.sink_ctx.get(task.target_op)
        if res is None:
            raise OpError(f"UPDATE before the tiling task of op {task.target_op} finished")
        target = run.p.kernel_task_of_op.get(task.target_op)
        if target is None:
            raise OpError(f"UPDATE finds no kernel task of op {task.target_op}")
        run.patch_sqe(target, res.block_dim, res.tiling_key)
        run.res.flows.append(("update", task.id, target))
        ran(run, task, t, start, end)


class Nop(TaskHandler):
    type = tt.NOP
    group = "tiling sink"

    def validate(self, v, k: int, t) -> None:
        """Nothing but its stream."""

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        return []

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        ran(run, task, t, start, start + run.prof.nop_ns)
