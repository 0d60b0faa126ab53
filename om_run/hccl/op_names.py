"""One name per collective, whatever spelling asks for it: GE's op types (HcomAllReduce), HCCL's API (HcclAllReduce),
hccl_test's binaries (all_reduce_test, alltoall_test) and plain names (all_reduce)."""
from __future__ import annotations

from atc_py.common.errors import AtcError

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send", "recv")
REDUCING = ("all_reduce", "reduce_scatter")

_ALIASES = {
    "all_reduce": ("HcomAllReduce", "HcclAllReduce", "all_reduce_test", "allreduce"),
    "all_gather": ("HcomAllGather", "HcclAllGather", "all_gather_test", "allgather"),
    "reduce_scatter": ("HcomReduceScatter", "HcclReduceScatter", "reduce_scatter_test", "reducescatter"),
    "broadcast": ("HcomBroadcast", "HcclBroadcast", "broadcast_test"),
    "all_to_all": ("HcomAllToAll", "HcomAllToAllV", "HcomAllToAllVC", "HcclAlltoAll", "HcclAlltoAllV",
                   "alltoall_test", "alltoall", "all_to_all_test"),
    "send": ("HcomSend", "HcclSend", "send_test"),
    "recv": ("HcomReceive", "HcclRecv", "recv_test", "receive"),
}
_CANONICAL = {alias.lower(): name for name, aliases in _ALIASES.items() for alias in (name, *aliases)}


def canonical_op(name: str, parameter: str = "op") -> str:
    """all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, send or recv for any accepted spelling."""
    op = _CANONICAL.get(str(name).strip().lower())
    if op is None:
        raise AtcError("E10001", value=name, parameter=parameter,
                       reason="not a collective om-run prices; use one of " + ", ".join(COLLECTIVES)
                              + " (or GE's HcomAllReduce ..., hccl_test's all_reduce_test ...)")
    return op
