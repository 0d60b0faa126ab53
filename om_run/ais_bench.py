"""python -m om_run.ais_bench: ais_bench's command line on the simulated device. A model zoo README's
`python3 -m ais_bench --model m.om ...` (or `python3 ais_infer.py ...`) runs as `python -m om_run.ais_bench --model
m.om ...`: the line is read as ais_bench reads it (cli/ais_bench_line.py) and run by om-run with ais_bench's
conventions (run/conventions.py): its output folder and file names, BIN by default, its summary lines and files.
A module of om_run, not a package named ais_bench: the real ais_bench on a device host stays importable."""
if __name__ == "__main__":       # run, not imported: the working folder off sys.path before any other import
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from atc_py.common.entry_path import leave_working_folder
    leave_working_folder()

from .cli import ais_bench_line  # noqa: E402
from .cli.main import tool_main  # noqa: E402

if __name__ == "__main__":
    tool_main(ais_bench_line.translate, ais_bench_line.help_text, "python -m om_run.ais_bench")
