"""Kernel tasks: KERNEL and ALL_KERNEL (a KernelDef, its args in the args block), FFTS_PLUS_TASK (a MIX kernel
whose addresses are in its FFTS+ context, its tiling in private_def) and SUPER_KERNEL (members run back to back
inside one launch, described by kernel_ext_info)."""
from __future__ import annotations

import json

from atc_py.engines.aicore import TILING_SINK_BLOCK_DIM, kernel_of
from atc_py.engines.args import SINK_TILING_DATA, format_items, parse
from atc_py.om import task_types as tt
from atc_py.ops import get_op
from atc_py.ops.core.base import OpError, TilingResult

from .base import TaskHandler, is_int, kernel_def


def unit_of(op) -> str:
    """Where an op's kernel runs: the AICPU for an AICPU kernel (an AICPU op, or a node whose dtypes fell back to
    the AICPU: its kernel library attribute says so), else its op's AI Core type."""
    lib = op.attr["_ge_attr_op_kernel_lib_name"].s if "_ge_attr_op_kernel_lib_name" in op.attr else b""
    return "AICPU" if lib == b"aicpu_ascend_kernel" else get_op(op.type).core_type


def with_calls(p, st, calls: list) -> list[tuple[int, int, bool]]:
    """A kernel task's calls: its op (the first call's), the cores it runs on, the memory its calls touch."""
    st.calls = calls
    if not calls:
        return []
    st.op = calls[0].op
    units = {unit_of(c.op) for c in calls}
    st.core_type = "MIX" if "MIX" in units or units == {"AIC", "AIV"} else units.pop()
    return [r for c in calls for r in p.call_ranges(c)]


class Kernel(TaskHandler):
    type = tt.KERNEL
    group = "kernels"
    launch = True

    def validate(self, v, k: int, t) -> None:
        kd = kernel_def(v, t, self.name)
        op = v.op_of(kd.context.op_index, self.name)
        v.kernel_op(op, self.name)
        sink = SINK_TILING_DATA in v.args(op, kd.context.args_format, kd.args)
        v.block_dim(op, kd.block_dim, sink)
        v.claim_kernel(op, k, sink)

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        kd = kernel_of(t)
        op = p.model.ops[kd.context.op_index]
        addrs, tiling = parse(kd.context.args_format, kd.args)
        call = p.call(op, addrs, tiling)
        if call.sink:   # launched with what UPDATE patches in: the placeholder until then
            call.block_dim = kd.block_dim
        p.kernel_of_op[op.id] = st.id
        return with_calls(p, st, [call])

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> int | None:
        """Launch through the machine from its SQE (a snapshot taken while its stream was blocked, else the live
        one); inline: run it to its end now, finish it without posting the stream's next kick and return its end
        (None: it was submitted to the event queue instead)."""
        call = task.calls[0]
        sqe = (run.snap.pop(task.id, None) if run.snap else None) or run.live[task.id]
        stale = sqe.block_dim == TILING_SINK_BLOCK_DIM
        if stale:
            upd = run.p.update_of_op.get(call.op.id, -1)
            run.hazard("prefetch", task.id, upd,
                       f"task {task.id} ({run.p.describe(task.id)}) ran from an SQE prefetched before UPDATE task "
                       f"{upd} patched it: block_dim 0xFFFFFFFF (too few NOPs before the kernel?)")
            sqe = run.live[task.id]  # --allow-hazards: time it as patched, but its outputs are not written
        bd = sqe.block_dim
        writes = []
        if not stale:
            if call.sink and call.op.id not in run.sink_ctx:
                raise OpError(f"the device tiling of {call.op.name} has not run before its kernel")
            if run.mem is not None:
                tiling_data = run.sink_ctx[call.op.id].tiling_data if call.sink else call.tiling_data
                writes = run.kernel_outputs(task, call, TilingResult(bd, sqe.tiling_key, tiling_data), direct=inline,
                                            start=start)
        if task.core_type == "AICPU":
            return self.on_aicpu(run, task, call, t, start, writes)
        job = run.job_of(call, task.core_type, bd)
        rec = run.record(task, t, -1, -1, bd, task.core_type)
        if inline:
            e = run.machine.run_inline(start + run.prof.kernel_start_ns, job)
            if e is not None:   # nothing ran in between: the start's hazard check sees what it saw at the start
                run.hazard_check(task, job.start)
                rec.start, rec.end = job.start, e
                rec.soc, rec.works, rec.traffics = run.soc, [job.work], [job.traffic]
                run.finish(e, task, writes, kick=False)
                return e

        def started(s):
            run.hazard_check(task, s)
            rec.start = s

        def done(e):
            rec.end = e
            rec.soc, rec.works, rec.traffics = run.soc, [job.work], [job.traffic]
            run.finish(e, task, writes)
        job.on_start, job.on_done = started, done
        run.machine.submit(start + run.prof.kernel_start_ns, job)
        return None

    @staticmethod
    def on_aicpu(run, task, call, t: int, start: int, writes) -> None:
        """An AICPU kernel: one AICPU core for its launch plus its data touched (aicpu_launch_ns,
        aicpu_kernel_ns_per_kb), none of the AI Core's."""
        moved = call.work.bytes if call.work is not None else sum(d.nbytes for d in call.out_descs)
        dur = run.prof.aicpu_launch_ns + -(-moved // 1024) * run.prof.aicpu_kernel_ns_per_kb
        s, e = run.machine.run_aicpu(start + run.prof.kernel_start_ns, dur)
        run.hazard_check(task, s)
        run.record(task, t, s, e, 1, "AICPU")
        run.at(e, run.finish, task, writes)
        return None


class AllKernel(Kernel):
    """A kernel of a multi-key binary (its KernelDef in kernel_with_handle): run as a KERNEL."""
    type = tt.ALL_KERNEL


class FftsPlusTask(Kernel):
    """A MIX kernel on a split-architecture SoC: its addresses in the FFTS+ context, its static tiling in
    private_def, its block count in the SQE header."""
    type = tt.FFTS_PLUS_TASK

    def validate(self, v, k: int, t) -> None:
        if not t.HasField("ffts_plus_task") or not t.ffts_plus_task.ffts_plus_ctx:
            v.fail("FFTS_PLUS_TASK has no FFTS+ context")
        f = t.ffts_plus_task
        op = v.op_of(f.op_index, self.name)
        v.kernel_op(op, self.name)
        mix = f.ffts_plus_ctx[0].mix_aic_aiv_ctx
        items = v.items(op, mix.args_format)
        if len(items) != len(mix.task_addr):
            v.fail(f"FFTS_PLUS_TASK has {len(mix.task_addr)} addresses for {len(items)} args")
        v.addresses(op, dict(zip(items, mix.task_addr)))
        sink = SINK_TILING_DATA in items
        if not sink:
            v.tiling_data(op, t.private_def)
        v.block_dim(op, f.ffts_plus_sqe.sqe_header.block_dim, sink)
        v.claim_kernel(op, k, sink)

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        f = t.ffts_plus_task
        op = p.model.ops[f.op_index]
        mix = f.ffts_plus_ctx[0].mix_aic_aiv_ctx
        items = format_items(mix.args_format)
        if len(items) != len(mix.task_addr):
            raise OpError(f"FFTS+ task {st.id}: {len(mix.task_addr)} addresses for {len(items)} args")
        call = p.call(op, dict(zip(items, mix.task_addr)), t.private_def)
        if call.sink:
            call.block_dim = f.ffts_plus_sqe.sqe_header.block_dim
        p.kernel_of_op[op.id] = st.id
        return with_calls(p, st, [call])


class SuperKernel(TaskHandler):
    """Members run back to back inside one kernel; it waits for the device tiling of each sink member (notified
    through the event address in its args), so it can hold its stream back."""
    type = tt.SUPER_KERNEL
    group = "kernels"
    blocks = True

    def validate(self, v, k: int, t) -> None:
        kd = kernel_def(v, t, self.name)
        if not t.HasField("kernel"):
            v.fail("SUPER_KERNEL task has no KernelDef (its member table lives in kernel_ext_info)")
        for j, mem in enumerate(self.members(v, kd)):
            if not isinstance(mem, dict) or not all(is_int(mem.get(f)) for f in ("op_index", "offset", "size")) \
                    or not isinstance(mem.get("args_format"), str):
                v.fail(f"SUPER_KERNEL member {j} lacks op_index/offset/size/args_format of the right types")
            if mem["offset"] < 0 or mem["size"] < 0 or mem["offset"] + mem["size"] > len(kd.args):
                v.fail(f"SUPER_KERNEL member {j} args [{mem['offset']}, +{mem['size']}) are outside its "
                       f"{len(kd.args)} B of args")
            op = v.op_of(mem["op_index"], "SUPER_KERNEL member")
            v.kernel_op(op, "SUPER_KERNEL")
            addrs = v.args(op, mem["args_format"], kd.args[mem["offset"]:mem["offset"] + mem["size"]])
            if SINK_TILING_DATA in addrs and op.id not in v.tiling_of_op:
                v.fail(f"sink member {op.name!r} of SUPER_KERNEL has no PREPROCESS_KERNEL task before it")

    @staticmethod
    def members(v, kd) -> list:
        """The member table of kernel_ext_info, its size and nesting bounded before json reads it."""
        info = kd.kernel_ext_info
        if len(info) > v.limits.MAX_EXT_INFO_BYTES:
            v.fail(f"SUPER_KERNEL kernel_ext_info has {len(info)} bytes")
        depth = max_depth = 0
        for ch in info:   # bound the nesting before json recurses into it
            if ch in b"[{":
                depth += 1
                max_depth = max(max_depth, depth)
            elif ch in b"]}":
                depth -= 1
        if max_depth > v.limits.MAX_EXT_INFO_DEPTH:
            v.fail(f"SUPER_KERNEL kernel_ext_info nests {max_depth} deep")
        try:
            members = json.loads(info)["members"]
        except (ValueError, KeyError, TypeError, RecursionError):
            v.fail("SUPER_KERNEL kernel_ext_info does not describe its members")
        if not isinstance(members, list) or not members:
            v.fail("SUPER_KERNEL has no member list")
        return members

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        kd = kernel_of(t)
        try:
            members = json.loads(kd.kernel_ext_info)["members"]
        except (ValueError, KeyError, TypeError):
            raise OpError(f"SUPER_KERNEL task {st.id}: kernel_ext_info does not describe its members") from None
        calls = []
        for m in members:
            op = p.model.ops[m["op_index"]]
            addrs, tiling = parse(m["args_format"], kd.args[m["offset"]:m["offset"] + m["size"]])
            call = p.call(op, addrs, tiling)
            calls.append(call)
            if call.sink:
                st.sk_waits.append(op.id)
        return with_calls(p, st, calls)

    def blocked(self, run, task, t: int) -> int | None:
        times = [run.notify.get(op) for op in task.sk_waits]
        if any(x is None for x in times):
            for op in task.sk_waits:
                run.waiting.setdefault(("notify", op), []).append(task.stream)
            return -1
        latest = max(times, default=t)
        return None if latest <= t else latest

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        """Each member starts when the one before it ends."""
        run.hazard_check(task, start + run.prof.kernel_start_ns)
        rec = run.record(task, t, -1, -1, max(c.block_dim for c in task.calls), task.core_type)
        jobs = []

        def member(time: int, k: int) -> None:
            if k == len(task.calls):
                rec.end = time
                rec.soc, rec.works, rec.traffics = run.soc, [j.work for j in jobs], [j.traffic for j in jobs]
                run.finish(time, task, [])
                return
            call = task.calls[k]
            if call.sink:
                if call.op.id not in run.sink_ctx:
                    raise OpError(f"the device tiling of {call.op.name} has not run before the SUPER_KERNEL")
                tiling = run.sink_ctx[call.op.id]
                bd = tiling.block_dim
            else:
                tiling, bd = TilingResult(call.block_dim, call.tiling_key, call.tiling_data), call.block_dim
            run.land(task, run.kernel_outputs(task, call, tiling, start=time))   # members run back to back
            job = run.job_of(call, get_op(call.op.type).core_type, bd)
            jobs.append(job)
            if k == 0:
                job.on_start = lambda s: setattr(rec, "start", s)
            job.on_done = lambda e: member(e, k + 1)
            run.machine.submit(time, job)
        member(start + run.prof.kernel_start_ns, 0)
