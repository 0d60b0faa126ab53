"""SocSpec: the platform figures the compiler (tiling, task generation) and the simulator (costs) read."""
from __future__ import annotations

import configparser
import functools
import os
import pathlib
from dataclasses import dataclass, field

import numpy as np

from ..common.errors import AtcError

DATA_DIR = pathlib.Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class SocSpec:
    """Typed view of one platform .ini; `raw` keeps every key for anything not typed here."""

    soc_version: str
    short_soc_version: str
    ai_core_cnt: int
    cube_core_cnt: int
    vector_core_cnt: int
    ai_cpu_cnt: int
    l2_size: int
    prefetch_num: int
    cube_vector_split: bool
    cube_freq_mhz: int
    vec_calc_size: int
    ub_size: int
    l1_size: int
    l0_a_size: int
    l0_b_size: int
    l0_c_size: int
    ddr_rate: int
    l2_rate: int
    mkn: dict = field(default_factory=dict)
    model_task_update: bool = False
    memory_size: int = 0          # device memory (HBM/DDR) in bytes, SoCInfo memory_size
    stream_num: int = 0           # streams the runtime offers, SoCInfo normal_stream_num
    dram_gbps: float = 0.0        # chip-level DRAM (HBM/LPDDR) bandwidth, GB/s == bytes/ns ([AtcPyMemory])
    dram_source: str = ""         # where dram_gbps comes from (published / derived / assumed)
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def vector_cores(self) -> int:
        """Cores that run vector (AIV) kernels: separate vector cores when split, else the AI Cores."""
        return self.vector_core_cnt if self.cube_vector_split else self.ai_core_cnt

    @property
    def cube_cores(self) -> int:
        return self.cube_core_cnt or self.ai_core_cnt

    @property
    def dram_bytes_per_ns(self) -> float:
        """Chip DRAM bandwidth every running kernel shares. Without an [AtcPyMemory] figure (a CANN ini read
        with load_ini): ddr_rate bytes per cycle x AI Cores x clock, the reading of ddr_rate that reproduces
        310P3's published 204 GB/s (shared/reference/research/peers.md)."""
        if self.dram_gbps > 0:
            return float(self.dram_gbps)
        return max(1.0, self.ddr_rate * self.ai_core_cnt * self.cube_freq_mhz / 1000)

    @property
    def l2_bytes_per_ns(self) -> float:
        """Chip L2 bandwidth (all cores together). ASSUMED, no published figure: the ini's per-core l2_rate
        (bytes per cycle) x AI Cores x clock (910B1 4.9 TB/s, 310P3 0.97 TB/s)."""
        return max(1.0, self.l2_rate * self.ai_core_cnt * self.cube_freq_mhz / 1000)

    def cube_flops_per_ns(self, dtype: str) -> float:
        """Peak cube FLOP/ns at the fp16 fractal rate (one m x k x n fractal per cycle per cube core, 2 FLOPs per
        MAC): 910B2 354 TFLOP/s, 310P3 69.5 (peers.md). The roofline's compute bound for every cube dtype."""
        m, k, n = self.mkn_for(dtype)
        return self.cube_cores * self.cube_freq_mhz / 1000 * m * k * n * 2

    def vector_ops_per_ns(self, dtype: str) -> float:
        """Peak vector element-ops per ns: vec_calc_size fp16 elements per cycle per vector core (half as many
        4-byte elements)."""
        try:
            itemsize = np.dtype(dtype).itemsize
        except TypeError:
            itemsize = 4
        per_cycle = max(1.0, self.vec_calc_size * 2 / max(1, itemsize))
        return self.vector_cores * self.cube_freq_mhz / 1000 * per_cycle

    def intrinsic_dtypes(self, intrinsic: str) -> set[str] | None:
        """The dtypes the AI Core offers `intrinsic` (e.g. "vexp") in, per [AICoreintrinsicDtypeMap]; None when
        the platform data does not list it."""
        for line in self.raw.get("AICoreintrinsicDtypeMap", {}).values():
            name, _, dtypes = line.partition("|")
            if name == f"Intrinsic_{intrinsic}":
                return {d.strip() for d in dtypes.split(",") if d.strip()}
        return None

    def mkn_for(self, dtype: str) -> tuple[int, int, int]:
        """Fractal (m, k, n) for a cube dtype, per [DtypeMKN] (Default 16,16,16)."""
        key = {"int8": "DT_INT8", "uint8": "DT_UINT8"}.get(dtype, "Default")
        return self.mkn.get(key, self.mkn.get("Default", (16, 16, 16)))


def _int(section: dict, key: str, default: int = 0) -> int:
    value = section.get(key, "")
    return int(value) if value.strip().lstrip("-").isdigit() else default


def _float(section: dict, key: str) -> float:
    try:
        value = float(section.get(key, "") or 0)
    except ValueError:
        return 0.0
    return value if 0 < value < 1e9 else 0.0


def load_ini(path: str | pathlib.Path) -> SocSpec:
    """Parse a CANN platform_config .ini (or ours) into a SocSpec."""
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    cp.optionxform = str
    try:
        text = pathlib.Path(path).read_text()
        cp.read_string(text)
    except (OSError, configparser.Error, UnicodeDecodeError) as exc:
        raise AtcError("E10001", value=str(path), parameter="--soc_version",
                       reason=f"The platform file cannot be read: {exc}") from None
    raw = {s: dict(cp.items(s)) for s in cp.sections()}
    ver, soc, core = raw.get("version", {}), raw.get("SoCInfo", {}), raw.get("AICoreSpec", {})
    rates, feats = raw.get("AICoreMemoryRates", {}), raw.get("AtcPyFeatures", {})
    memory = raw.get("AtcPyMemory", {})
    mkn = {k: tuple(int(x) for x in v.split(",")) for k, v in raw.get("DtypeMKN", {}).items()}
    return SocSpec(
        soc_version=ver.get("SoC_version", pathlib.Path(path).stem),
        short_soc_version=ver.get("Short_SoC_version", ""),
        ai_core_cnt=_int(soc, "ai_core_cnt"),
        cube_core_cnt=_int(soc, "cube_core_cnt"),
        vector_core_cnt=_int(soc, "vector_core_cnt"),
        ai_cpu_cnt=_int(soc, "ai_cpu_cnt"),
        l2_size=_int(soc, "l2_size"),
        prefetch_num=_int(soc, "prefetch_num"),
        cube_vector_split=soc.get("cube_vector_combine", "") == "split",
        cube_freq_mhz=_int(core, "cube_freq"),
        vec_calc_size=_int(core, "vec_calc_size"),
        ub_size=_int(core, "ub_size"),
        l1_size=_int(core, "l1_size"),
        l0_a_size=_int(core, "l0_a_size"),
        l0_b_size=_int(core, "l0_b_size"),
        l0_c_size=_int(core, "l0_c_size"),
        ddr_rate=_int(rates, "ddr_rate"),
        l2_rate=_int(rates, "l2_rate"),
        mkn=mkn,
        model_task_update=feats.get("model_task_update", "0") == "1",
        memory_size=_int(soc, "memory_size"),
        stream_num=_int(soc, "normal_stream_num"),
        dram_gbps=_float(memory, "dram_bandwidth_gbps"),
        dram_source=memory.get("dram_bandwidth_source", ""),
        raw=raw,
    )


def supported_socs() -> list[str]:
    return sorted(p.stem for p in DATA_DIR.glob("*.ini"))


@functools.lru_cache(maxsize=None)
def load_soc(soc_version: str) -> SocSpec:
    """The SocSpec for a --soc_version value; E10001 listing the supported ones otherwise."""
    path = DATA_DIR / f"{soc_version}.ini"
    if not soc_version or "/" in soc_version or not os.path.isfile(path):
        raise AtcError("E10001", value=soc_version, parameter="--soc_version",
                       reason="The value is not supported. The supported values are: "
                              + ", ".join(supported_socs()) + ".")
    return load_ini(path)
