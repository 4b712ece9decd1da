"""Health reports of a memory root that a write cannot prevent (issues 11 and 15).

Owns: finding folders and files others may write (a memory that others can write is a
prompt-injection channel), topics that differ only by case (one file on case-insensitive
filesystems; roots move between systems), and temp files of crashed writers
(``.<name>.<pid>.<n>.<hex>.tmp``, see :func:`.rootfs.temp_name`), with the removal of
those whose writer is gone. The daemon calls :func:`remove_stale_temp_files` at start;
``status`` and ``doctor`` report the rest.

Never: changes a mode, renames a note, or removes anything but our own dead temp files;
never follows a symlink below the root.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

from .model import IndexEntry
from .paths import DETAIL_DIR, INDEX_NAME, STATE_DIR

__all__ = [
    "LooseMode",
    "StaleTemp",
    "case_twins",
    "loose_modes",
    "remove_stale_temp_files",
    "stale_temp_files",
]

TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.(?P<n>\d+)\.(?P<hex>[0-9a-f]+)\.tmp\Z")
"""A temp file of :func:`.rootfs.temp_name`: the target's name and the writer's pid."""


class LooseMode(TypedDict):
    """A path others may write: ``path`` relative to the root (``.`` for the root),
    ``mode`` as octal text (``"0o777"``), ``writable_by`` ``group`` | ``world`` | ``group+world``."""

    path: str
    mode: str
    writable_by: str


class StaleTemp(TypedDict):
    """A temp file: ``path`` relative to the root, its writer's ``pid``, and whether that writer is ``alive``."""

    path: str
    pid: int
    alive: bool


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        return list(it)
    return []


def _loose(rel: str, mode: int) -> LooseMode | None:
    who = [name for name, bit in (("group", stat.S_IWGRP), ("world", stat.S_IWOTH)) if mode & bit]
    if not who:
        return None
    return {"path": rel, "mode": oct(stat.S_IMODE(mode)), "writable_by": "+".join(who)}


def loose_modes(root: Path) -> list[LooseMode]:
    """Group- or world-writable paths among the root, ``memories/`` (and notes below it),
    ``.mmd/`` and ``MEMORY.md``, in that order; symlinks are skipped (their mode means nothing).

    Returns:
        One :class:`LooseMode` per such path; empty when all are private.
    """
    out: list[LooseMode] = []

    def check(rel: str, path: Path) -> os.stat_result | None:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if not stat.S_ISLNK(st.st_mode):
            found = _loose(rel, st.st_mode)
            if found is not None:
                out.append(found)
        return st

    check(".", root)
    check(STATE_DIR, root / STATE_DIR)
    check(INDEX_NAME, root / INDEX_NAME)
    pending = [DETAIL_DIR] if (st := check(DETAIL_DIR, root / DETAIL_DIR)) and stat.S_ISDIR(st.st_mode) else []
    while pending:
        rel = pending.pop()
        for item in sorted(_entries(root / rel), key=lambda e: e.name):
            child = f"{rel}/{item.name}"
            st = check(child, root / child)
            if st is not None and stat.S_ISDIR(st.st_mode):
                pending.append(child)
    return out


def case_twins(root: Path, entries: Iterable[IndexEntry]) -> list[list[str]]:
    """Groups of topics that differ only by case, among index entries and ``memories/*.md`` names.

    Roots written elsewhere (another OS, git, a sync tool) may hold ``Deploy`` and
    ``deploy``; on a case-insensitive filesystem both are one file.

    Returns:
        Each group sorted, the groups sorted by their first topic; empty when none.
    """
    topics = {e.topic for e in entries}
    topics.update(item.name[:-3] for item in _entries(root / DETAIL_DIR)
                  if item.name.endswith(".md") and not item.name.startswith("."))
    groups: dict[str, set[str]] = {}
    for topic in topics:
        groups.setdefault(topic.lower(), set()).add(topic)
    return sorted((sorted(g) for g in groups.values() if len(g) > 1), key=lambda g: g[0])


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def stale_temp_files(root: Path) -> list[StaleTemp]:
    """Our temp files in the root, ``memories/`` (and folders below it) and ``.mmd/``, sorted by path.

    Returns:
        One :class:`StaleTemp` per file named like ``.<name>.<pid>.<n>.<hex>.tmp``.
    """
    out: list[StaleTemp] = []
    pending = ["", STATE_DIR, DETAIL_DIR]
    while pending:
        rel = pending.pop()
        for item in _entries(root / rel if rel else root):
            child = f"{rel}/{item.name}" if rel else item.name
            if rel.startswith(DETAIL_DIR) and item.is_dir(follow_symlinks=False):
                pending.append(child)
            match = TEMP_NAME.match(item.name)
            if match is not None and item.is_file(follow_symlinks=False):
                pid = int(match.group("pid"))
                out.append({"path": child, "pid": pid, "alive": _pid_alive(pid)})
    return sorted(out, key=lambda t: t["path"])


def remove_stale_temp_files(root: Path) -> list[str]:
    """Remove our temp files whose writer process is gone (a crashed writer's); keep live ones.

    Call it while holding the root's write lock (the daemon does, at start).

    Returns:
        The removed paths, relative to the root, sorted.
    """
    removed: list[str] = []
    for temp in stale_temp_files(root):
        if not temp["alive"]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(root / temp["path"])
                removed.append(temp["path"])
    return removed
