"""The RPC method table of the daemon: one handler per method of :data:`mmd.wire.methods.METHODS`.

Each handler is bound to its method by the :func:`handles` decorator, and the
table is checked when this module is imported: every method of the wire has
exactly one handler, and a handler is a plain function exactly when its method
is *inline* (a cheap read of an immutable snapshot, answered on the loop) and a
coroutine otherwise (writes go through the state's lock, costly reads run in a
worker thread). Handlers take the checked params (camelCase, like the core's
JSON) and return JSON values; the review queue's use-cases live in
:mod:`.review`. Handlers raise :class:`~mmd.wire.protocol.DaemonError` or
``MMError``; :func:`~.rpc.error_object` turns them into JSON-RPC errors. This
module never touches a socket.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mmd import __version__
from mmd.core.clock import parse_iso_ms
from mmd.core.errors import ErrorCode, MMError
from mmd.core.memory import nudge_report, search_snapshot
from mmd.core.snapshot import Snapshot
from mmd.core.text import validate_topic
from mmd.wire import methods as wire
from mmd.wire.events import MEMORY_NUDGE, QUEUE_DECIDED
from mmd.wire.methods import METHODS, Method
from mmd.wire.protocol import CandidateJson, DaemonCode, DaemonError, OpenResult, QueueAcceptResult, QueueListResult

from .history import VersionHistory
from .inject import Injector
from .offload import BoundedPool
from .review import Review
from .state import MemoryState

if TYPE_CHECKING:
    from .gitsync import GitSync

__all__ = ["Methods", "handles"]

F = TypeVar("F", bound=Callable[..., Any])
_HANDLER_ATTR = "__mmd_method__"


def handles(method: Method) -> Callable[[F], F]:
    """Mark a :class:`Methods` function as the handler of ``method`` (checked at import, see :func:`_bind`)."""

    def mark(fn: F) -> F:
        setattr(fn, _HANDLER_ATTR, method.name)
        return fn

    return mark


class Methods:
    """The method table of one daemon.

    Args:
        state: the memory state.
        status: returns the daemon-level part of ``daemon.status`` (pid, endpoints, watcher…).
        publish: sends an event (``topic, payload``).
        review: the review queue's use-cases (``queue.*`` answer ``E_UNAVAILABLE`` when ingestion is off).
        injector: the injection use-cases (``memory.inject``, ``memory.injected``, ``memory.due``).
        digests: the bounded pool ``memory.digest`` runs on (never the default executor writes use);
            a fresh one when None.
        git: the git part (``--git``); without it ``memory.log`` and ``memory.restore`` read the version
            history (:class:`.history.VersionHistory`) and the other history and sync methods answer ``E_UNAVAILABLE``.
    """

    def __init__(self, state: MemoryState, status: Callable[[], dict[str, Any]],
                 publish: Callable[[str, dict[str, Any]], Any], review: Review, injector: Injector,
                 digests: BoundedPool | None = None, git: GitSync | None = None) -> None:
        self.state = state
        self.git = git
        self.digests = digests or BoundedPool("digest")
        self._status = status
        self._publish = publish
        self.review = review
        self.injector = injector
        self.history = VersionHistory(state)
        self.inline: dict[str, Callable[[dict[str, Any]], Any]] = {
            name: getattr(self, attr) for name, attr in _HANDLERS.items() if METHODS[name].inline}
        """``{method: handler}`` answered on the loop."""
        self.awaited: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            name: getattr(self, attr) for name, attr in _HANDLERS.items() if not METHODS[name].inline}
        """``{method: coroutine handler}`` run as tasks."""

    # --- sessions -------------------------------------------------------------------------------

    @handles(wire.MEMORY_OPEN)
    def open(self, p: dict[str, Any]) -> OpenResult:
        """``memory.open {}`` → ``{sessionId, revision, loadedAt}``: pin the current revision."""
        session = self.state.open_session()
        return {"sessionId": session.session_id, "revision": session.snapshot.revision,
                "loadedAt": session.snapshot.loaded_at}

    @handles(wire.MEMORY_RELOAD)
    def reload(self, p: dict[str, Any]) -> OpenResult:
        """``memory.reload {sessionId}`` → as ``memory.open``: re-pin the session on the current revision."""
        session = self.state.reload_session(p["sessionId"])
        return {"sessionId": session.session_id, "revision": session.snapshot.revision,
                "loadedAt": session.snapshot.loaded_at}

    @handles(wire.MEMORY_CLOSE)
    def close(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.close {sessionId}`` → ``{ok, sessionId, pendingWrites}``; publishes a ``session-end`` nudge."""
        session = self.state.close_session(p["sessionId"])
        report = nudge_report(self.state.current, session.pending_writes, self.state.now_iso())
        self._publish(MEMORY_NUDGE, {**report, "reason": "session-end", "queuePending": self.review.pending,
                                       "sessionId": session.session_id, "due": self.injector.due_now()})
        return {"ok": True, "sessionId": session.session_id, "pendingWrites": session.pending_writes}

    # --- reads ----------------------------------------------------------------------------------

    @handles(wire.MEMORY_INDEX)
    def index(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.index {sessionId?}`` → the index view of the session's (or the latest) revision.

        Shape: ``{memoryId, root, loadedAt, lineCount, byteCount, overBudget, lineCap,
        byteCap, entries, revision}``.
        """
        snap = self.state.snapshot_for(p.get("sessionId"))
        o = self.state.options
        return {"memoryId": snap.memory_id, "root": str(snap.root), "loadedAt": snap.loaded_at,
                "lineCount": snap.index_line_count, "byteCount": snap.index_byte_count,
                "overBudget": snap.index_over_budget, "lineCap": o.index_lines, "byteCap": o.index_bytes,
                "entries": [e.to_json() for e in snap.entries], "revision": snap.revision}

    @handles(wire.MEMORY_READ)
    def read(self, p: dict[str, Any]) -> dict[str, Any] | None:
        """``memory.read {topic?, sessionId?}`` → the note's JSON or null; without a topic, the index view.

        Raises:
            MMError(E_INVALID): for a bad topic slug.
        """
        if "topic" not in p:
            return self.index(p)
        topic = validate_topic(p["topic"])
        note = self.state.snapshot_for(p.get("sessionId")).note(topic)
        return note.to_json() if note else None

    @handles(wire.MEMORY_LIST)
    def list(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.list {sessionId?}`` → ``{notes: [note JSON, …]}`` sorted by topic."""
        snap = self.state.snapshot_for(p.get("sessionId"))
        return {"notes": [n.to_json() for n in sorted(snap.notes, key=lambda n: n.topic)]}

    @handles(wire.MEMORY_SEARCH)
    async def search(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.search {query, mode?, limit?, sessionId?}`` → the core search result (mm v1 §8).

        Runs in a worker thread: the first search of a revision builds its index.

        Raises:
            MMError(E_INVALID): for a blank query or a limit below 1.
        """
        snap = self.state.snapshot_for(p.get("sessionId"))
        return await asyncio.to_thread(search_snapshot, snap, p["query"], mode=p.get("mode"),
                                       limit=p.get("limit"), options=self.state.options,
                                       fts5_available=self.state.fts5_available)

    @handles(wire.MEMORY_BUDGET)
    async def budget(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.budget {sessionId?}`` → the live budget report, as the core's ``Memory.budget``.

        Raises:
            MMError(E_PARSE | E_IO): if the live MEMORY.md cannot be read.
        """
        sid = p.get("sessionId")
        snap = self.state.snapshot_for(sid)
        pending = self.state.session(sid).pending_writes if sid is not None else 0
        live = await asyncio.to_thread(self.state.store.budget)
        age_ms = int((parse_iso_ms(self.state.now_iso()) - parse_iso_ms(snap.loaded_at)).total_seconds() * 1000)
        return {"root": str(snap.root), "memoryId": snap.memory_id, "loadedAt": snap.loaded_at,
                "snapshotAgeMs": age_ms, "pendingWrites": pending, **live,
                "search": {"configuredMode": self.state.options.search_mode, "engine": snap.engine}}

    @handles(wire.MEMORY_NUDGE)
    def nudge(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.nudge {sessionId?}`` → the mm nudge report for the session (or the latest revision)."""
        sid = p.get("sessionId")
        snap: Snapshot = self.state.snapshot_for(sid)
        pending = self.state.session(sid).pending_writes if sid is not None else 0
        return nudge_report(snap, pending, self.state.now_iso())

    # --- writes ---------------------------------------------------------------------------------

    @handles(wire.MEMORY_WRITE)
    async def write(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.write {topic, content, summary?, tags?, budget?, reviewAfter?, allowSecret?, allowHidden?,
        ifRevision?, sessionId?}``.

        ``reviewAfter`` is ``YYYY-MM-DD`` or a span from today (``10d``, ``2w``, ``3m``, ``1y``), stored as
        the entry line ``- **review-after:** YYYY-MM-DD``; ``""`` removes the date. ``allowSecret`` /
        ``allowHidden``: a person's own write lets a secret / hidden text through, recorded (``mmctl write
        --allow-secret``; the MCP server never sends them).

        Returns:
            The core write outcome plus ``revision`` (and ``pendingWrites`` in a
            session); an over-budget write is ``{ok: false, …}``, not an error.

        Raises:
            DaemonError(E_CONFLICT): if ``ifRevision`` is not current (``data.revision`` is).
            DaemonError(E_NO_SESSION): for an unknown session.
            MMError(E_INVALID | E_SECRET | E_PARSE | E_IO): as the core's write (a prose ``reviewAfter`` is E_INVALID,
                hidden text too; a secret is E_SECRET).
        """
        sid = p.get("sessionId")
        if sid is not None:
            self.state.session(sid)
        return await self.state.write(p["topic"], p["content"], if_revision=p.get("ifRevision"), session_id=sid,
                                      summary=p.get("summary"), budget=p.get("budget"), tags=p.get("tags"),
                                      review_after=p.get("reviewAfter"), **_allow(p))

    @handles(wire.MEMORY_DELETE)
    async def delete(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.delete {topic, ifRevision?, sessionId?}`` → ``{ok, removed, topic, usage, revision}``.

        Raises:
            DaemonError(E_CONFLICT | E_NO_SESSION), MMError(E_INVALID | E_PARSE | E_IO): as ``memory.write``.
        """
        sid = p.get("sessionId")
        if sid is not None:
            self.state.session(sid)
        return await self.state.delete(p["topic"], if_revision=p.get("ifRevision"), session_id=sid)

    @handles(wire.MEMORY_DIGEST)
    async def digest(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.digest {text?, file?, maxItems?, topicHint?}`` → the core digest result; never writes.

        Runs on its own bounded pool (:class:`~.offload.BoundedPool`): only regular files are read
        (opened non-blocking, at most ``MAX_SOURCE_BYTES``), and a slow one never holds up writes.

        Raises:
            MMError(E_DIGEST_SOURCE): if no source can be found or read, or ``file`` is not a regular file.
            DaemonError(E_BUSY | E_SHUTTING_DOWN): as :meth:`.offload.BoundedPool.run`.
        """
        from mmd.core import digest as digest_mod

        o = self.state.options
        file = os.path.expanduser(p["file"]) if "file" in p else None
        return await self.digests.run(
            digest_mod.digest, text=p.get("text"), file=file, max_items=p.get("maxItems"),
            topic_hint=p.get("topicHint"), default_write_budget=o.default_write_budget, dsh_home=o.dsh_home)

    # --- memory reaching the agent (the use-cases are in .inject) -----------------------------------

    @handles(wire.MEMORY_INJECT)
    async def inject(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.inject {client, maxBytes?, commit?, reset?}`` → ``{mode, text, added, updated, removed, unchanged,
        reminded, bytes, token, revision, committed}``.

        Raises:
            MMError(E_INVALID): as :meth:`.inject.Injector.inject`.
        """
        return await self.injector.inject(p["client"], max_bytes=p.get("maxBytes"), commit=bool(p.get("commit")),
                                          reset=bool(p.get("reset")))

    @handles(wire.MEMORY_INJECTED)
    async def injected(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.injected {client, token}`` → ``{ok: true, client, token}``.

        Raises:
            MMError(E_INVALID), DaemonError(E_NOT_FOUND): as :meth:`.inject.Injector.injected`.
        """
        return await self.injector.injected(p["client"], p["token"])

    @handles(wire.MEMORY_DUE)
    async def due(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.due {withinDays?}`` → ``{today, due, invalid}``.

        Raises:
            MMError(E_INVALID): for a negative ``withinDays``.
        """
        return await self.injector.due(p.get("withinDays"))

    # --- the review queue (the use-cases are in .review) ------------------------------------------

    @handles(wire.MEMORY_MERGE)
    async def merge(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.merge {topics, into, summary?, ifRevision?, sessionId?}`` → ``{ok, topic, uri, action, merged,
        usage, revision}`` or a budget failure ``{ok: false, code, …}``: the notes joined into ``into`` (under
        ``summary`` when given), the others deleted, one revision; allowed over the index caps when it shrinks
        the index (mm v1 §6).

        Raises:
            DaemonError(E_CONFLICT | E_NO_SESSION), MMError(E_INVALID | E_PARSE | E_IO): as ``memory.write``.
        """
        sid = p.get("sessionId")
        if sid is not None:
            self.state.session(sid)
        return await self.state.merge(p["topics"], p["into"], summary=p.get("summary"),
                                      if_revision=p.get("ifRevision"), session_id=sid, **_allow(p))

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
                                      session=p.get("session"))

    @handles(wire.QUEUE_GET)
    async def queue_get(self, p: dict[str, Any]) -> CandidateJson:
        """``queue.get {id}`` → the candidate.

        Raises:
            DaemonError(E_UNAVAILABLE | E_INVALID | E_NOT_FOUND): as :meth:`.review.Review.get`.
        """
        return await self.review.get(p["id"])

    @handles(wire.QUEUE_ACCEPT)
    async def queue_accept(self, p: dict[str, Any]) -> QueueAcceptResult | dict[str, Any]:
        """``queue.accept {id, topic?, into?, summary?, tags?, content?, ifRevision?, replace?}`` → ``{ok, candidate,
        write}``; with a list of ids → ``{ok, results: [{id, ok, candidate?, write?, error?}]}``, each reported.

        Raises:
            DaemonError(E_INVALID | E_NOT_FOUND | E_DECIDED | E_EXISTS | E_CONFLICT), MMError: as
            :meth:`.review.Review.accept` (for one id; a list reports them per id).
        """
        async def one(raw: int | str) -> QueueAcceptResult:
            result = await self.review.accept(raw, topic=p.get("topic"), content=p.get("content"),
                                              into=p.get("into"), summary=p.get("summary"), tags=p.get("tags"),
                                              if_revision=p.get("ifRevision"), replace=bool(p.get("replace")))
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

    @handles(wire.MEMORY_LOG)
    async def log(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.log {topic?, limit?}`` → ``{commits}`` newest first: git's with ``--git``, else the kept versions.

        Raises:
            MMError(E_INVALID): for a bad topic slug. MMError(E_IO): an unreadable version history.
        """
        if self.git is None:
            return await self.history.log(p.get("topic"), p.get("limit", 100))
        return await self.git.log(p.get("topic"), p.get("limit", 100))

    @handles(wire.MEMORY_DIFF)
    async def diff(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.diff {rev, other?}`` → ``{from, to, topics, patch}``.

        Raises:
            DaemonError(E_UNAVAILABLE): without ``--git``. MMError(E_INVALID): if a REV names nothing.
        """
        return await self._git().diff(p["rev"], p.get("other"))

    @handles(wire.MEMORY_REVERT)
    async def revert(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.revert {rev}`` → ``{ok, rev, commit, results, revision}``: new writes, never a rewrite.

        Raises:
            DaemonError(E_UNAVAILABLE): without ``--git``. MMError(E_INVALID): if ``rev`` names nothing.
        """
        return await self._git().revert(p["rev"])

    @handles(wire.MEMORY_RESTORE)
    async def restore(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.restore {topic, at}`` → ``{ok, topic, at, commit, action, outcome, revision}``: with ``--git`` from
        the git history, else (or when git names no such revision) from the kept versions (``r42``, ``v17``).

        Raises:
            DaemonError(E_NOT_FOUND): a topic absent at ``at``, or no version kept there.
            MMError(E_INVALID): if ``at`` names nothing or the topic is not a slug.
        """
        if self.git is not None:
            try:
                return await self.git.restore(p["topic"], p["at"])
            except MMError as error:
                if error.code is not ErrorCode.E_INVALID or p["at"][:1] not in ("r", "v"):
                    raise  # a bad topic, or a commit-ish git does not know: the versions know none either
        return await self.history.restore(p["topic"], p["at"])

    @handles(wire.MEMORY_SYNC)
    async def sync(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.sync {}`` → what the sync did, once commit, fetch, merge, push and the reload are done.

        Raises:
            DaemonError(E_UNAVAILABLE): without ``--git`` (a failed sync is a result with ``ok: false``).
        """
        return await self._git().sync_now()

    # --- daemon ---------------------------------------------------------------------------------

    @handles(wire.DAEMON_STATUS)
    def status(self, p: dict[str, Any]) -> dict[str, Any]:
        """``daemon.status {}`` → ``{version, pid, root, revision, sessions, startedAt, endpoints, queue, ingest,
        watcher, events, requests}``; ``queue`` counts candidates per status."""
        return {"version": __version__, "pid": os.getpid(), "root": str(self.state.options.root),
                "revision": self.state.revision, "sessions": len(self.state.sessions), **self._status()}


def _allow(p: dict[str, Any]) -> dict[str, bool]:
    """A write's or merge's ``allowSecret`` / ``allowHidden`` as the state's keyword arguments."""
    return {"allow_secret": bool(p.get("allowSecret")), "allow_hidden": bool(p.get("allowHidden"))}


def _bind(cls: type) -> dict[str, str]:
    """``{method name: handler attribute}`` of ``cls``, checked against the wire's method table.

    Raises:
        TypeError: if a method of ``METHODS`` has no handler or two, a handler names a method the
            wire does not list, or a handler's kind (plain function or coroutine) does not match
            the method's ``inline`` flag. Raised at import: a daemon with a hole in its table never starts.
    """
    bound: dict[str, str] = {}
    for attr, fn in vars(cls).items():
        name = getattr(fn, _HANDLER_ATTR, None)
        if name is None:
            continue
        if name in bound:
            raise TypeError(f"{name} has two handlers: {bound[name]} and {attr}")
        if name not in METHODS:
            raise TypeError(f"{attr} handles {name}, which is not in mmd.wire.methods.METHODS")
        if inspect.iscoroutinefunction(fn) == METHODS[name].inline:
            raise TypeError(f"{attr}: {name} is {'inline' if METHODS[name].inline else 'awaited'}, "
                            f"so its handler must {'not ' if METHODS[name].inline else ''}be a coroutine")
        bound[name] = attr
    missing = sorted(set(METHODS) - set(bound))
    if missing:
        raise TypeError(f"no handler for {', '.join(missing)}")
    return bound


_HANDLERS = _bind(Methods)
"""``{method name: Methods attribute}``, every method of the wire exactly once."""
