"""The entry modules (`python -m atc_py`, `-m om_run`, `-m om_run.ais_bench`, `-m om_run.msame`, `-m om_sweep`)
without the working folder on sys.path.

`python -m` puts the working folder first on sys.path, so a numpy.py (or json.py, or an onnx/ folder) in the
downloaded model folder the user runs from would be imported in place of the real one: a file of the folder
runs as code. The entries take that one entry out before anything else is imported, as Python 3.11's -P does
(the console scripts never had it; an entry on PYTHONPATH is the user's choice and stays).

Run from a source tree without installing, the working folder is where the packages are. Each entry first
puts the tree its own file is in at the front and imports the packages of that tree (their `__init__` modules
load only modules of their own package), then takes that entry out again: atc_py, om_run and om_sweep then
load one another from the tree that was run, never an installed copy, and everything else comes from the
environment (om-sweep's job processes are told where the tree is: om_sweep/sandbox.py)."""
from __future__ import annotations

import os
import sys

PACKAGES = ("atc_py", "om_run", "om_sweep")


def leave_working_folder() -> None:
    """Call first thing in an entry module, right after it put its own tree (the folder holding its package)
    at sys.path[0]."""
    home = sys.path[0]
    for name in PACKAGES:
        if name not in sys.modules and os.path.isfile(os.path.join(home, name, "__init__.py")):
            __import__(name)
    del sys.path[0]
    if sys.path and not getattr(sys.flags, "safe_path", False) and _is_working_folder(sys.path[0]):
        del sys.path[0]


def _is_working_folder(entry: str) -> bool:
    if entry == "":
        return True
    try:
        return os.path.samefile(entry, os.getcwd())
    except OSError:          # a folder that is gone, a name that is not one
        return False
