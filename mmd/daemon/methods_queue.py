"""The review queue's and the git history's RPC handlers (a mixin of :class:`~.methods.Methods`).

The use-cases are in :mod:`.review` and :mod:`.gitsync`; these handlers check nothing the wire did not and
publish ``queue/decided`` after each decision. Never touches a socket.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mmd.core.errors import ErrorCode, MMError
from mmd.wire import methods as wire
from mmd.wire.events import QUEUE_DECIDED
from mmd.wire.protocol import CandidateJson, DaemonCode, DaemonError, QueueAcceptResult, QueueListResult

from .githistory import HistoryUses
from .handling import handles
from .history import VersionHistory
from .review import Review

if TYPE_CHECKING:
    from .gitsync import GitSync
    from .home import Home, Root

__all__ = ["QueueMethods"]


class QueueMethods:
    """``queue.*`` and ``memory.log|diff|revert|restore|sync``, over :attr:`review` and :attr:`git`."""

    review: Review
    git: GitSync | None
    home: Home
    _publish: Callable[[str, dict[str, Any]], Any]

    @handles(wire.QUEUE_LIST)
    async def queue_list(self, p: dict[str, Any]) -> QueueListResult:
        """``queue.list {status?, limit?, offset?, all?, minScore?, project?, agent?, session?}`` → ``{candidates,
        total, pending, offset, limit}``; pending ones highest score first; hidden ones only with ``all`` or
        ``minScore``.

        Raises:
            DaemonError(E_INVALID | E_UNAVAILABLE): as :meth:`.review.Review.page`.
        """
        return await self.review.page(p.get("status", "pending"), limit=p.get("limit", 100),
                                      offset=p.get("offset", 0), hidden=bool(p.get("all")),
                                      min_score=p.get("minScore"), project=p.get("project"), agent=p.get("agent"),
                                      session=p.get("session"), first=p.get("first"))

    @handles(wire.QUEUE_GET)
    async def queue_get(self, p: dict[str, Any]) -> CandidateJson:
        """``queue.get {id}`` → the candidate.

        Raises:
            DaemonError(E_UNAVAILABLE | E_INVALID | E_NOT_FOUND): as :meth:`.review.Review.get`.
        """
        return await self.review.get(p["id"])

    @handles(wire.QUEUE_ACCEPT)
    async def queue_accept(self, p: dict[str, Any]) -> QueueAcceptResult | dict[str, Any]:
        """``queue.accept {id, topic?, into?, summary?, tags?, content?, ifRevision?, replace?, flagged?}`` → ``{ok,
        candidate, write}``; with a list of ids → ``{ok, results: [{id, ok, candidate?, write?, error?}]}``, each
        reported, a flagged one among several not accepted unless ``flagged`` (:meth:`.review.Review.refuse_flagged`).

        Raises:
            DaemonError(E_INVALID | E_NOT_FOUND | E_DECIDED | E_EXISTS | E_CONFLICT), MMError: as
            :meth:`.review.Review.accept` (for one id; a list reports them per id).
        """
        bulk = isinstance(p["id"], list) and len(p["id"]) > 1 and not p.get("flagged")

        async def one(raw: int | str) -> QueueAcceptResult:
            if bulk:
                await self.review.refuse_flagged(raw)
            result = await self.review.accept(raw, topic=p.get("topic"), content=p.get("content"),
                                              into=p.get("into"), summary=p.get("summary"), tags=p.get("tags"),
                                              if_revision=p.get("ifRevision"), replace=bool(p.get("replace")),
                                              project=p.get("project"))
            if result["ok"]:
                self._decided(result["candidate"])
            return result

        if isinstance(p["id"], list):
            return await self.review.decide_many(p["id"], one)
        return await one(p["id"])

    @handles(wire.QUEUE_REJECT)
    async def queue_reject(self, p: dict[str, Any]) -> dict[str, Any]:
        """``queue.reject {id, reason?}`` → ``{ok: true, candidate}``; rejecting a rejected candidate is a no-op.
        With a list of ids, or ``below`` (every pending candidate scoring below it) → ``{ok, results}``.

        Raises:
            DaemonError(E_INVALID | E_NOT_FOUND | E_DECIDED): as :meth:`.review.Review.reject`; E_INVALID
            also for neither or both of ``id`` and ``below``.
        """
        raw, below = p.get("id"), p.get("below")
        if (raw is None) == (below is None):
            raise DaemonError(ErrorCode.E_INVALID, "queue.reject takes either id (one or a list) or below")

        async def one(cid: int | str) -> CandidateJson:
            rejected = await self.review.reject(cid, reason=p.get("reason"))
            self._decided(rejected)
            return rejected

        if below is not None:
            ids = await self.review.below(below)
            return await self.review.decide_many(ids, one) if ids else {"ok": True, "results": []}
        if isinstance(raw, list):
            return await self.review.decide_many(raw, one)
        return {"ok": True, "candidate": await one(p["id"])}

    @handles(wire.QUEUE_UNDO)
    async def queue_undo(self, p: dict[str, Any]) -> dict[str, Any]:
        """``queue.undo {id}`` → ``{ok: true, candidate, reverted, revision?}``: pending again, the note reverted.

        Raises:
            DaemonError(E_INVALID | E_NOT_FOUND | E_CONFLICT | E_UNAVAILABLE), MMError: as
            :meth:`.review.Review.undo`.
        """
        undone = await self.review.undo(p["id"])
        self._decided(undone["candidate"])
        return undone

    def _decided(self, cand: CandidateJson) -> None:
        """Publish ``queue/decided`` for the candidate's new status (every surface sees decisions live)."""
        event: dict[str, Any] = {"id": cand["id"], "status": cand["status"], "queuePending": self.review.pending}
        if cand.get("written"):
            event["topic"] = cand["written"]["topic"]
        self._publish(QUEUE_DECIDED, event)

    # --- the git history and sync (issue 18; the use-cases are in .gitsync) -------------------------

    def _git(self) -> GitSync:
        if self.git is None:
            raise DaemonError(DaemonCode.E_UNAVAILABLE, "this daemon keeps no git history: start it with --git "
                              "(or [git] enabled = true)")
        return self.git

    def _root(self, p: dict[str, Any]) -> Root:
        """The root of a history request's scope (the user root for a project whose root does not exist yet)."""
        scoped = self.home.resolve(p)
        return scoped.root if scoped.root is not None else self.home.user

    def _history(self, p: dict[str, Any]) -> HistoryUses | VersionHistory:
        """The history of the scope's root: with ``--git`` its commits (every root of the home is in the one
        repository), else, and for a root committed with its project (``<repo>/.mm``), its kept versions."""
        root = self._root(p)
        if self.git is not None and root not in self.home.outside:
            return self.git.history_of(root)
        return VersionHistory(root.state)

    def _git_of(self, p: dict[str, Any]) -> HistoryUses:
        """The git history of the scope's root, for what only git knows (diff, revert).

        Raises:
            DaemonError(E_UNAVAILABLE): without ``--git``, or for a root committed with its project.
        """
        history = self._history(p)
        if isinstance(history, VersionHistory):
            self._git()
            raise DaemonError(DaemonCode.E_UNAVAILABLE, "this root is committed with its project (<repo>/.mm): "
                              "its history is the project's own git (git log there); mmd keeps its versions "
                              "(mmctl log, mmctl restore)")
        return history

    @handles(wire.MEMORY_LOG)
    async def log(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.log {topic?, limit?, project?}`` → ``{commits}`` newest first: with ``--git`` the commits of the
        scope's root (a project root's topics and ``rN`` its own), else its kept versions.

        Raises:
            MMError(E_INVALID): for a bad topic slug. MMError(E_IO): an unreadable version history.
        """
        return await self._history(p).log(p.get("topic"), p.get("limit", 100))

    @handles(wire.MEMORY_DIFF)
    async def diff(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.diff {rev, other?, project?}`` → ``{from, to, topics, patch}`` of the scope's root.

        Raises:
            DaemonError(E_UNAVAILABLE): without ``--git``. MMError(E_INVALID): if a REV names nothing.
        """
        return await self._git_of(p).diff(p["rev"], p.get("other"))

    @handles(wire.MEMORY_REVERT)
    async def revert(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.revert {rev, project?}`` → ``{ok, rev, commit, results, revision}``: new writes in the scope's
        root, never a rewrite.

        Raises:
            DaemonError(E_UNAVAILABLE): without ``--git``. MMError(E_INVALID): if ``rev`` names nothing.
        """
        return await self._git_of(p).revert(p["rev"])

    @handles(wire.MEMORY_RESTORE)
    async def restore(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.restore {topic, at, project?}`` → ``{ok, topic, at, commit, action, outcome, revision}``: with
        ``--git`` from the git history of the scope's root, else (or when git names no such revision) from its
        kept versions (``r42``, ``v17``).

        Raises:
            DaemonError(E_NOT_FOUND): a topic absent at ``at``, or no version kept there.
            MMError(E_INVALID): if ``at`` names nothing or the topic is not a slug.
        """
        history = self._history(p)
        if isinstance(history, HistoryUses):
            try:
                return await history.restore(p["topic"], p["at"])
            except MMError as error:
                if error.code is not ErrorCode.E_INVALID or p["at"][:1] not in ("r", "v"):
                    raise  # a bad topic, or a commit-ish git does not know: the versions know none either
            history = VersionHistory(history.state)
        return await history.restore(p["topic"], p["at"])

    @handles(wire.MEMORY_SYNC)
    async def sync(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.sync {}`` → what the sync did, once commit, fetch, merge, push and the reload are done.

        Raises:
            DaemonError(E_UNAVAILABLE): without ``--git`` (a failed sync is a result with ``ok: false``).
        """
        return await self._git().sync_now()
