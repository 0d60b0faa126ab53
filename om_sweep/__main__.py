"""python -m om_sweep: om-sweep, with the working folder off sys.path (atc_py/common/entry_path.py) before any
other import."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from atc_py.common.entry_path import leave_working_folder  # noqa: E402

leave_working_folder()

from .cli import main  # noqa: E402

main()
