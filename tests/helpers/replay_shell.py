"""What bash does to a README's `atc ...` text before ATC sees it, as far as the replayed lines need: `$var` and
`${var}` expansion, backslash-newline continuations (outside single quotes), the command ending at the first
unquoted newline, then word splitting and quote removal (shlex in POSIX mode).

Kept apart from the test so the replay's shell semantics are stated once and can be read on their own."""
from __future__ import annotations

import re
import shlex

VAR = re.compile(r"\$(?:\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*|[0-9]))")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


class ShellError(Exception):
    """The text would not run as a command at all (bash reports it; ATC never starts)."""


def expand(text: str, variables: dict[str, str]) -> str:
    """`$name` / `${name}` -> its value, outside single quotes (as bash expands); an unset name is a data error,
    an invalid `${...}` is bash's "bad substitution"."""
    out, quote, i = [], "", 0
    while i < len(text):
        ch = text[i]
        if ch == "'" and quote != '"':
            quote = "" if quote == "'" else "'"
        elif ch == '"' and quote != "'":
            quote = "" if quote == '"' else '"'
        elif ch == "\\" and quote != "'" and i + 1 < len(text):
            out.append(text[i:i + 2])
            i += 2
            continue
        elif ch == "$" and quote != "'":
            m = VAR.match(text, i)
            if m:
                name = m.group(1) if m.group(1) is not None else m.group(2)
                if not NAME.fullmatch(name):
                    raise ShellError(f"${{{name}}}: bad substitution")
                if name not in variables:
                    raise KeyError(f"the case gives no value for ${name}")
                out.append(variables[name])
                i = m.end()
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def first_command(text: str) -> str:
    """Backslash-newline pairs removed (not inside single quotes), then the text up to the first newline that is
    neither quoted nor escaped: the one command bash would run."""
    out, quote, i = [], "", 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and quote != "'" and i + 1 < len(text):
            if text[i + 1] == "\n":
                i += 2
                continue
            out.append(text[i:i + 2])
            i += 2
            continue
        if ch == "'" and quote != '"':
            quote = "" if quote == "'" else "'"
        elif ch == '"' and quote != "'":
            quote = "" if quote == '"' else '"'
        elif ch == "\n" and not quote:
            break
        out.append(ch)
        i += 1
    return "".join(out)


def atc_argv(cmd: str, variables: dict[str, str]) -> list[str]:
    """The argv ATC receives (without argv[0]) for README text `cmd`."""
    words = shlex.split(first_command(expand(cmd.replace("\r\n", "\n"), variables)), posix=True)
    if not words or words[0] != "atc":
        raise ShellError(f"the command is not atc: {words[:1]}")
    return words[1:]
