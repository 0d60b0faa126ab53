"""python -m om_run.msame: msame's command line on the simulated device. `./msame --model m.om ...` runs as
`python -m om_run.msame --model m.om ...`: the line is read as msame reads it (cli/msame_line.py) and run by om-run
with msame's conventions (run/conventions.py): its time-stamped output folder, its file names, BIN by default,
one --outputSize per output."""
if __name__ == "__main__":       # run, not imported: the working folder off sys.path before any other import
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from atc_py.common.entry_path import leave_working_folder
    leave_working_folder()

from .cli import msame_line  # noqa: E402
from .cli.main import tool_main  # noqa: E402

if __name__ == "__main__":
    tool_main(msame_line.translate, msame_line.help_text, "python -m om_run.msame")
