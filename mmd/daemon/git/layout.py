"""Which paths of the memory home's repository are memory, and which root each belongs to (issues 26, 27).

Owns: :func:`memory_kind` over :data:`MEMORY_PATHS` — ``MEMORY.md``, ``memories/<topic>.md``, the same two
in each project root of the memory home (``projects/<key>/…``, ``docs/projects.md``), and mmd's own
``.gitattributes`` and ``.gitignore``. A layout that adds memory files adds its rows here, and only here.
And the map from a repository path to its root's *scope* (``user``, or a project key: :func:`split`,
:func:`prefix`, :func:`sub_tree`, :func:`by_scope`, :func:`scopes_of`): the home is ONE repository at the user
root, each project root the folder ``projects/<key>/`` of it. Never does: git, files, or the checks themselves
(:mod:`.contain`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal, TypeVar

from mmd.core.projects import KEY_REGEX, PROJECTS_DIR
from mmd.core.text import TOPIC_MAX_LENGTH

__all__ = ["MEMORY_PATHS", "PROJECT_KEY", "USER_SCOPE", "MemoryKind", "by_scope", "memory_kind", "prefix",
           "scoped_topic", "scopes_of", "split", "split_topic", "sub_tree"]

MemoryKind = Literal["index", "note", "git-file"]
"""``index``: a root's MEMORY.md; ``note``: a detail note; ``git-file``: ``.gitattributes`` / ``.gitignore``."""

USER_SCOPE = "user"
"""The user root's scope (the repository's top level); a project root's is its key."""

_TOPIC = rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{TOPIC_MAX_LENGTH - 1}}}"
PROJECT_KEY = KEY_REGEX
"""A project root's key (``docs/projects.md``, :data:`mmd.core.projects.KEY_REGEX`), as a regular expression."""
_KEY = re.compile(PROJECT_KEY, re.ASCII)

MEMORY_PATHS: tuple[tuple[MemoryKind, re.Pattern[str]], ...] = (
    ("index", re.compile(r"MEMORY\.md")),
    ("note", re.compile(rf"memories/{_TOPIC}\.md", re.ASCII)),
    ("index", re.compile(rf"{PROJECTS_DIR}/{PROJECT_KEY}/MEMORY\.md", re.ASCII)),
    ("note", re.compile(rf"{PROJECTS_DIR}/{PROJECT_KEY}/memories/{_TOPIC}\.md", re.ASCII)),
    ("git-file", re.compile(r"\.gitattributes|\.gitignore")),
)
"""Every path a sync may write, and what it is (each pattern matches a whole root-relative POSIX path)."""

T = TypeVar("T")


def memory_kind(path: str) -> MemoryKind | None:
    """What the root-relative POSIX ``path`` is: ``index``, ``note``, ``git-file``; None when it is not memory
    (a remote may not write it, and a sync never does)."""
    return next((kind for kind, pattern in MEMORY_PATHS if pattern.fullmatch(path)), None)


def prefix(scope: str) -> str:
    """Where the root of ``scope`` lives in the repository: ``""`` for the user root, ``projects/<key>/``."""
    return "" if scope == USER_SCOPE else f"{PROJECTS_DIR}/{scope}/"


def split(path: str) -> tuple[str, str]:
    """``(scope, path inside that root)`` of a repository path: ``projects/<key>/<rest>`` (a well-formed key, a
    non-empty rest) is the project root ``key``'s; every other path is the user root's."""
    head, sep, rest = path.partition("/")
    if sep and head == PROJECTS_DIR:
        key, sep, inner = rest.partition("/")
        if sep and inner and _KEY.fullmatch(key):
            return key, inner
    return USER_SCOPE, path


def sub_tree(tree: Mapping[str, T], scope: str) -> dict[str, T]:
    """The files of ``tree`` (``{repository path: value}``) in the root of ``scope``, by root-relative path."""
    out: dict[str, T] = {}
    for path, value in tree.items():
        owner, inner = split(path)
        if owner == scope:
            out[inner] = value
    return out


def by_scope(tree: Mapping[str, T]) -> dict[str, dict[str, T]]:
    """``tree`` (``{repository path: value}``) split into its roots: ``{scope: {root-relative path: value}}``."""
    out: dict[str, dict[str, T]] = {}
    for path, value in tree.items():
        scope, inner = split(path)
        out.setdefault(scope, {})[inner] = value
    return out


def scopes_of(paths: Iterable[str]) -> list[str]:
    """The scopes ``paths`` touch: the user root first (when it does), then project keys sorted."""
    found = {split(path)[0] for path in paths}
    return ([USER_SCOPE] if USER_SCOPE in found else []) + sorted(found - {USER_SCOPE})


def scoped_topic(scope: str, topic: str) -> str:
    """A topic as the home's commits name it: ``deploy`` in the user root, ``api-3f2a1b9c/deploy`` in a project's."""
    return topic if scope == USER_SCOPE else f"{scope}/{topic}"


def split_topic(named: str) -> tuple[str, str] | None:
    """``(scope, topic)`` of a name :func:`scoped_topic` made; None when its key part is no project key."""
    key, sep, topic = named.rpartition("/")
    if not sep:
        return USER_SCOPE, named
    return (key, topic) if _KEY.fullmatch(key) else None
