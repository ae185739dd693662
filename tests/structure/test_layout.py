"""The layout is the architecture: these checks fail when a change breaks it.

- every package under ``rag/`` imports in a fresh interpreter in which Streamlit cannot be imported;
- nothing in ``rag/`` imports Streamlit, and nothing outside ``rag/lab`` imports the lab;
- no two modules of ``rag/`` import each other, directly or through others (no import cycle), and no
  two packages do either, counting imports inside functions too;
- no module is much longer than ~300 lines.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RAG = ROOT / "rag"
MAX_MODULE_LINES = 320


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(RAG.rglob("*.py"))}
PACKAGES = sorted(name for name, path in MODULES.items() if path.name == "__init__.py")


def _imports(path: Path) -> set[str]:
    """Every module named by an import in ``path``, at any depth (lazy imports count)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _resolve(name: str) -> str | None:
    """The module of ours that ``name`` refers to (a name imported from a module resolves to it)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in MODULES.items():
        for imported in _imports(path):
            target = _resolve(imported) if imported.startswith("rag") else None
            if target and target not in (name, "rag"):
                graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(set(graph) | {m for targets in graph.values() for m in targets}):
        if node not in index:
            visit(node)
    return found


def _package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_without_streamlit(package: str) -> None:
    if package == "rag":  # the top-level modules; each sub-package has its own case
        modules = [name for name in MODULES if name.count(".") == 1 and name not in PACKAGES]
    else:
        modules = [name for name in MODULES if name == package or name.startswith(package + ".")]
    modules = [name for name in modules if not name.endswith("__main__")]  # those run a command
    code = ("import importlib, sys; sys.modules['streamlit'] = None\n"  # `import streamlit` now raises
            f"for name in {modules!r}: importlib.import_module(name)\n"
            "assert 'streamlit' not in [m for m in sys.modules if sys.modules[m] is not None]")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_rag_never_imports_streamlit_and_only_the_lab_imports_the_lab() -> None:
    offenders = []
    for name, path in MODULES.items():
        imported = _imports(path)
        if any(i == "streamlit" or i.startswith("streamlit.") for i in imported):
            offenders.append(f"{name} imports streamlit")
        if not name.startswith("rag.lab") and any(i == "rag.lab" or i.startswith("rag.lab.") for i in imported):
            offenders.append(f"{name} imports the lab")
    assert not offenders, offenders


def test_the_app_outside_rag_never_imports_the_lab() -> None:
    app_files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]
    offenders = [str(p.relative_to(ROOT)) for p in app_files
                 if any(i == "rag.lab" or i.startswith("rag.lab.") for i in _imports(p))]
    assert not offenders


def test_no_import_cycles_between_modules_or_packages() -> None:
    graph = _graph()
    assert _cycles(graph) == []
    packages: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph.items():
        for target in targets:
            if _package_of(module) != _package_of(target):
                packages[_package_of(module)].add(_package_of(target))
    assert _cycles(packages) == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_is_much_longer_than_300_lines() -> None:
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, long
