"""Agent sessions of the daemon: each pins the revision current at ``memory.open`` until it closes, reloads or expires.

Owns: :class:`Session` and :class:`SessionTable`, the session half of :class:`~.state.MemoryState` (it
mixes this in: ``sessions``, ``current`` and ``_monotonic`` are the state's). Threading: the event loop's
only. Never: touches a socket or the disk.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mmd.core.snapshot import Snapshot
from mmd.wire.protocol import DaemonCode, DaemonError

__all__ = ["Session", "SessionTable"]


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


class SessionTable:
    """The sessions of a memory state (mixed into :class:`~.state.MemoryState`)."""

    sessions: dict[str, Session]
    _monotonic: Callable[[], float]

    @property
    def current(self) -> Snapshot:
        raise NotImplementedError

    def open_session(self) -> Session:
        """Pin the current revision in a new session."""
        session = Session(secrets.token_urlsafe(12), self.current, last_used_s=self._monotonic())
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
