"""python -m om_run.msame: msame's command line on the simulated device. `./msame --model m.om ...` runs as
`python -m om_run.msame --model m.om ...`: the line is read as msame reads it (cli/msame_line.py) and run by om-run
with msame's conventions (run/conventions.py): its time-stamped output folder, its file names, BIN by default,
one --outputSize per output."""
from .cli import msame_line
from .cli.main import tool_main

if __name__ == "__main__":
    tool_main(msame_line.translate, msame_line.help_text, "python -m om_run.msame")
