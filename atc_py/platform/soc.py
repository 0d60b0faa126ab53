"""SocSpec: the platform figures the compiler (tiling, task generation) and the simulator (costs) read."""
from __future__ import annotations

import configparser
import functools
import pathlib
from dataclasses import dataclass, field

from ..errors import AtcError

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
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def vector_cores(self) -> int:
        """Cores that run vector (AIV) kernels: separate vector cores when split, else the AI Cores."""
        return self.vector_core_cnt if self.cube_vector_split else self.ai_core_cnt

    @property
    def cube_cores(self) -> int:
        return self.cube_core_cnt or self.ai_core_cnt

    def mkn_for(self, dtype: str) -> tuple[int, int, int]:
        """Fractal (m, k, n) for a cube dtype, per [DtypeMKN] (Default 16,16,16)."""
        key = {"int8": "DT_INT8", "uint8": "DT_UINT8"}.get(dtype, "Default")
        return self.mkn.get(key, self.mkn.get("Default", (16, 16, 16)))


def _int(section: dict, key: str, default: int = 0) -> int:
    value = section.get(key, "")
    return int(value) if value.strip().lstrip("-").isdigit() else default


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
        raw=raw,
    )


def supported_socs() -> list[str]:
    return sorted(p.stem for p in DATA_DIR.glob("*.ini"))


@functools.lru_cache(maxsize=None)
def load_soc(soc_version: str) -> SocSpec:
    """The SocSpec for a --soc_version value; E10001 listing the supported ones otherwise."""
    path = DATA_DIR / f"{soc_version}.ini"
    if not soc_version or "/" in soc_version or not path.is_file():
        raise AtcError("E10001", value=soc_version, parameter="--soc_version",
                       reason="The value is not supported. The supported values are: "
                              + ", ".join(supported_socs()) + ".")
    return load_ini(path)
