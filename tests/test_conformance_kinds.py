"""The deviation kinds of ``tests/conformance_kinds.py`` on vectors of our own (``tests/fixtures/conformance``).

Each ``kind-*.json`` shows one kind of deliberate difference in a situation the shared vectors do not have; the
rule its case names (``deviation``) must explain every difference of it. Each vector in ``unexplained/`` has the
same kind of difference and one more: it must still fail. The vectors' ``expected`` follow the reference's
source step by step (``README.md`` there says how they were made).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conformance_kinds import path_added
from .test_conformance import run_vector

OWN = Path(__file__).resolve().parent / "fixtures" / "conformance"


def _vector(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["case"], data["expected"]


@pytest.mark.parametrize("path", sorted(OWN.glob("kind-*.json")), ids=lambda p: p.stem)
def test_a_vector_of_each_kind_is_explained_by_its_rule(path: Path, tmp_path: Path) -> None:
    case, expected = _vector(path)
    run = run_vector(case, expected, tmp_path)
    assert not run.mismatches, "\n".join(run.mismatches)
    assert run.explained and {e.split(": ", 1)[1] for e in run.explained} == {case["deviation"]}, run.explained


@pytest.mark.parametrize("path", sorted((OWN / "unexplained").glob("*.json")), ids=lambda p: p.stem)
def test_a_vector_that_differs_in_another_way_too_still_fails(path: Path, tmp_path: Path) -> None:
    case, expected = _vector(path)
    assert run_vector(case, expected, tmp_path).mismatches


def test_each_own_vector_is_read() -> None:
    assert len(list(OWN.glob("kind-*.json"))) >= 4 and len(list((OWN / "unexplained").glob("*.json"))) >= 3


def test_a_path_is_added_in_a_message_shape_only() -> None:
    bare = 'index line 3: heading "X" is not a valid topic slug'
    assert path_added(f"<ROOT>/MEMORY.md: {bare}", bare) == "<ROOT>/MEMORY.md"
    assert path_added(f"{bare} (<ROOT>/memories/a.md)", bare) == "<ROOT>/memories/a.md"
    assert path_added(f"{bare} in /srv/mem/MEMORY.md", bare) == "/srv/mem/MEMORY.md"
    assert path_added(bare, bare) is None  # nothing added
    assert path_added(f"<ROOT>/MEMORY.md: {bare}; and more", bare) is None  # more than a path
    assert path_added(f"somewhere: {bare}", bare) is None  # not a path
