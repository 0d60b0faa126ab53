"""Reading a command line the way the tool it was written for reads it, for the entry points that stand in for
ais_bench and msame (`python -m om_run.ais_bench`, `python -m om_run.msame`).

ais_bench parses with Python's argparse: a long option may be shortened to any unambiguous prefix (`--output_dir`
is `--output_dirname`), a value follows as the next word or after `=`, and its short options (`-o`, `-m`, ...)
take theirs the same way or glued (`-oout`). msame parses with getopt_long, which also takes unambiguous prefixes
and `=`. Both tools' flags are a table (ToolFlag: its names, its value as the tool checks it, what om-run does with
it); om-run's own options are taken too when spelt in full (`--expected`, `--summary-json`, ...), after the tool's
exact names and before its prefixes, so a line of the tool means what it means to the tool. Whatever the tool
would refuse (an unknown or ambiguous option, a missing or bad value) is an E30002 naming it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from atc_py.common.errors import AtcError

NEGATIVE_NUMBER = re.compile(r"-\d+$|-\d*\.\d+$")


def bad(tool: str, reason: str) -> AtcError:
    return AtcError("E30002", reason=f"{tool}: {reason}")


@dataclass(frozen=True)
class ToolFlag:
    """One flag of the tool. `check` reads its value as the tool does (a ValueError is the tool's refusal);
    `to`: the om-run option that takes the checked value as it is (None: the entry point's own code uses it)."""
    names: tuple[str, ...]
    value: str                 # the value as the tool's help gives it (the reference page)
    default: str               # the tool's default ("—": none)
    does: str                  # what om-run does with it (the reference page)
    check: Callable[[str], object] = str
    to: str | None = None
    takes_value: bool = True

    @property
    def name(self) -> str:
        return self.names[0]


@dataclass(frozen=True)
class Parsed:
    """The line read: the tool's flags by their first name (the last one given wins, as in argparse and
    getopt), and om-run's own options in the order given."""
    values: dict[str, object]
    given: tuple[str, ...]     # the tool flags given, in order (their first names)
    own: tuple[str, ...]       # om-run's own options and values, to hand to om-run as they are


def _resolve(token: str, flags: dict[str, ToolFlag], tool: str) -> ToolFlag | None:
    """The tool flag a long option names: exact, else the one flag whose name it begins (argparse's and
    getopt_long's abbreviations)."""
    if token in flags:
        return flags[token]
    if not token.startswith("--") or len(token) < 3:
        return None
    matches = [n for n in flags if n.startswith("--") and n.startswith(token)]
    if len({flags[n].name for n in matches}) > 1:
        raise bad(tool, f"ambiguous option: {token} could match {', '.join(matches)}")
    return flags[matches[0]] if matches else None


def parse_line(argv: list[str], table: list[ToolFlag], own_flags: dict[str, bool], tool: str,
               style: str = "argparse") -> Parsed:
    """Reads argv against the tool's table. own_flags: om-run's option strings and whether each takes a value.
    style "argparse": a value may not look like an option; "getopt": the next word is the value whatever it is."""
    flags = {n: f for f in table for n in f.names}
    values: dict[str, object] = {}
    given: list[str] = []
    own: list[str] = []
    k = 0
    while k < len(argv):
        token = argv[k]
        k += 1
        if not token.startswith("-") or token == "-" or NEGATIVE_NUMBER.match(token):
            raise bad(tool, f"unrecognized arguments: {token}")
        name, eq, glued = token.partition("=")
        if not token.startswith("--") and len(token) > 2 and token[:2] in flags and not eq:
            name, eq, glued = token[:2], "=", token[2:]        # argparse's -oout
        if name not in flags and name in own_flags:
            own.append(name)
            if own_flags[name]:
                if eq:
                    own.append(glued)
                elif k < len(argv):
                    own.append(argv[k])
                    k += 1
                else:
                    raise bad(tool, f"option {name} expected one argument")
            continue
        flag = _resolve(name, flags, tool)
        if flag is None:
            raise bad(tool, f"unrecognized arguments: {token}")
        if not flag.takes_value:
            if eq:
                raise bad(tool, f"option {flag.name} takes no argument")
            values[flag.name] = True
        else:
            if eq:
                raw = glued
            elif k < len(argv) and (style == "getopt" or not argv[k].startswith("-")
                                    or NEGATIVE_NUMBER.match(argv[k])):
                raw = argv[k]
                k += 1
            else:
                raise bad(tool, f"argument {'/'.join(flag.names)}: expected one argument")
            try:
                values[flag.name] = flag.check(raw)
            except ValueError as exc:
                raise bad(tool, f"argument {'/'.join(flag.names)}: {exc}") from None
        if flag.name in given:
            given.remove(flag.name)
        given.append(flag.name)
    return Parsed(values, tuple(given), tuple(own))


# -- the values as the tools check them ------------------------------------------------------------------------
def str2bool(text: str) -> bool:
    """ais_bench's str2bool."""
    if text.lower() in ("yes", "true", "t", "y", "1"):
        return True
    if text.lower() in ("no", "false", "f", "n", "0"):
        return False
    raise ValueError(f"Boolean value expected true, 1, false, 0 with case insensitive, got '{text}'")


def int_in(low: int, high: int) -> Callable[[str], int]:
    """Digits only (ais_bench's check_*_integer), within [low, high]."""
    def check(text: str) -> int:
        if not text.isdigit() or not low <= int(text) <= high:
            raise ValueError(f"'{text}' is not an integer in [{low}, {high}]")
        return int(text)
    return check


def choice(*allowed: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"invalid choice: '{text}' (choose from {', '.join(allowed)})")
        return text
    return check


def own_options(command) -> dict[str, bool]:
    """om-run's option strings (a click command's) and whether each takes a value."""
    out = {}
    for p in command.params:
        for name in list(getattr(p, "opts", [])) + list(getattr(p, "secondary_opts", [])):
            if name.startswith("-"):
                out[name] = not getattr(p, "is_flag", False)
    return out
