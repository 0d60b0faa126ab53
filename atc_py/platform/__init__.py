"""SoC specs: our platform data (figures from CANN's platform_config) and a loader for CANN .ini files; machines of
several chips (topology presets and their links, each figure with its source)."""
from .soc import SocSpec, load_ini, load_soc, supported_socs
from .topology import Figure, LinkParams, Topology, load_topology, preset_names, topology_for_soc

__all__ = ["SocSpec", "load_soc", "load_ini", "supported_socs", "Figure", "LinkParams", "Topology", "load_topology",
           "preset_names", "topology_for_soc"]
