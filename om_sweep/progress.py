"""A progress bar on stderr while a sweep runs (no dependency): redrawn in place on a terminal, a line
every tenth of the jobs otherwise (logs, CI)."""
from __future__ import annotations

import sys
import time
from collections import Counter


class Progress:
    WIDTH = 28

    def __init__(self, total: int, reused: int, engine: str, stream=None, clock=time.monotonic):
        self.total, self.reused, self.engine = total, reused, engine
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.clock = clock
        self.start = clock()
        self.done = 0
        self.statuses: Counter = Counter()
        self.last_draw = 0.0
        self.next_line = 0
        if total:
            self._emit(force=True)

    def update(self, status: str) -> None:
        self.done += 1
        self.statuses["ok" if status == "ok" else "failed"] += 1
        self._emit(force=self.done == self.total)

    def line(self) -> str:
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * self.WIDTH))
        elapsed = self.clock() - self.start
        rate = self.done / elapsed if elapsed > 0 and self.done else 0.0
        eta = f"eta {(self.total - self.done) / rate:.0f}s" if rate and self.done < self.total else \
            f"{elapsed:.1f}s"
        return (f"om-sweep [{'#' * filled}{'-' * (self.WIDTH - filled)}] {self.done}/{self.total} jobs "
                f"({self.engine})  ok {self.statuses['ok']}  failed {self.statuses['failed']}  "
                f"reused {self.reused}  {rate:.1f} jobs/s  {eta}")

    def _emit(self, force: bool = False) -> None:
        now = self.clock()
        if self.tty:
            if force or now - self.last_draw >= 0.1:
                self.stream.write("\r" + self.line())
                self.stream.flush()
                self.last_draw = now
        elif force or self.done >= self.next_line:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self.next_line = self.done + max(1, self.total // 10)

    def close(self) -> None:
        if self.tty and self.total:
            self.stream.write("\n")
            self.stream.flush()
