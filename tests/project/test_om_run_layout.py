"""The runner package's layout: the simulated machine lives in one package (om_run/sim) and no two runner
modules import each other, directly or through others (function-local imports count: they are still edges)."""
from __future__ import annotations

import ast
import pathlib

from tests.helpers import ROOT

RUNNER = ROOT / "om_run"


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def runner_modules() -> dict[str, pathlib.Path]:
    return {module_name(p): p for p in sorted(RUNNER.rglob("*.py"))}


def imported_names(path: pathlib.Path, module: str) -> set[str]:
    """Every module an import anywhere in the file names (absolute, relative resolved; `from pkg import name`
    gives both pkg and pkg.name, which is a module when pkg is a package)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


def import_graph() -> dict[str, set[str]]:
    """runner module -> the runner modules it imports (a package's __init__ is not an edge to every module in
    it: importing om_run.sim.host runs om_run/sim/__init__.py, which imports nothing)."""
    mods = runner_modules()
    return {m: {t for t in imported_names(p, m) if t in mods and t != m} for m, p in mods.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_simulated_machine_has_one_package():
    for gone in ("device", "host"):
        assert not (RUNNER / gone).exists(), f"om_run/{gone}/ is back: the simulated machine lives in om_run/sim/"
    assert (RUNNER / "sim" / "__init__.py").is_file()


def test_the_import_graph_sees_relative_and_local_imports():
    graph = import_graph()
    assert "om_run.sim.host" in graph["om_run.sim.execute"]      # from .host import Simulation
    assert "om_run.load.model" in graph["om_run.sim.device"]     # from ..load.model import desc_from_proto
    assert "om_run.load.model" in graph["om_run.load.validate"]
    assert "om_run.load.validate" in graph["om_run.load.loader"]


def test_resolves_function_local_relative_imports(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from ..load.loader import load_model\n    from . import host\n")
    assert imported_names(f, "om_run.sim.x") >= {"om_run.load.loader", "om_run.load.loader.load_model", "om_run.sim",
                                                  "om_run.sim.host"}


def test_runner_modules_import_each_other_in_one_direction_only():
    cycles = [c for c in strongly_connected(import_graph()) if len(c) > 1]
    assert not cycles, f"import cycles among runner modules: {cycles}"


def test_the_cycle_check_finds_a_cycle():
    assert [c for c in strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) if len(c) > 1] \
        == [["a", "b", "c"]]
