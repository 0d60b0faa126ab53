"""Machines of several chips: topology presets and link figures as platform data, each figure with its source.

data/topology/presets.ini holds the presets (which chips, how many per card and server, how they are joined) and
the links (HCCL's alpha-beta figures: a step's latency, the bandwidth per direction, the reduction's rate). A
figure carries a label (published / derived / assumed, or calibrated once fitted to a user's hccl_test output) and
its source, so a report can say where every number of a collective's cost comes from.
"""
from __future__ import annotations

import configparser
import dataclasses
import functools
import pathlib
from dataclasses import dataclass

from ..common.errors import AtcError

PRESETS_FILE = pathlib.Path(__file__).resolve().parent / "data" / "topology" / "presets.ini"
LABELS = ("published", "derived", "assumed", "calibrated")
INTERCONNECTS = ("full-mesh", "pcie")
LINK_FIGURES = ("bandwidth_gbps", "latency_ns", "reduce_gbps")


@dataclass(frozen=True)
class Figure:
    """One number with where it comes from."""

    value: float
    label: str
    source: str


@dataclass(frozen=True)
class LinkParams:
    """One kind of chip-to-chip link in HCCL's alpha-beta model: a step costs latency_ns (alpha) plus bytes moved
    over bandwidth_gbps (1/beta, GB/s = bytes/ns, per direction) plus bytes reduced over reduce_gbps (1/gamma)."""

    name: str
    kind: str
    bandwidth_gbps: Figure
    latency_ns: Figure
    reduce_gbps: Figure

    def step_ns(self, steps: float, link_bytes: float, reduce_bytes: float = 0.0) -> float:
        return (steps * self.latency_ns.value + link_bytes / self.bandwidth_gbps.value
                + reduce_bytes / self.reduce_gbps.value)

    def figures(self) -> dict[str, Figure]:
        return {k: getattr(self, k) for k in LINK_FIGURES}

    def replace(self, **figures: Figure) -> "LinkParams":
        return dataclasses.replace(self, **figures)


@dataclass(frozen=True)
class Topology:
    """A preset machine: chips per card and per server, how a server's chips are joined (a full HCCS mesh or PCIe),
    the link inside a server and (None where HCCL has no inter-server path) the link between servers."""

    name: str
    product: str
    soc_version: str
    chips_per_card: int
    cards_per_server: int
    max_servers: int                 # 0: no limit modelled
    interconnect: str                # full-mesh | pcie
    intra_link: LinkParams
    inter_link: LinkParams | None
    figures: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)   # key -> Figure

    @property
    def chips_per_server(self) -> int:
        return self.chips_per_card * self.cards_per_server

    def with_link_params(self, params: LinkParams) -> "Topology":
        """This machine with `params` in place of its intra-server link (a --link-calibration fit)."""
        return dataclasses.replace(self, intra_link=params)


def _fail(where: str, reason: str) -> AtcError:
    return AtcError("E10001", value=str(PRESETS_FILE), parameter=where, reason=reason)


def _figure(section: configparser.SectionProxy, key: str, where: str, number=float) -> Figure:
    try:
        value = number(section[key])
    except (KeyError, ValueError):
        raise _fail(where, f"{key} is missing or not a number") from None
    label, source = section.get(f"{key}.label", ""), section.get(f"{key}.source", "")
    if label not in LABELS or not source:
        raise _fail(where, f"{key} needs {key}.label (one of {', '.join(LABELS)}) and {key}.source")
    return Figure(value, label, source)


def _link(cp: configparser.ConfigParser, name: str) -> LinkParams:
    where = f"[link {name}]"
    if not cp.has_section(f"link {name}"):
        raise _fail(where, "no such link section")
    s = cp[f"link {name}"]
    figs = {k: _figure(s, k, where) for k in LINK_FIGURES}
    if figs["bandwidth_gbps"].value <= 0 or figs["reduce_gbps"].value <= 0 or figs["latency_ns"].value < 0:
        raise _fail(where, "bandwidths must be > 0 and the latency >= 0")
    return LinkParams(name=name, kind=s.get("kind", name), **figs)


def _preset(cp: configparser.ConfigParser, name: str) -> Topology:
    where = f"[preset {name}]"
    s = cp[f"preset {name}"]
    figs = {k: _figure(s, k, where, int) for k in ("chips_per_card", "cards_per_server", "max_servers")}
    figs["soc_version"] = Figure(0, s.get("soc_version.label", ""), s.get("soc_version.source", ""))
    figs["interconnect"] = Figure(0, s.get("interconnect.label", ""), s.get("interconnect.source", ""))
    if s.get("interconnect") not in INTERCONNECTS:
        raise _fail(where, f"interconnect must be one of {', '.join(INTERCONNECTS)}")
    inter = s.get("inter_link", "").strip()
    return Topology(name=name, product=s.get("product", name), soc_version=s.get("soc_version", ""),
                    chips_per_card=int(figs["chips_per_card"].value),
                    cards_per_server=int(figs["cards_per_server"].value),
                    max_servers=int(figs["max_servers"].value), interconnect=s["interconnect"],
                    intra_link=_link(cp, s.get("intra_link", "")), inter_link=_link(cp, inter) if inter else None,
                    figures=figs)


@functools.lru_cache(maxsize=1)
def _presets() -> dict[str, Topology]:
    cp = configparser.ConfigParser(interpolation=None, strict=True)
    cp.optionxform = str
    cp.read_string(PRESETS_FILE.read_text())
    names = [sec.split(" ", 1)[1] for sec in cp.sections() if sec.startswith("preset ")]
    return {name: _preset(cp, name) for name in names}


def preset_names() -> list[str]:
    return sorted(_presets())


def load_topology(name: str, parameter: str = "--topology") -> Topology:
    """The preset called `name`; E10001 listing the presets otherwise."""
    presets = _presets()
    if name not in presets:
        raise AtcError("E10001", value=name, parameter=parameter,
                       reason="no such topology preset. The presets are: " + ", ".join(sorted(presets)) + ".")
    return presets[name]


# The preset a SoC runs in when no --topology names one: 910B in the 8-chip HCCS server, 310P3 on the Duo card
# (the 310P product HCCL documents its rank table for: hicann/hccl rank_table_config_300i_duo.md).
_SOC_FAMILY = (("Ascend910B", "atlas-800-a2"), ("Ascend310P", "atlas-300i-duo"))


def topology_for_soc(soc_version: str, parameter: str = "--soc_version") -> Topology:
    for prefix, preset in _SOC_FAMILY:
        if soc_version.startswith(prefix):
            return dataclasses.replace(load_topology(preset), soc_version=soc_version)
    raise AtcError("E10001", value=soc_version, parameter=parameter,
                   reason="no multi-chip topology is modelled for this SoC (Ascend910B* and Ascend310P* are); "
                          "name one with --topology (" + ", ".join(preset_names()) + ")")
