"""The house's shape, checked: the layers contract, no import cycle, no module over 500 lines.

The arrows (``docs/layout.md``, ``pyproject.toml`` ``[tool.importlinter]``): core → stdlib;
wire → core; sources → stdlib; candidates → sources, core; inject → core; daemon → all of
those; mmctl → core, wire, sources, candidates, inject — never the daemon or its dependencies.
import-linter checks them (every import, lazy ones inside functions included); this file adds
what it does not: no cycle among module-level imports, and a size cap per module.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {"mmd": REPO / "mmd", "mmctl": REPO / "client" / "mmctl"}
MAX_LINES = 500


def _modules() -> Iterator[tuple[str, Path]]:
    for top, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((top, *parts)), path


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: its body, ``try``/``if`` blocks, not ``TYPE_CHECKING``."""
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            stack.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])


def _graph() -> dict[str, set[str]]:
    modules = dict(_modules())
    known = set(modules)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        package = name if is_pkg else name.rpartition(".")[0]
        for node in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for target in targets:
                parts = target.split(".")
                for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
                    prefix = ".".join(parts[:i])
                    if prefix in known and prefix != name and not name.startswith(prefix + "."):
                        graph[name].add(prefix)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_module_level_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_cycle_finder_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_over_500_lines() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in _modules()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def _lint_imports() -> str:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports (import-linter, a test dependency) is not installed: pip install -e '.[test]'")
    done = subprocess.run([exe, "--config", str(REPO / "pyproject.toml"), "--no-cache"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    return f"exit {done.returncode}\n{done.stdout}{done.stderr}"


def test_layers_contract_holds() -> None:
    out = _lint_imports()
    assert out.startswith("exit 0"), out


def test_layers_contract_fails_on_an_upward_import(tmp_path: Path) -> None:
    """The contract is not vacuous: a copy of the tree with one upward import is refused."""
    shutil.copytree(REPO / "mmd", tmp_path / "mmd", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "client" / "mmctl", tmp_path / "mmctl", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    with (tmp_path / "mmd" / "core" / "uri.py").open("a", encoding="utf-8") as f:
        f.write("\nimport mmd.daemon.state  # noqa: E402\n")
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    done = subprocess.run([exe, "--config", "pyproject.toml", "--no-cache"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "mmd.core.uri -> mmd.daemon.state" in done.stdout
