"""What a model's first execution would otherwise pay once, done before it (om-run: after the load, before the
first loop): each static model's program (tasks decoded, costs priced), every kernel's tiling decoded once (an
AscBackend kernel decodes and checks its graphs then), the host pool's threads started, and the scratch buffers
the kernels compute in (im2col columns, padded planes, fp32 accumulators: ops/core/host_pool.scratch) grown to the
largest launch and their pages touched — on the calling thread and on each pool thread — and, where om-run keeps
freed memory in its heap (om_run/sim/host_heap.py), a block of that heap touched on each thread the kernels run on."""
from __future__ import annotations

from atc_py.common.errors import AtcError
from atc_py.ops import get_op
from atc_py.ops.core import host_pool
from atc_py.ops.core.base import OpError

from ..load.model import DeviceModel
from .compute_lane import LaneFailure, lane
from .host_heap import PREFAULT_BYTES, prefault
from .program import _in_descs


def _static_models(model) -> list[DeviceModel]:
    if isinstance(model, DeviceModel):
        return [model]
    return [m for m in getattr(model, "subs", {}).values() if isinstance(m, DeviceModel)]


def warm(sim) -> None:
    """Warm a Simulation (om_run/sim/host.py) for its first execution, under the thread budget it will run with.
    Anything that cannot be prepared (a program or a tiling the file gets wrong) is left to the execution, which
    reports it as it always did."""
    caller: dict[str, int] = {}
    pieces: dict[str, int] = {}
    for m in _static_models(sim.model):
        try:
            prog = sim.program(m)
        except AtcError:
            continue
        if not sim.compute:
            continue
        for task in prog.tasks:
            for call in task.calls:
                spec = get_op(call.op.type)
                if spec is None or call.sink:
                    continue
                try:
                    t = spec.decode_tiling(call.tiling_data, call.attrs)
                    mine, each = spec.scratch_needs(t, call.attrs, _in_descs(call.op), call.out_descs)
                except (OpError, ValueError, KeyError, IndexError, TypeError):
                    continue
                for need, into in ((mine, caller), (each, pieces)):
                    for name, nbytes in need.items():
                        into[name] = max(into.get(name, 0), int(nbytes))
    host_pool.warm(caller, pieces)
    heap = PREFAULT_BYTES if sim.compute else 0   # timing only: no kernel allocates
    prefault(heap)
    if host_pool.HOST_THREADS >= 2:   # the kernels will launch on the compute lane's thread: its scratch too

        def on_lane():
            host_pool.warm(caller, pieces)
            prefault(heap)
        work = lane()
        work.submit("warm", on_lane)
        try:
            work.drain()
        except LaneFailure:
            pass
