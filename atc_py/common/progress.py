"""What a long job is doing, on one updating line of an interactive terminal: the stage, bytes done / total.

    p = Progress()                 # reports on sys.stderr
    p.start("write", total_bytes)  # a new stage (total 0: no byte count, the elapsed time only)
    p.advance(n)                   # n more bytes done
    p.done()                       # the job is over: the line is erased

Nothing is shown unless the stream is a terminal and the job has run for `delay` seconds (2 s; the
ATC_PY_PROGRESS_DELAY environment variable sets it): a quick job, or one whose output goes to a pipe or a
file, prints nothing extra. Once shown, the line is redrawn at most every `interval` seconds, by advance()
and by a ticker thread (a stage without byte counts still shows its time). Anything else printed to the same
terminal calls suspend() first: the line is erased and comes back at the next redraw.
"""
from __future__ import annotations

import os
import sys
import threading
import time

DELAY = 2.0
INTERVAL = 0.2


def _delay() -> float:
    try:
        return float(os.environ.get("ATC_PY_PROGRESS_DELAY", DELAY))
    except ValueError:
        return DELAY


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


class Progress:
    def __init__(self, stream=None, delay: float | None = None, interval: float = INTERVAL, prefix: str = "[atc-py]"):
        self.stream = sys.stderr if stream is None else stream
        self.prefix = prefix
        try:
            self.enabled = self.stream.isatty()
        except (AttributeError, ValueError):
            self.enabled = False
        self.delay = _delay() if delay is None else delay
        self.interval = interval
        self.t0 = time.monotonic()
        self.stage, self.total, self.count = "", 0, 0
        self.stage_t0 = self.t0
        self.shown = False
        self.last = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def start(self, stage: str, total_bytes: int = 0) -> None:
        self.stage, self.total, self.count = stage, max(0, int(total_bytes)), 0
        self.stage_t0 = time.monotonic()
        if self.enabled and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        self._draw(force=True)

    def advance(self, n: int) -> None:
        self.count += n
        self._draw(force=bool(self.total) and self.count >= self.total)   # the stage's end is always shown

    def done(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        self._stop.clear()
        self.suspend()

    def suspend(self) -> None:
        """Erase the line (something else is about to be printed); the next redraw brings it back."""
        with self._lock:
            if self.shown:
                self._write("\r\x1b[K")
                self.shown = False

    def line(self) -> str:
        elapsed = time.monotonic() - self.stage_t0
        text = f"{self.prefix} {self.stage}"
        if self.total:
            text += f": {_size(min(self.count, self.total))} / {_size(self.total)} " \
                    f"({100 * min(self.count, self.total) // self.total}%)"
        return f"{text}, {elapsed:.0f} s"

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self._draw()

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.t0 < self.delay or (not force and now - self.last < self.interval):
            return
        with self._lock:
            self.last = now
            self._write("\r" + self.line() + "\x1b[K")
            self.shown = True

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):   # the terminal went away: the job goes on without its progress line
            self.enabled = False


class StageProgress:
    """A Progress driven by calls progress(stage, done, total) (om-run's loader reports that way): a new stage
    starts a new count. Use as a context manager: the line is erased at the end."""

    def __init__(self, label: str, stream=None, delay: float | None = None, prefix: str = "[om-run]"):
        self.label = label
        self.progress = Progress(stream, delay, prefix=prefix)
        self.stage: str | None = None
        self.count = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.stage, self.count = stage, 0
            self.progress.start(f"{self.label}: {stage}", total)
        self.progress.advance(max(0, done - self.count))
        self.count = max(self.count, done)

    def __enter__(self) -> "StageProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.progress.done()


class NoProgress(Progress):
    """Reports nothing (the Python API's default)."""

    def __init__(self):
        super().__init__(stream=None, delay=0)
        self.enabled = False
