"""The runtime profile: every cost that is not a SoC figure, as a named parameter.

No public measurements of these exist; the defaults below are ASSUMED orders of magnitude (CANN
documentation and seed 001 speak of "tens of microseconds" for host tiling and of host launch costs of a
few microseconds) and are meant to be calibrated against msprof on real hardware. Override any of them
with `om-run --sim-config FILE` (a JSON object of name -> value).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields

from atc_py.errors import AtcError


@dataclass
class RuntimeProfile:
    # -- AI Core kernels (cycles of the core clock) --
    block_head_cycles: int = 2000          # per block: scalar setup, first DMA latency, pipeline fill
    cube_fractals_per_cycle: float = 1.0   # 16x16x16 fp16 MACs per cycle per cube core
    fp32_cube_rate: float = 0.5            # fp32 runs the cube at half rate
    # -- task scheduler (ns) --
    sqe_dispatch_ns: int = 300             # fetch + dispatch of one SQE by the task scheduler
    kernel_start_ns: int = 1000            # AI Core kernel start (PC load, args fetch) once dispatched
    nop_ns: int = 100
    event_record_ns: int = 200
    event_notify_ns: int = 500             # record -> a waiting stream sees the event
    update_ns: int = 1000                  # UPDATE: tiling-table lookup and SQE patch
    model_activate_ns: int = 2000          # model execute: TS activates the model's streams
    end_graph_ns: int = 1000               # END_GRAPH notify back to the host
    # -- AICPU (ns) --
    aicpu_launch_ns: int = 5000            # AICPU kernel start
    aicpu_tiling_ns: int = 20000           # a device tiling function (RunAicpuRpcSrvLaunch) on the AICPU
    aicpu_kernel_ns_per_kb: int = 200      # AICPU compute kernels, per KiB of data touched
    # -- host runtime (ns) --
    h2d_latency_ns: int = 10000
    d2h_latency_ns: int = 10000
    h2d_gbps: float = 20.0                 # PCIe copy bandwidth, GB/s
    d2h_gbps: float = 20.0
    model_execute_launch_ns: int = 15000   # host cost of aclmdlExecuteAsync
    stream_sync_ns: int = 15000            # host cost of a stream synchronize (on top of waiting)
    host_infershape_ns: int = 3000         # dynamic executor, per node
    host_tiling_ns: int = 8000             # dynamic executor, per node (default)
    host_tiling_ns_by_op: dict = field(default_factory=lambda: {"IncreFlashAttention": 30000,
                                                                "GroupedMatmul": 20000})
    host_tiling_cache_hit_ns: int = 800    # tiling cache lookup that hits
    host_alloc_ns: int = 1500              # device memory allocation per node
    host_launch_ns: int = 6000             # kernel launch per node
    kernel_launch_latency_ns: int = 5000   # host launch -> the kernel reaches the device stream
    host_pipeline_handoff_ns: int = 300    # passing a node between pipeline threads (3 threads)

    def tiling_ns(self, op_type: str) -> int:
        return int(self.host_tiling_ns_by_op.get(op_type, self.host_tiling_ns))

    @classmethod
    def load(cls, path: str | None) -> "RuntimeProfile":
        prof = cls()
        if not path:
            return prof
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as exc:
            raise AtcError("E30002", reason=f"--sim-config {path}: {exc}") from None
        if not isinstance(data, dict):
            raise AtcError("E30002", reason=f"--sim-config {path} must hold a JSON object")
        known = {f.name: f for f in fields(cls)}
        for key, value in data.items():
            if key not in known:
                raise AtcError("E30002", reason=f"--sim-config: unknown parameter '{key}' "
                                                f"(known: {', '.join(sorted(known))})")
            current = getattr(prof, key)
            if isinstance(current, dict):
                if not isinstance(value, dict):
                    raise AtcError("E30002", reason=f"--sim-config: '{key}' must be an object")
                current.update({str(k): int(v) for k, v in value.items()})
            elif not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise AtcError("E30002", reason=f"--sim-config: '{key}' must be a non-negative number")
            else:
                setattr(prof, key, type(current)(value))
        return prof
