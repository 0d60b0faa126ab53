"""The roofline of one kernel: the least time physics allows it on the SoC, from the SoC's own figures.

roofline = max(useful FLOPs / cube peak, vector ops / vector peak, compulsory DRAM bytes / DRAM bandwidth,
compulsory bytes / L2 bandwidth), where the compulsory bytes are the kernel's inputs and outputs, its
compulsory DRAM bytes the inputs the L2 did not hold when it started plus the outputs the L2 cannot keep (the
L2 is write-back: outputs that fit stay there). The simulator never beats it: its efficiencies are shares of
these peaks (at most 1) and every running kernel shares the same bandwidths (machine.py). op_summary.csv reports
each kernel's roofline and bound; tests/om_run/sim/test_fidelity.py checks simulated time >= roofline over an op sweep.
"""
from __future__ import annotations

from dataclasses import dataclass

from atc_py.platform.soc import SocSpec

# The cube's fp32 MAC rate as a share of its fp16 rate. No public document states it; it is DERIVED from the GEMM
# anchor (om_run/sim/profile.py GEMM_ANCHOR): fp32 reaches 84.5 TFLOP/s where fp16 reaches 314.5, 0.269 of it.
# At a quarter of the fp16 rate that is 96 % of the fp32 peak, against 89 % for fp16; at half (a 16x8x16 fractal
# per cycle) it would be 48 %, an efficiency no fp16 measurement comes near. The simulator's fp32_cube_rate may
# not exceed it.
FP32_CUBE_PEAK_SHARE = 0.25


@dataclass
class Roofline:
    cube_ns: float = 0.0
    vector_ns: float = 0.0
    dram_ns: float = 0.0
    l2_ns: float = 0.0

    @property
    def ns(self) -> float:
        return max(self.cube_ns, self.vector_ns, self.dram_ns, self.l2_ns)

    @property
    def bound(self) -> str:
        """cube / vector / memory: which term the roofline is."""
        terms = {"cube": self.cube_ns, "vector": self.vector_ns, "memory": max(self.dram_ns, self.l2_ns)}
        return max(terms, key=lambda k: terms[k]) if self.ns > 0 else ""


def cube_peak(soc: SocSpec, dtype: str) -> float:
    """FLOP/ns of all cube cores at the hardware fractal rate."""
    peak = soc.cube_flops_per_ns("float16")
    return peak * FP32_CUBE_PEAK_SHARE if dtype in ("float32", "float64") else peak


_PEAKS: dict = {}


def peaks(soc: SocSpec, dtype: str) -> tuple[float, float, float, float]:
    """(cube FLOP/ns, vector ops/ns, DRAM bytes/ns, L2 bytes/ns) of a SoC for a dtype, computed once."""
    key = (soc.soc_version, soc.cube_freq_mhz, soc.ai_core_cnt, soc.dram_gbps, dtype)
    got = _PEAKS.get(key)
    if got is None:
        got = _PEAKS[key] = (cube_peak(soc, dtype), soc.vector_ops_per_ns(dtype), soc.dram_bytes_per_ns,
                             soc.l2_bytes_per_ns)
    return got


def roofline(soc: SocSpec, dtype: str, flops: float, vector_ops: float, compulsory_dram: float,
             compulsory: float) -> Roofline:
    cube, vector, dram, l2 = peaks(soc, dtype)
    return Roofline(cube_ns=flops / cube if flops else 0.0, vector_ns=vector_ops / vector if vector_ops else 0.0,
                    dram_ns=compulsory_dram / dram, l2_ns=compulsory / l2)
