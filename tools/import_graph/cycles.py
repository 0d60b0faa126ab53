"""The cycles of the import graph, seen two ways.

Module cycles: SCCs of more than one module; one crosses folders when its modules live in more than one
directory. Package cycles: for each package (and the root holding the top-level packages), the SCCs of the
graph whose nodes are its direct children, each sub-package collapsed into one node (its modules and
everything below). A package cycle crosses folders when it holds a sub-package: e.g. ops/ -> autofuse/ ->
ops/ is one even when no single module is on a cycle, because the lazy op registry hides the back edge from
the module graph while the two folders still depend on each other. Package cycles of plain modules only are
exactly the module cycles inside one folder, so they are reported once, as module cycles.
"""
from __future__ import annotations

from dataclasses import dataclass

from .scan import ROOT, Edge, Module
from .scc import strongly_connected


@dataclass(frozen=True)
class Cycle:
    """One SCC. `scope` is None for a module cycle, else the package whose children `members` are ('' for
    the root holding the top-level packages); a member is a dotted module or sub-package name, the scope's
    own `__init__` being the scope's name. `edges`: the imports that close it (both ends inside members)."""
    scope: str | None
    members: tuple[str, ...]
    folders: tuple[str, ...]
    edges: tuple[Edge, ...]

    @property
    def crosses_folders(self) -> bool:
        return len(self.folders) > 1


def module_cycles(modules: dict[str, Module], edges: list[Edge], root=ROOT) -> list[Cycle]:
    """Every SCC of more than one module; cross-folder ones first."""
    found = []
    for component in strongly_connected(modules, [(e.source, e.target) for e in edges]):
        if len(component) > 1:
            members = set(component)
            folders = tuple(sorted({modules[name].folder(root) for name in component}))
            inside = tuple(e for e in edges if e.source in members and e.target in members)
            found.append(Cycle(None, tuple(component), folders, inside))
    return sorted(found, key=lambda c: (not c.crosses_folders, c.members))


def child_of(name: str, scope: str) -> str | None:
    """The direct child of package `scope` that module `name` belongs to (None: outside `scope`)."""
    if name == scope:
        return name
    if not scope:
        return name.split(".")[0]
    if not name.startswith(scope + "."):
        return None
    return f"{scope}.{name[len(scope) + 1:].split('.')[0]}"


def _scope_cycles(scope: str, modules, edges) -> list[Cycle]:
    """The SCCs among the children of `scope` that hold a sub-package."""
    lifted = {}
    for e in edges:
        source, target = child_of(e.source, scope), child_of(e.target, scope)
        if source and target and source != target:
            lifted.setdefault((source, target), []).append(e)
    nodes = sorted({node for pair in lifted for node in pair})
    found = []
    for component in strongly_connected(nodes, list(lifted)):
        packages = [m for m in component if m != scope and modules[m].is_package]
        if len(component) > 1 and packages:
            members = set(component)
            inside = tuple(e for pair, group in lifted.items() if set(pair) <= members for e in group)
            folders = tuple(sorted({scope.replace(".", "/") or "."} | {p.replace(".", "/") for p in packages}))
            found.append(Cycle(scope, tuple(component), folders, inside))
    return found


def package_cycles(modules: dict[str, Module], edges: list[Edge]) -> list[Cycle]:
    """For the root and each package, the cycles among its children that cross into a sub-package."""
    scopes = [""] + sorted(name for name, module in modules.items() if module.is_package)
    return [cycle for scope in scopes for cycle in _scope_cycles(scope, modules, edges)]
