"""The revision high-water mark of a root: revision numbers grow for the life of the root.

Owns: ``<root>/.mmd/revision``, one decimal integer: no revision number at or below it
may be handed out again, by any daemon or any direct-mode writer. A daemon starts
numbering above it and reserves numbers ahead in blocks (one durable write per block);
a direct-mode write (``mmctl`` without a daemon) advances it by one. Both do so while
they hold the root's write lock, so no two writers race on it. So ``ifRevision``
never passes wrongly after a restart: a revision a client saw is never current again
unless nothing was written since. Never takes the lock itself; never reads notes.
"""

from __future__ import annotations

import os
from pathlib import Path

from .durable import atomic_write
from .paths import STATE_DIR

__all__ = ["MARK_NAME", "advance_mark", "bump_mark", "mark_path", "read_mark"]

MARK_NAME = "revision"
"""The mark's file name inside ``.mmd/``."""


def mark_path(root: Path) -> Path:
    """``<root>/.mmd/revision``."""
    return root / STATE_DIR / MARK_NAME


def read_mark(root: Path) -> int:
    """The highest revision number handed out or reserved for ``root``; 0 when none was recorded (or the
    file is unreadable or holds no non-negative integer: numbering then starts as for a new root)."""
    try:
        text = mark_path(root).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return 0
    return int(text) if text.isdigit() and len(text) <= 18 else 0


def advance_mark(root: Path, at_least: int) -> int:
    """Raise the mark to ``at_least`` (never lower it), durably; the mark now. Call with the root's lock held.

    Creates ``.mmd/`` (0700) inside an existing root, never the root itself.

    Raises:
        MMError(E_IO) / OSError: if the mark cannot be written (the root is gone, the disk is full).
    """
    current = read_mark(root)
    if at_least <= current:
        return current
    (root / STATE_DIR).mkdir(mode=0o700, exist_ok=True)
    atomic_write(mark_path(root), f"{at_least}\n".encode("ascii"), mode=0o600)
    return at_least


def bump_mark(root: Path) -> int:
    """One more revision for a direct-mode write: the mark plus one, written durably. With the lock held.

    Raises:
        MMError(E_IO) / OSError: as :func:`advance_mark`.
    """
    if not os.path.isdir(root / STATE_DIR):
        return read_mark(root)
    return advance_mark(root, read_mark(root) + 1)
