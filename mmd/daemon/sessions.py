"""The agent sessions of the daemon's memory state: the revision each one pinned, and its writes since.

Owns: :class:`Session` and the session table :class:`PinnedSessions` (open, find, re-pin, close,
expire) that :class:`.state.MemoryState` keeps: a session pins the revision current at
``memory.open`` until it closes, reloads or expires. Threading: the event loop's thread only.
Never: reads or writes the root.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mmd.core.snapshot import Snapshot
from mmd.wire.protocol import DaemonCode, DaemonError

__all__ = ["PinnedSessions", "Session"]


@dataclass(slots=True)
class Session:
    """An agent session: the snapshot it pinned and its writes since.

    Attributes:
        session_id: random URL-safe id.
        snapshot: the pinned revision.
        pending_writes: successful writes/deletes in this session since it pinned.
        last_used_s: ``time.monotonic()`` of the last request, seconds.
    """

    session_id: str
    snapshot: Snapshot
    pending_writes: int = 0
    last_used_s: float = field(default_factory=time.monotonic)


class PinnedSessions:
    """The open sessions of one memory state (``sessions``: by id), each pinned on a revision.

    The state that inherits it gives :attr:`current` (the revision a new session pins) and sets
    ``sessions`` (``{}``) and ``_monotonic`` (seconds, ``time.monotonic`` by default) in its ``__init__``.
    """

    sessions: dict[str, Session]
    _monotonic: Callable[[], float]

    @property
    def current(self) -> Snapshot:
        """The newest revision (the state's)."""
        raise NotImplementedError

    def open_session(self, session_id: str | None = None) -> Session:
        """Pin the current revision in a new session (``session_id``: its id in another root, :mod:`.home`)."""
        session = Session(session_id or secrets.token_urlsafe(12), self.current, last_used_s=self._monotonic())
        self.sessions[session.session_id] = session
        return session

    def session(self, session_id: Any) -> Session:
        """The live session ``session_id``, marked as used now.

        Raises:
            DaemonError(E_NO_SESSION): if it is unknown, closed or expired.
        """
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise DaemonError(DaemonCode.E_NO_SESSION,
                              f"no open session {session_id!r} (closed, expired or never opened)")
        session.last_used_s = self._monotonic()
        return session

    def snapshot_for(self, session_id: Any) -> Snapshot:
        """The session's pinned snapshot, or the current one when ``session_id`` is None.

        Raises:
            DaemonError(E_NO_SESSION): for an unknown session.
        """
        return self.current if session_id is None else self.session(session_id).snapshot

    def reload_session(self, session_id: Any) -> Session:
        """Re-pin a session on the current revision and reset its pending writes."""
        session = self.session(session_id)
        session.snapshot, session.pending_writes = self.current, 0
        return session

    def close_session(self, session_id: Any) -> Session:
        """Forget a session. Raises DaemonError(E_NO_SESSION) if it is not open."""
        session = self.session(session_id)
        del self.sessions[session.session_id]
        return session

    def expire_sessions(self, ttl_s: float) -> list[str]:
        """Close sessions idle for more than ``ttl_s`` seconds; their ids."""
        cutoff = self._monotonic() - ttl_s
        expired = [sid for sid, s in self.sessions.items() if s.last_used_s < cutoff]
        for sid in expired:
            del self.sessions[sid]
        return expired
