"""One updating progress line on stderr for om-run's slow steps (loading a large .om: its checksum, mapping it).

Shown only on an interactive terminal (stderr a TTY) and only once the step has taken `delay` seconds (a quick
load prints nothing); piped or redirected, nothing is written. The line is rewritten in place (carriage
return, erase to the end of the line) at most every `interval` seconds, and erased by close(), so the lines
printed after it start clean.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class ProgressLine:
    def __init__(self, label: str, stream: TextIO | None = None, delay: float = 2.0, interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic):
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.enabled = is_tty(self.stream)
        self.delay, self.interval, self.clock = delay, interval, clock
        self.start = clock()
        self.last = float("-inf")
        self.shown = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        """Where the step is: `done` of `total` bytes of `stage`."""
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < self.delay or (now - self.last < self.interval and done < total):
            return
        self.last = now
        pct = f" ({100 * done // total}%)" if total else ""
        self._write(f"\r{self.label}: {stage} {_size(done)} / {_size(total)}{pct}\x1b[K")
        self.shown = True

    def close(self) -> None:
        """Erase the line (when one was shown)."""
        if self.shown:
            self._write("\r\x1b[K")
            self.shown = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):   # a closed terminal: progress is not worth failing the run for
            self.enabled = False

    def __enter__(self) -> "ProgressLine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
