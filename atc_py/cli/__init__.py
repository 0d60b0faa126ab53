"""atc-py's command line: ATC's flags (`flags.py`, with ATC's whole flag list in `atc_flags.py`), the modes
(`main.py`) and the pre-check (`precheck.py`)."""
