"""The history use-cases of the daemon's git part (``mmd --git``, issues 18 and 27): log, diff, revert, restore.

Owns: :class:`HistoryUses`, the part of :class:`~.gitsync.GitSync` that reads the user root's history and
writes from it, and :class:`RootHistory`, the same over a project root of the home (its view of the one
repository, :meth:`~.git.history.GitHistory.scoped`: its paths, topics and ``rN``). Reverts and restores
are new writes through the root's state under every budget, never a history rewrite; each waits for the
revisions installed before it to be committed. Never does: sync, commits, git plumbing (:mod:`.git`).

Threading: git reads run in ``asyncio.to_thread``; writes go through the state on the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mmd.core.errors import ErrorCode, MMError
from mmd.core.text import validate_topic
from mmd.wire.protocol import DaemonCode, DaemonError

if TYPE_CHECKING:
    from .git import GitHistory
    from .state import MemoryState

__all__ = ["HistoryUses", "RootHistory"]


class HistoryUses:
    """Log, diff, revert and restore over one root's history; mixed into :class:`~.gitsync.GitSync` (the user
    root's), and :class:`RootHistory`'s."""

    scope: str
    history: GitHistory
    state: MemoryState
    _labels: dict[tuple[str, str], str]
    """``{(scope, topic): revert | restore}`` while such a write is under way: its revision's commit cause."""

    async def _submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        raise NotImplementedError  # the git worker thread's queue (GitSync)

    async def committed(self) -> None:
        """Return once the revisions installed so far are committed (the worker runs its jobs in order)."""
        await self._submit(lambda: None)  # the jobs queued before it are done

    async def log(self, topic: str | None, limit: int) -> dict[str, Any]:
        """``{commits: [...]}`` newest first (see :meth:`~.git.history.GitHistory.log`), the latest
        revisions' commits included.

        Raises:
            MMError(E_INVALID): for a bad topic slug or a ``limit`` below 1.
        """
        if topic is not None:
            validate_topic(topic)
        if limit < 1:
            raise MMError(ErrorCode.E_INVALID, f"limit must be at least 1 (got {limit})")
        await self.committed()
        return {"commits": await asyncio.to_thread(self.history.log, topic, limit=limit)}

    async def diff(self, rev: str, other: str | None) -> dict[str, Any]:
        """What changed (see :meth:`~.git.history.GitHistory.diff`)."""
        await self.committed()
        return await asyncio.to_thread(self.history.diff, rev, other)

    async def revert(self, rev: str) -> dict[str, Any]:
        """Undo ``rev`` with new writes: ``{ok, rev, commit, results: [{topic, action, changedSince, outcome}]}``."""
        await self.committed()
        commit = await asyncio.to_thread(self.history.resolve, rev)
        plan = await asyncio.to_thread(self.history.revert_plan, commit)
        results = []
        for step in plan:
            results.append({**{k: step[k] for k in ("topic", "action", "changedSince")},
                            "outcome": await self._apply(step, "revert")})
        return {"ok": all(r["outcome"].get("ok", True) for r in results), "rev": rev, "commit": commit,
                "results": results, "revision": self.state.revision}

    async def restore(self, topic: str, at: str) -> dict[str, Any]:
        """``topic`` back as it was at ``at``: ``{ok, topic, at, commit, action: write, outcome}``. Raises
        DaemonError(E_NOT_FOUND) if ``topic`` did not exist at ``at``: a restore never deletes."""
        validate_topic(topic)
        await self.committed()
        commit = await asyncio.to_thread(self.history.resolve, at)
        note = await asyncio.to_thread(self.history.note_at, topic, commit)
        if note is None:
            now = self.state.current.note(topic) is not None
            fix = f"; `mmctl delete {topic}` removes it" if now else " and does not exist now"
            raise DaemonError(DaemonCode.E_NOT_FOUND, f"{topic} did not exist at {at} (commit {commit}){fix}")
        outcome = await self._apply({"topic": topic, "action": "write", "content": note["body"],
                                     "summary": note["summary"], "tags": note["tags"]}, "restore")
        return {"ok": bool(outcome.get("ok", True)), "topic": topic, "at": at, "commit": commit,
                "action": "write", "outcome": outcome, "revision": self.state.revision}

    async def _apply(self, step: dict[str, Any], label: str) -> dict[str, Any]:
        """One write or delete through the state (queued with the others'); its revision commits as ``label``."""
        self._labels[(self.scope, step["topic"])] = label
        try:
            if step["action"] == "delete":
                return await self.state.delete(step["topic"])
            return await self.state.write(step["topic"], step["content"], summary=step.get("summary") or None,
                                          tags=step.get("tags") or "", cause=label)
        finally:
            self._labels.pop((self.scope, step["topic"]), None)


class RootHistory(HistoryUses):
    """The history use-cases of a project root of the home.

    Args:
        scope: its key; ``state``: its memory state; ``history``: its view of the home's history.
        labels: the git part's commit causes under way (shared: its commits read them).
        submit: runs a call on the git worker thread (after the commits queued before it).
    """

    def __init__(self, scope: str, state: MemoryState, history: GitHistory, labels: dict[tuple[str, str], str],
                 submit: Callable[..., Awaitable[Any]]) -> None:
        self.scope, self.state, self.history, self._labels = scope, state, history, labels
        self._run = submit

    async def _submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await self._run(fn, *args)
