"""ATC's command-line syntax (cmd_flag_info.cc): --flag=v / --flag v, -flag → --flag, '-' → '_' in names, a unique
prefix of a flag name stands for the flag (getopt_long; atc_py/cli/atc_flags.py). The flags are the rows of
atc_py/options/flag_table.py: their kinds, defaults, value ranges and help come from there.

Errors of the syntax itself print `ERROR: ...` to stderr like ATC; value checks raise AtcError.
"""
from __future__ import annotations

from ..options.flag_checks import BOOL_TRUE, FRAMEWORK_SUPPORT  # noqa: F401  (used as cmdline.X)
from ..options.flag_table import FLAGS, Flag
from ..options.flag_table import check_value as check  # the checks `parse` applies to one flag's value
from . import atc_flags


class SyntaxProblem(Exception):
    """A command-line syntax error: printed as `ERROR: <msg>` on stderr."""


def normalise(arg: str) -> str:
    if arg.startswith("-") and not arg.startswith("--") and len(arg.split("=", 1)[0]) > 2:
        arg = "-" + arg
    if arg.startswith("--"):
        name, eq, value = arg[2:].partition("=")
        arg = "--" + name.replace("-", "_") + eq + value
    return arg


def parse(argv: list[str]) -> dict[str, str]:
    """Flag name -> value for every flag given; raises SyntaxProblem or AtcError."""
    given: dict[str, str] = {}
    args = [normalise(a) for a in argv]
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--h"):
            given["help"] = "true"
            i += 1
            continue
        if not a.startswith("--") or a == "--":
            raise SyntaxProblem(f"Non-option parameter: {a}")
        written, eq, value = a[2:].partition("=")
        name = _resolve(written)
        flag = FLAGS.get(name) or Flag(name, "bool" if name in atc_flags.BOOL_FLAGS else "str")
        if not eq and flag.kind != "bool":
            if i + 1 >= len(args):
                described = f"; flag description: {flag.help}" if flag.help else ""
                raise SyntaxProblem(f"flag '{written}' is missing its argument{described}")
            value = argv[i + 1]
            i += 1
        i += 1
        if name not in FLAGS:
            raise atc_flags.refusal(name, value)
        given[name] = value
        check(name, value)
    return given


def _resolve(written: str) -> str:
    """The flag a written name stands for (exact, or a unique prefix as getopt_long reads it)."""
    try:
        name = atc_flags.resolve(written, set(FLAGS))
    except ValueError as many:
        raise SyntaxProblem(f"unknown command line flag '{written}' (it abbreviates more than one flag: {many})") \
            from None
    if name is None:
        raise SyntaxProblem(f"unknown command line flag '{written}'")
    return name


def value(given: dict[str, str], name: str) -> str:
    return given.get(name, FLAGS[name].default)


def usage(prog: str = "atc-py") -> str:
    lines = [f"usage: {prog} <args>", "example:",
             f"  {prog} --model=./model.onnx --framework=5 --output=./out/model --soc_version=Ascend910B1", "",
             "arguments:"]
    for f in FLAGS.values():
        lines.append(f"  --{f.name:<30} {f.help}" + (f" (default: {f.default})" if f.default else ""))
    return "\n".join(lines)
