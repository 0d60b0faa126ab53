"""python -m runner: om-run."""
from .cli import main

main()
