"""One place for names: a log format is named only by ``mmd.sources``, an RPC method only by ``mmd.wire``.

Both are read from the code's syntax trees (string constants, not prose: a docstring that mentions
``memory.write`` is fine, a call that passes ``"memory.write"`` is not).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from mmd.sources import SOURCES
from mmd.sources.other import OtherSource
from mmd.wire.methods import METHODS

from .conftest import REPO

PLAIN_WORDS = {OtherSource.name}
"""Source names that are plain words too (a merge's ``other`` side, an error's ``other`` kind): such a constant
names the format only in a statement that speaks of an agent."""


def _constants(path: Path) -> Iterator[tuple[int, str, ast.stmt]]:
    """``(line, value, the innermost statement holding it)`` for each string constant of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    holder: dict[int, ast.stmt] = {}
    for node in ast.walk(tree):  # parents before children: each node's statement is known when it is reached
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                holder[id(child)] = child
            elif id(node) in holder:
                holder[id(child)] = holder[id(node)]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) in holder:
            yield node.lineno, node.value, holder[id(node)]


def _speaks_of_an_agent(path: Path, statement: ast.stmt) -> bool:
    return bool(re.search(r"\bagent", ast.get_source_segment(path.read_text(encoding="utf-8"), statement)
                          or ""))


def _modules(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (REPO / folder).rglob("*.py"))


def test_no_module_of_the_daemon_names_a_log_format() -> None:
    found = []
    for path in _modules("mmd/daemon"):
        for line, value, statement in _constants(path):
            if value in SOURCES and (value not in PLAIN_WORDS or _speaks_of_an_agent(path, statement)):
                found.append(f"{path.relative_to(REPO)}:{line}: {value!r}")
    assert not found, "name the format through mmd.sources (SOURCES, or its source's .name):\n" + "\n".join(found)


def test_a_method_name_is_spelled_only_in_the_wire_table() -> None:
    found = [f"{path.relative_to(REPO)}:{line}: {value!r}"
             for path in _modules("mmd", "client/mmctl") if "wire" not in path.relative_to(REPO).parts[:2]
             for line, value, _ in _constants(path) if value in METHODS]
    assert not found, "use the method's constant in mmd.wire.methods (MEMORY_WRITE.name …):\n" + "\n".join(found)


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('"""Calls memory.write."""\nagent = "dsh" if x else "other"\nif y:\n    side = "other"\n'
                      'call("memory.write")\n')
    found = sorted((line, value, _speaks_of_an_agent(sample, held)) for line, value, held in _constants(sample))
    assert found == [(1, "Calls memory.write.", False), (2, "dsh", True), (2, "other", True), (4, "other", False),
                     (5, "memory.write", False)]
