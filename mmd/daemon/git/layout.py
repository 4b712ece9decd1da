"""Which paths of a memory root are memory: the one table a sync's checks and its checkout read (issue 26).

Owns: :func:`memory_kind` over :data:`MEMORY_PATHS` — ``MEMORY.md``, ``memories/<topic>.md``, the same two
in each project root of the memory home (``projects/<key>/…``, ``docs/projects.md``), and mmd's own
``.gitattributes`` and ``.gitignore``. A layout that adds memory files adds its rows here, and only here.
Never does: git, files, or the checks themselves (:mod:`.contain`).
"""

from __future__ import annotations

import re
from typing import Literal

from mmd.core.text import TOPIC_MAX_LENGTH

__all__ = ["MEMORY_PATHS", "PROJECT_KEY", "MemoryKind", "memory_kind"]

MemoryKind = Literal["index", "note", "git-file"]
"""``index``: a root's MEMORY.md; ``note``: a detail note; ``git-file``: ``.gitattributes`` / ``.gitignore``."""

_TOPIC = rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{TOPIC_MAX_LENGTH - 1}}}"
PROJECT_KEY = r"[a-z0-9-]{1,40}-[0-9a-f]{8}"
"""A project root's key (``docs/projects.md``), as a regular expression."""

MEMORY_PATHS: tuple[tuple[MemoryKind, re.Pattern[str]], ...] = (
    ("index", re.compile(r"MEMORY\.md")),
    ("note", re.compile(rf"memories/{_TOPIC}\.md", re.ASCII)),
    ("index", re.compile(rf"projects/{PROJECT_KEY}/MEMORY\.md", re.ASCII)),
    ("note", re.compile(rf"projects/{PROJECT_KEY}/memories/{_TOPIC}\.md", re.ASCII)),
    ("git-file", re.compile(r"\.gitattributes|\.gitignore")),
)
"""Every path a sync may write, and what it is (each pattern matches a whole root-relative POSIX path)."""


def memory_kind(path: str) -> MemoryKind | None:
    """What the root-relative POSIX ``path`` is: ``index``, ``note``, ``git-file``; None when it is not memory
    (a remote may not write it, and a sync never does)."""
    return next((kind for kind, pattern in MEMORY_PATHS if pattern.fullmatch(path)), None)
