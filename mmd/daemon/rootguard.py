"""The root guard: notices that the daemon's root or its lock file was removed or replaced.

Owns: the identities (device, inode) of the root folder and of ``.mmd/lock`` taken
when the lock was acquired, the check that they still name the same files, and the
one sticky verdict once they do not. After ``rm -rf ROOT`` (or a root swapped for
another folder) the flock the daemon holds guards nothing: a second daemon could
lock a fresh ``.mmd/lock`` there. So from then on the daemon refuses every write
(``E_UNAVAILABLE``: restart mmd), keeps serving its last snapshot to readers, says so
in ``daemon.status`` and the log, and never recreates the root it lost.
Never writes, never touches a socket.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from mmd.wire.protocol import DaemonCode, DaemonError

__all__ = ["RootGuard"]

log = logging.getLogger("mmd.daemon")


def _identity(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


class RootGuard:
    """The root and lock file as they were when the daemon locked the root.

    Args:
        root: the memory root (it exists and is locked).
        lock_file: ``<root>/.mmd/lock``, held by this process.

    Raises:
        OSError: if either cannot be stat'ed now.
    """

    def __init__(self, root: Path, lock_file: Path) -> None:
        self.paths = (root, lock_file)
        self._identities = tuple(_identity(p) for p in self.paths)
        self.lost: str | None = None
        """Why the root counts as lost (a sentence), or None while it is the one locked."""

    def check(self) -> str | None:
        """Stat the root and the lock file again; the reason the root is lost, or None (logged once).

        A stat that fails for another reason than absence (EACCES, EIO) does not count as lost.
        """
        if self.lost is not None:
            return self.lost
        for path, held in zip(self.paths, self._identities, strict=True):
            try:
                now = _identity(path)
            except FileNotFoundError:
                self.lost = f"{path} was removed while the daemon ran"
            except OSError:
                continue
            else:
                if now != held:
                    self.lost = f"{path} was replaced by another file while the daemon ran"
            if self.lost is not None:
                log.error("daemon.root_lost reason=%r: writes are refused until mmd is restarted", self.lost)
                return self.lost
        return None

    def require(self) -> None:
        """Pass while the root is the one locked.

        Raises:
            DaemonError(E_UNAVAILABLE): once the root or lock file is gone or replaced; ``data.rootLost``
                says why.
        """
        lost = self.check()
        if lost is not None:
            raise DaemonError(DaemonCode.E_UNAVAILABLE, f"writes are refused: {lost}; restart mmd (it will "
                                                        f"not recreate a root it lost)", rootLost=lost)
