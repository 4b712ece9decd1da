"""Why the daemon could not start, in one sentence a person can act on (issue 10).

Owns: :func:`startup_failure`, which turns an error of startup's first steps
(creating the root, its ``.mmd/lock``, ``.mmd/state.db``) into
``cannot open the state database under ROOT/.mmd: read-only file system; …``
with the fix. SQLite says only "unable to open database file" or "attempt to
write a readonly database", so the file system is asked (``statvfs``) when the
error does not carry an errno.

Never: decides whether to retry or exit (``lifecycle`` does), or touches the root.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from mmd.core.errors import ErrorCode, MMError
from mmd.core.paths import STATE_DIR

__all__ = ["startup_failure"]

_FIX = {
    errno.EROFS: "mmd keeps its lock and state there: remount it read-write, or give a root on a writable "
                 "file system (--root)",
    errno.EACCES: "mmd keeps its lock and state there: give the user running mmd write access, or another --root",
    errno.ENOSPC: "free some space on that file system, then start mmd again",
}


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent."""
    return next((p for p in (path, *path.parents) if p.exists()), Path("/"))


def _errno(error: BaseException, where: Path) -> int | None:
    """The errno behind ``error``: its own, one named in an ``MMError(E_IO)`` message, else the file system's
    state (read-only, not writable) at ``where``."""
    if isinstance(error, OSError) and error.errno:
        return error.errno
    if isinstance(error, MMError) and error.code is ErrorCode.E_IO:
        for code in (errno.EROFS, errno.EACCES, errno.ENOSPC):
            if os.strerror(code) in error.message:
                return code
    if not isinstance(error, MMError | sqlite3.Error | OSError):
        return None
    existing = _existing(where)
    try:
        if os.statvfs(existing).f_flag & os.ST_RDONLY:
            return errno.EROFS
    except OSError:
        return None
    return None if os.access(existing, os.W_OK) else errno.EACCES


def startup_failure(error: BaseException, root: Path) -> str:
    """One sentence naming what could not be opened, under which path, why, and the fix.

    Args:
        error: what startup raised (``OSError``, ``MMError``, ``sqlite3.Error``, …).
        root: the memory root the daemon was to own.

    Returns:
        ``the memory root ROOT is a file, not a folder: …`` when it is one,
        ``cannot create the memory root ROOT: <reason>; <fix>`` when the root is missing,
        ``cannot open the state database under ROOT/.mmd: <reason>; <fix>`` for the lock or
        ``state.db``, or the error's own text for anything else (a socket, a bad MEMORY.md).
    """
    state = root / STATE_DIR
    if root.exists() and not root.is_dir():
        return f"the memory root {root} is a file, not a folder: give a folder (--root), or move the file away"
    code = _errno(error, state if root.exists() else root)
    text = str(error)
    touches_state = isinstance(error, sqlite3.Error) or STATE_DIR in text
    if code is None or not (touches_state or not root.exists()):
        return text
    reason = os.strerror(code)
    reason = reason[:1].lower() + reason[1:]
    fix = _FIX.get(code, "fix that, then start mmd again")
    if not root.exists():
        return f"cannot create the memory root {root}: {reason}; {fix}"
    return f"cannot open the state database under {state}: {reason}; {fix}"
