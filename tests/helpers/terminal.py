"""A text stream that says it is (or is not) a terminal: what the progress lines are tested against."""
from __future__ import annotations

import io


class FakeTerminal(io.StringIO):
    def __init__(self, tty: bool = True):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    @property
    def text(self) -> str:
        return self.getvalue()
