"""The static import graph of the project's packages (atc_py, runner, om_sweep) and its cycles.

Why: an import cycle between two folders (sub-packages) ties their layering together, so neither can be
read, tested or moved alone, and what a module sees at import time depends on who was imported first.
This reads the source with `ast` (nothing is imported) and reports strongly connected components:
tests/project/test_import_graph.py keeps cycles that cross folders out.

    scan.py    modules and import edges          scc.py       Tarjan's algorithm
    cycles.py  module cycles and package cycles  __main__.py  the report (python -m tools.import_graph)
"""
from .cycles import Cycle, module_cycles, package_cycles
from .scan import PACKAGES, ROOT, Edge, Module, build, discover, module_edges
from .scc import strongly_connected

__all__ = ["Cycle", "Edge", "Module", "PACKAGES", "ROOT", "build", "discover", "module_cycles", "module_edges",
           "package_cycles", "strongly_connected"]
