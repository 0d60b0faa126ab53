"""The runtime profile: every cost that is not a SoC figure, as a named parameter.

Each parameter says where its default comes from. Two are CALIBRATED against published measurements by
`bench/fidelity` (`make fidelity`; bench/fidelity/calibration.json holds the values, the anchors they come from
and how far every prediction is from every anchor): cube_efficiency and fp32_cube_rate. The others have no
public measurement and are ASSUMED orders of magnitude (CANN documentation speaks of "tens of
microseconds" for host tiling and of host launch costs of a few microseconds), to be calibrated against msprof
on real hardware. Override any of them with `om-run --sim-config FILE` (a JSON object of name -> value;
bench/fidelity/calibration.json is one).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from atc_py.common.errors import AtcError
from atc_py.common.userfiles import read_json
from atc_py.ops.core.cost import CostParams

from .roofline import FP32_CUBE_PEAK_SHARE

# the published GEMM throughput the cube parameters are calibrated against (bench/fidelity/anchors.py has them all)
GEMM_ANCHOR = ("https://github.com/zzc0721/torch-performance-test-data/issues/109: Ascend910B2, torch_npu matmul "
               "4096^3, fp16 314.52 TFLOP/s, fp32 84.53 TFLOP/s")


@dataclass
class RuntimeProfile:
    # -- AI Core kernels (cycles of the core clock) --
    block_head_cycles: int = 2000          # ASSUMED: per block, scalar setup, first DMA latency, pipeline fill
    cube_fractals_per_cycle: float = 1.0   # 16x16x16 fp16 MACs per cycle per cube core ("4096 FP16 MACs" per
    #                                        cycle, Hot Chips 31 Da Vinci talk, peers.md); at most 1
    cube_efficiency: float = 0.9133        # CALIBRATED (GEMM_ANCHOR, fp16): the mmad pipe's sustained share of
    #                                        peak, with fractal padding, the largest block's share and the
    #                                        fixpipe drains counted separately
    cube_tile_overhead_cycles: int = 300   # ASSUMED: per L0C output tile, the fixpipe drain and L0 refill that
    #                                        double buffering does not hide
    fp32_cube_rate: float = 0.25           # CALIBRATED (GEMM_ANCHOR, fp32 against fp16): fp32 fractals per cycle
    #                                        relative to fp16, at most roofline.FP32_CUBE_PEAK_SHARE (0.25).
    #                                        There is no HF32 rate: ATC's --allow_hf32 is "not support, reserved"
    #                                        (shared/reference/research/ge_compiler.md), atc-py has no HF32 mode
    vector_efficiency: dict = field(default_factory=lambda: {   # ASSUMED: sustained share of vec_calc_size
        "elementwise": 0.9,   # one pass; repeat and mask overhead of the vector instructions
        "reduce": 0.75,       # a pass plus the in-UB reduction tree
        "norm": 0.7,          # dependent passes per row (max, exp, sum, scale; mean, variance, scale)
        "move": 1.0,          # layout ops: data movement only
        "default": 0.9})
    cross_core_sync_cycles: int = 1000     # ASSUMED: one SyncAll barrier across a kernel's blocks (the combine
    #                                        step of a split reduction)
    mte_move_cycles: int = 20              # MEASURED on Atlas A2, ASSUMED the same in cycles on the others: one
    #                                        MTE instruction issued and retired. CANN's asc-devkit DataCopy best
    #                                        practice: 48 AIV cores each moving 6.29 MB GM -> UB as 49,152
    #                                        one-burst 128-byte DataCopyPad instructions took 548.161 us of MTE2
    #                                        at 1.816 GHz (20.3 cycles an instruction; 64 bursts an instruction:
    #                                        bandwidth-bound). Priced only where ops/core/move_plans.py counts moves
    dram_efficiency: float = 0.9           # ASSUMED: sustained share of the SoC's DRAM bandwidth for streams
    # -- task scheduler (ns) --
    sqe_dispatch_ns: int = 300             # fetch + dispatch of one SQE by the task scheduler
    kernel_start_ns: int = 1000            # AI Core kernel start (PC load, args fetch) once dispatched
    nop_ns: int = 100
    event_record_ns: int = 200
    event_notify_ns: int = 500             # record -> a waiting stream sees the event
    update_ns: int = 1000                  # UPDATE: tiling-table lookup and SQE patch
    model_activate_ns: int = 2000          # model execute: TS activates the model's streams
    end_graph_ns: int = 1000               # END_GRAPH notify back to the host
    # -- control flow on the device (ns): label and stream tasks are executed by the task scheduler itself --
    label_set_ns: int = 100                # LABEL_SET: marks a position, like a NOP
    label_jump_ns: int = 500               # LABEL_GOTO_EX / LABEL_SWITCH_BY_INDEX: read index, move the SQ pointer
    stream_active_ns: int = 500            # STREAM_ACTIVE / STREAM_SWITCH: (re)start another stream's SQ
    memcpy_latency_ns: int = 1500          # MEMCPY_ASYNC (device to device) start
    memcpy_gbps: float = 100.0             # its bandwidth, GB/s (HBM to HBM through the SDMA engine)
    # -- HCCL (ns): a collective run as a group of one rank (no --world-size): HCCL copies its input to its output
    # on the device, so it costs this start plus its bytes at memcpy_gbps; a bigger group's time is the link model's
    hccl_local_ns: int = 2000              # ASSUMED: an HCCL task's start (its SQE, the local copy's setup); no public
    #                                        measurement of a one-rank collective exists
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
    # -- ATB's host mechanisms (atb.py; switched by ATB's environment variables) --
    atb_setup_ns: int = 6000               # ASSUMED: building one operation's kernel graph (ATB Setup, InferShape
    #                                        apart); skipped when the setup cache finds the same shapes and params
    atb_runner_create_ns: int = 20000      # ASSUMED: creating a Runner (kernel lookup, its objects) when its
    #                                        type's Runner pool has none (ATB_RUNNER_POOL_SIZE=0: every build)
    atb_tiling_copy_ns: int = 3000         # ASSUMED: host cost of one kernel's own tiling-data H2D copy
    #                                        (ATB_LAUNCH_KERNEL_WITH_TILING=0; 1 carries it in the launch)
    host_launch_ns: int = 6000             # kernel launch per node
    kernel_launch_latency_ns: int = 5000   # host launch -> the kernel reaches the device stream
    host_pipeline_handoff_ns: int = 300    # passing a node between pipeline threads (3 threads)
    # a framework's own dispatch of each op before it reaches the runtime (PyTorch eager through torch_npu: om-run
    # serve --enforce-eager sets it, om_run/serve/host_costs.py); 0: om-run's executor calls the runtime directly
    framework_dispatch_ns: int = 0

    def tiling_ns(self, op_type: str) -> int:
        return int(self.host_tiling_ns_by_op.get(op_type, self.host_tiling_ns))

    def cost_params(self) -> CostParams:
        """The parameters atc_py.ops.core.cost prices a block with."""
        return CostParams(self.block_head_cycles, self.cube_fractals_per_cycle, self.cube_efficiency,
                          self.cube_tile_overhead_cycles, self.fp32_cube_rate, dict(self.vector_efficiency),
                          self.cross_core_sync_cycles, self.mte_move_cycles)

    @classmethod
    def load(cls, path: str | None) -> "RuntimeProfile":
        """The defaults with the overrides of a JSON file (a regular file of at most MAX_CONFIG_BYTES; every
        value a finite number in [0, MAX_VALUE], rates and divisors > 0, shares of a hardware peak <= 1)."""
        prof = cls()
        if not path:
            return prof
        data = _read_config(path)
        if not isinstance(data, dict):
            raise _bad(path, "it must hold a JSON object")
        known = {f.name: f for f in fields(cls)}
        for key, value in data.items():
            if key not in known:
                raise _bad(path, f"unknown parameter '{key}' (known: {', '.join(sorted(known))})")
            current = getattr(prof, key)
            if isinstance(current, dict):
                if not isinstance(value, dict):
                    raise _bad(path, f"'{key}' must be an object")
                kind = type(next(iter(current.values()), 0))
                current.update({str(k): kind(_number(path, f"{key}.{k}", v, key in POSITIVE, key in FRACTIONS))
                                for k, v in value.items()})
            else:
                setattr(prof, key, type(current)(_number(path, key, value, key in POSITIVE, key in FRACTIONS)))
        return prof


MAX_CONFIG_BYTES = 1 << 20
MAX_VALUE = 1e15          # ns, cycles or GB/s: a second is 1e9 ns
POSITIVE = {"cube_fractals_per_cycle", "fp32_cube_rate", "h2d_gbps", "d2h_gbps", "cube_efficiency",
            "vector_efficiency", "dram_efficiency", "memcpy_gbps"}   # divisors
# shares of a hardware peak: above 1 a kernel would beat physics (om_run/sim/roofline.py)
FRACTIONS = {"cube_fractals_per_cycle", "fp32_cube_rate", "cube_efficiency", "vector_efficiency", "dram_efficiency"}


def _bad(path, reason: str) -> AtcError:
    return AtcError("E30002", reason=f"--sim-config {path}: {reason}")


def _read_config(path: str):
    return read_json(path, lambda why: _bad(path, why), MAX_CONFIG_BYTES)


def _number(path, key: str, value, positive: bool, fraction: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(path, f"'{key}' must be a number")
    if not 0 <= value <= MAX_VALUE or (positive and value == 0):
        raise _bad(path, f"'{key}' must be {'> 0' if positive else '>= 0'} and at most {MAX_VALUE:g}, got {value}")
    limit = FP32_CUBE_PEAK_SHARE if key == "fp32_cube_rate" else 1
    if fraction and value > limit:
        raise _bad(path, f"'{key}' is a share of a hardware peak and must be at most {limit:g}, got {value}")
    return value
