"""HCCL (RT_MODEL_TASK_HCCL): a collective, kernel_hccl naming its op (op_index) and the op's type (hccl_type). Its
tensors are the op's own (OpDef input_i / output_i), as GE's HcclTaskInfo reads them.

With a machine of several devices (run.world, om_run/sim) the task is the rendezvous of its group's ranks there:
the world decides when it may start (blocked) and runs it (execute). Without one, the model runs as a group of one
rank: the op's own kernel (the collective over one rank, atc_py/ops/hccl.py) on its inputs, costing HCCL's local
copy (RuntimeProfile.hccl_local_ns plus the bytes at memcpy_gbps); an op whose group has more ranks, or that talks to
a peer (HcomSend / HcomReceive), is refused with what to run instead."""
from __future__ import annotations

from atc_py.engines.args import input_item, output_item
from atc_py.om import task_types as tt
from atc_py.ops import get_op
from atc_py.ops.core.base import HCCL, OpError, TilingResult
from atc_py.ops.hccl import collective_bytes, local_refusal

from .base import TaskHandler, ran


class Hccl(TaskHandler):
    type = tt.HCCL
    group = "hccl"
    blocks = True          # a rendezvous: the group's other ranks may not have reached it yet

    def validate(self, v, k: int, t) -> None:
        if not t.HasField("kernel_hccl"):
            v.fail("HCCL task has no kernel_hccl definition")
        d = t.kernel_hccl
        op = v.op_of(d.op_index, self.name)
        spec = get_op(op.type)
        if spec.engine != HCCL:
            v.fail(f"HCCL task refers to op {op.name!r} of type {op.type}, which is not an HCCL collective")
        if d.hccl_type != op.type:
            v.fail(f"HCCL task's hccl_type {d.hccl_type!r} is not the type of its op {op.name!r} ({op.type})")
        present = [i for i, s in enumerate(op.input) if s]
        for slot, i in enumerate(present):
            v.input_addr(op, slot, v.nbytes(op.input_desc[slot]), f"input {i}")
        if len(op.output_i) != len(op.output_desc):
            v.fail(f"op {op.name!r} has {len(op.output_i)} output addresses for {len(op.output_desc)} outputs")
        for j, (a, td) in enumerate(zip(op.output_i, op.output_desc)):
            if not v.in_memory(a, v.nbytes(td)):
                v.fail(f"output {j} of op {op.name!r}: {v.nbytes(td)} B at 0x{a:X} are outside device memory")
        v.claim_kernel(op, k, False)

    @staticmethod
    def addresses(op) -> dict[str, int]:
        """The op's tensors as a kernel call's args would name them: {i<k>}, {o<k>}."""
        present = [i for i, s in enumerate(op.input) if s]
        addrs = {input_item(i): a for i, a in zip(present, op.input_i)}
        addrs.update({output_item(j): a for j, a in enumerate(op.output_i)})
        return addrs

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        op = p.model.ops[t.kernel_hccl.op_index]
        call = p.unpriced_call(op, self.addresses(op))
        st.op, st.calls, st.core_type = op, [call], "HCCL"
        st.count = collective_bytes(op.type, call.attrs, call.in_descs)
        p.kernel_of_op[op.id] = st.id
        return p.call_ranges(call)

    def blocked(self, run, task, t: int) -> int | None:
        world = getattr(run, "world", None)
        if world is None:
            return None
        return run.world.blocked(run, task, t)

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> int | None:
        if getattr(run, "world", None) is not None:
            return run.world.execute(run, task, t, start, inline)
        call = task.calls[0]
        refusal = local_refusal(call.op.type, call.op.name, call.attrs)
        if refusal:
            raise OpError(refusal)
        run.hazard_check(task, start)
        writes = run.kernel_outputs(task, call, TilingResult(1, 0, b""), start=start)
        end = start + run.prof.hccl_local_ns + int(task.count / run.prof.memcpy_gbps)
        ran(run, task, t, start, end, writes)
        return None
