"""MEMCPY_ASYNC: a device-to-device copy the scheduler runs itself (memcpy_latency_ns plus its bytes at
memcpy_gbps), reading the source once the kernels before it have written it."""
from __future__ import annotations

from atc_py.ir.graph import TensorDesc
from atc_py.om import task_types as tt

from .base import TaskHandler, ran


class MemcpyAsync(TaskHandler):
    type = tt.MEMCPY_ASYNC
    group = "memcpy"
    reads_memory = True

    def validate(self, v, k: int, t) -> None:
        if not t.HasField("memcpy_async"):
            v.fail("MEMCPY_ASYNC task has no copy definition")
        d = t.memcpy_async
        v.rts_op(d.op_index, self.name, "MemcpyAsync")
        if d.count > d.dst_max or d.count > v.limits.MAX_MEMCPY_BYTES:
            v.fail(f"MEMCPY_ASYNC copies {d.count} B into {d.dst_max} B (limit {v.limits.MAX_MEMCPY_BYTES})")
        if not v.in_memory(d.src, d.count) or not v.in_memory(d.dst, d.count):
            v.fail(f"MEMCPY_ASYNC [0x{d.src:X}, +{d.count}) -> [0x{d.dst:X}, +{d.count}) leaves device memory")

    def decode(self, p, st, t) -> list[tuple[int, int, bool]]:
        d = t.memcpy_async
        st.op, st.addrs, st.count = p.model.ops[d.op_index], [d.src, d.dst], d.count
        return [(d.src, d.src + max(d.count, 1), False), (d.dst, d.dst + max(d.count, 1), True)]

    def execute(self, run, task, t: int, start: int, inline: bool = False) -> None:
        src, dst = task.addrs
        end = start + run.prof.memcpy_latency_ns + int(task.count / run.prof.memcpy_gbps)
        run.hazard_check(task, start)
        writes = []
        if run.mem is not None:
            run.drain()
            writes = [(dst, run.mem.read(src, TensorDesc((task.count,), "uint8")).copy())]
        ran(run, task, t, start, end, writes)
