"""SoC specs: our platform data (figures from CANN's platform_config) and a loader for CANN .ini files."""
from .soc import SocSpec, load_ini, load_soc, supported_socs

__all__ = ["SocSpec", "load_soc", "load_ini", "supported_socs"]
