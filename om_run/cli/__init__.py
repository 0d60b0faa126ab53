"""om-run's command line (`main.py`): the flags, `om-run compare` and `--generate` dispatched, ais_bench's and
msame's console lines."""
