"""Running a loaded model: its flags parsed once (`options.py`), the inputs and output files (`io.py`, msame's
forms in `msame_inputs.py`), gear selection (`gears.py`) and the executions (`simulate.py`)."""
