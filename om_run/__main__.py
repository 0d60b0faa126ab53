"""python -m om_run: om-run."""
from .cli.main import main

main()
