"""om-run's error discipline: one [ERROR] line and exit 1 for a bad input, host memory running out, or a bug."""
from __future__ import annotations

import os
import sys

import click

from atc_py.common.errors import AtcError


def guarded(call) -> None:
    """One [ERROR] line and exit 1 for a bad input (AtcError), host memory running out, or a bug."""
    try:
        call()
    except AtcError as exc:
        click.echo(f"[ERROR] {exc}", err=True)
        sys.exit(1)
    except MemoryError:
        click.echo("[ERROR] E30006: The simulation needs more host memory than this machine gives it", err=True)
        sys.exit(1)
    except Exception as exc:  # a bug: one line for the user, the traceback with ATC_PY_DEBUG=1
        if os.environ.get("ATC_PY_DEBUG"):
            raise
        click.echo(f"[ERROR] E19999: Internal Error! {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
