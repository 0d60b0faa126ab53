"""python -m tools.import_graph [--edges] [--check] [--root DIR] [package ...]: print the import cycles.

Lists every module cycle (SCC of > 1 module) and every package cycle (see cycles.py), marking those that
cross folders. --check exits 1 if one does; --edges lists every import that closes a cycle.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

from .cycles import Cycle, child_of, module_cycles, package_cycles
from .scan import PACKAGES, ROOT, build


def _mark(cycle: Cycle) -> str:
    return "CROSS-FOLDER" if cycle.crosses_folders else "one folder"


def _import_line(edge, modules, root) -> str:
    where = "in a function" if edge.local else "module level"
    return f"{modules[edge.source].label(root)}:{edge.line} -> {modules[edge.target].label(root)} ({where})"


def _member(name: str, scope: str, modules) -> str:
    """A package cycle's member relative to its scope: 'ops/' for a sub-package, 'pipeline' for a module."""
    if name == scope:
        return "__init__"
    short = name[len(scope) + 1:] if scope else name
    return short + "/" if modules[name].is_package else short


def render(by_module: list[Cycle], by_package: list[Cycle], modules, root, show_edges=False) -> str:
    """The report: each module cycle with its modules, each package cycle with the imports between members."""
    lines = ["module cycles (SCCs of modules):"]
    for cycle in by_module:
        lines.append(f"  [{_mark(cycle)}] {len(cycle.members)} modules in {', '.join(cycle.folders)}")
        lines += [f"      {modules[name].label(root)}" for name in cycle.members]
        if show_edges:
            lines += [f"        {_import_line(e, modules, root)}" for e in cycle.edges]
    lines.append("package cycles (SCCs among one package's children, sub-packages collapsed):")
    for cycle in by_package:
        scope = cycle.scope
        names = ", ".join(_member(m, scope, modules) for m in cycle.members)
        lines.append(f"  [{_mark(cycle)}] in {scope or '.'}: {names}")
        pairs = {}
        for e in cycle.edges:
            pair = tuple(_member(child_of(n, scope), scope, modules) for n in (e.source, e.target))
            pairs.setdefault(pair, []).append(e)
        for (source, target), group in sorted(pairs.items()):
            if show_edges:
                lines.append(f"      {source} -> {target}:")
                lines += [f"        {_import_line(e, modules, root)}" for e in group]
            else:
                lines.append(f"      {source} -> {target}: {len(group)} import(s), e.g. "
                             f"{_import_line(group[0], modules, root)}")
    crossing = sum(c.crosses_folders for c in by_module + by_package)
    lines.append(f"{len(by_module)} module cycles, {len(by_package)} package cycles; {crossing} cross folders")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.import_graph", description="Print the import cycles of the project's packages.")
    parser.add_argument("packages", nargs="*", default=list(PACKAGES), help="top-level packages to scan")
    parser.add_argument("--root", type=pathlib.Path, default=ROOT, help="the directory holding the packages")
    parser.add_argument("--edges", action="store_true", help="list every import that closes a cycle")
    parser.add_argument("--check", action="store_true", help="exit 1 if a cycle crosses folders")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    modules, edges = build(root, tuple(args.packages))
    by_module, by_package = module_cycles(modules, edges, root), package_cycles(modules, edges)
    sys.stdout.write(render(by_module, by_package, modules, root, args.edges))
    return 1 if args.check and any(c.crosses_folders for c in by_module + by_package) else 0


if __name__ == "__main__":
    sys.exit(main())
