"""The version history's use-cases in the daemon (issue 29): ``memory.log`` and ``memory.restore`` without git.

Owns: :class:`VersionHistory` — the log of a topic's (or the root's) kept versions, shaped as the git
history's commits (:meth:`mmd.core.versions.Version.to_commit`), and a restore: the text a version holds
written back through the memory state under every budget (a new revision, never a history rewrite).
The versions themselves are kept by the core store (:mod:`mmd.core.versions`) on every write, merge and
delete, the daemon's and direct-mode ``mmctl``'s alike. Threading: SQLite reads run in a worker thread.
Never: touches a socket or git.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mmd.core.errors import ErrorCode, MMError
from mmd.core.text import validate_topic
from mmd.core.versions import restoring
from mmd.wire.protocol import DaemonCode, DaemonError

from .state import MemoryState

__all__ = ["VersionHistory"]


class VersionHistory:
    """The kept versions of one memory state's root."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    async def log(self, topic: str | None, limit: int) -> dict[str, Any]:
        """``{commits: [...]}`` newest first: one per kept version (of ``topic`` when given), ``commit`` ``v17``.

        Raises:
            MMError(E_INVALID): for a bad topic slug or a ``limit`` below 1. MMError(E_IO): an unreadable history.
        """
        if topic is not None:
            validate_topic(topic)
        if limit < 1:
            raise MMError(ErrorCode.E_INVALID, f"limit must be at least 1 (got {limit})")
        found = await asyncio.to_thread(self.state.store.versions.log, topic, limit)
        return {"commits": [v.to_commit() for v in found]}

    async def restore(self, topic: str, at: str) -> dict[str, Any]:
        """``topic`` written back as ``at`` (``r42`` or ``v17``) left it: ``{ok, topic, at, commit (the version),
        action: write, outcome, revision}``. A version a person wrote with ``--allow-secret`` or ``--allow-hidden``
        comes back with the same leave (recorded again); any other secret or hidden text is refused as a write's.

        Raises:
            MMError(E_INVALID): if ``at`` is neither ``rN`` nor ``vN``, or the topic is no slug.
            DaemonError(E_NOT_FOUND): if no version is kept at ``at`` (never written by then, or pruned; ``rN``
                past the root's revision), or the topic was deleted then (a restore never deletes).
            MMError(E_SECRET | E_IO): as the write.
        """
        validate_topic(topic)
        version = await asyncio.to_thread(self.state.store.versions.at, topic, at)
        try:
            write = restoring(version, topic, at, self.state.revision)
        except LookupError as missing:
            raise DaemonError(DaemonCode.E_NOT_FOUND, str(missing)) from None
        content = write.pop("content")
        outcome = await self.state.write(topic, content, **write)
        assert version is not None
        return {"ok": bool(outcome.get("ok")), "topic": topic, "at": at, "commit": version.ref, "action": "write",
                "outcome": outcome, "revision": self.state.revision}
