"""Which search engine serves a query (mm v1 §8): the pure choice and the FTS5 probe.

Kept apart from :mod:`.search` so that loading a snapshot does not import the
search engines themselves (a one-shot ``mmctl read`` never searches).
"""

from __future__ import annotations

import functools

__all__ = ["choose_engine", "fts5_available"]


def choose_engine(requested: str, fts5_available: bool) -> str:
    """The engine for a requested mode (mm v1 §8): pure and deterministic.

    ``"scan"`` is never upgraded; any other mode (``"auto"``, ``"fts5"``, or an
    unknown one, which the reference treats like ``"auto"``) gives ``"fts5"``
    when FTS5 is available and ``"scan"`` otherwise.
    """
    if requested == "scan":
        return "scan"
    return "fts5" if fts5_available else "scan"


@functools.cache
def fts5_available() -> bool:
    """Whether Python's ``sqlite3`` has FTS5 (probed once per process)."""
    import sqlite3

    try:
        db = sqlite3.connect(":memory:")
    except sqlite3.Error:
        return False
    try:
        db.execute("CREATE VIRTUAL TABLE _mm_probe USING fts5(x)")
        return True
    except sqlite3.Error:
        return False
    finally:
        db.close()
