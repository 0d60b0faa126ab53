"""Modules and import edges, read from the source with `ast`.

Edges: every `import` / `from ... import` statement, at module level or inside a function (a lazy import
still ties the two modules together), with relative imports resolved. `from p import n` is an edge to the
submodule p.n when that is a scanned module, else to p; a package's node is its `__init__`. Imports of
anything outside the scanned packages (google.* in the generated protobuf modules, numpy, ...) are not
edges. Dynamic imports (importlib.import_module: the lazy op and adapter indexes) are not seen.
"""
from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("atc_py", "om_run", "om_sweep", "atc_conformance")


@dataclass(frozen=True)
class Module:
    """One scanned module: `name` is dotted, `path` its file (a package's is its `__init__.py`)."""
    name: str
    path: pathlib.Path
    is_package: bool

    @property
    def package(self) -> str:
        """The package that this module's relative imports are resolved against."""
        return self.name if self.is_package else self.name.rpartition(".")[0]

    def folder(self, root: pathlib.Path) -> str:
        """The directory holding the file, relative to `root` ('atc_py' for atc_py/__init__.py)."""
        return self.path.parent.relative_to(root).as_posix()

    def label(self, root: pathlib.Path) -> str:
        """The file without its .py suffix, e.g. atc_py/__init__ or atc_py/ops/core/registry."""
        return self.path.relative_to(root).with_suffix("").as_posix()


@dataclass(frozen=True)
class Edge:
    """`source` imports `target` at `line`; `local` if the statement is inside a def, class or lambda."""
    source: str
    target: str
    line: int
    local: bool


def discover(root: pathlib.Path, packages=PACKAGES) -> dict[str, Module]:
    """Every .py module under the named top-level packages of `root`, by dotted name."""
    modules = {}
    for top in packages:
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if not all(part.isidentifier() for part in parts):
                continue                                 # not importable (e.g. a stray script name)
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            modules[name] = Module(name, path, is_package)
    return modules


def _known_prefix(name: str, modules) -> str | None:
    """The longest dotted prefix of `name` that is a scanned module (None: an outside import)."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in modules:
            return candidate
    return None


def _from_base(module: Module, node: ast.ImportFrom) -> str | None:
    """The dotted module a `from ... import` names, its leading dots resolved (None: above the top)."""
    if not node.level:
        return node.module
    parts = module.package.split(".")
    if node.level - 1 >= len(parts):
        return None
    base = ".".join(parts[:len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def _targets(module: Module, node, modules) -> list[str]:
    """The scanned modules one import statement makes `module` depend on."""
    if isinstance(node, ast.Import):
        found = [_known_prefix(alias.name, modules) for alias in node.names]
    else:
        base = _from_base(module, node)
        if base is None:
            return []
        found = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else _known_prefix(base, modules)
                 for alias in node.names]
    return list(dict.fromkeys(t for t in found if t and t != module.name))


class _ImportVisitor(ast.NodeVisitor):
    """Collects one module's edges, noting whether each statement sits inside a def, class or lambda."""

    def __init__(self, module: Module, modules):
        self.module, self.modules, self.depth, self.edges = module, modules, 0, []

    def _scope(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = _scope

    def _import(self, node):
        for target in _targets(self.module, node, self.modules):
            self.edges.append(Edge(self.module.name, target, node.lineno, self.depth > 0))

    visit_Import = visit_ImportFrom = _import


def module_edges(module: Module, modules) -> list[Edge]:
    """The import edges of one module, in source order."""
    visitor = _ImportVisitor(module, modules)
    visitor.visit(ast.parse(module.path.read_bytes(), filename=str(module.path)))
    return visitor.edges


def build(root: pathlib.Path = ROOT, packages=PACKAGES) -> tuple[dict[str, Module], list[Edge]]:
    """The scanned modules and every import edge between them."""
    modules = discover(root, packages)
    return modules, [edge for module in modules.values() for edge in module_edges(module, modules)]
