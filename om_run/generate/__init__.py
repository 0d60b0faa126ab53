"""`om-run --generate`: the decode loop (`decode.py`) and the command around it (`command.py`)."""
