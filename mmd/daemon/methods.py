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
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mmd import __version__
from mmd.core.clock import parse_iso_ms
from mmd.core.errors import ErrorCode
from mmd.core.memory import merge_searches, nudge_report, search_snapshot
from mmd.core.snapshot import Snapshot
from mmd.core.text import validate_topic
from mmd.wire import methods as wire
from mmd.wire.events import MEMORY_NUDGE
from mmd.wire.methods import METHODS
from mmd.wire.protocol import DaemonError, OpenResult

from .handling import bind, handles
from .home import USER, Home, Root, Scoped
from .inject import Injector
from .methods_agents import AgentMethods
from .methods_queue import QueueMethods
from .offload import BoundedPool
from .review import Review
from .state import MemoryState

if TYPE_CHECKING:
    from .agents import Agents
    from .gitsync import GitSync

__all__ = ["Methods", "handles"]


class Methods(QueueMethods, AgentMethods):
    """The method table of one daemon.

    Args:
        home: the roots served (:mod:`.home`): the user root's state is :attr:`state`; a request's ``project``
            param (or its session's) picks the root it reads and writes.
        status: returns the daemon-level part of ``daemon.status`` (pid, endpoints, watcher…).
        publish: sends an event (``topic, payload``).
        review: the review queue's use-cases (``queue.*`` answer ``E_UNAVAILABLE`` when ingestion is off).
        injector: the injection use-cases (``memory.inject``, ``memory.injected``, ``memory.due``).
        digests: the bounded pool ``memory.digest`` runs on (never the default executor writes use);
            a fresh one when None.
        git: the git part (``--git``); without it ``memory.log`` and ``memory.restore`` read the version
            history (:class:`.history.VersionHistory`) and the other history and sync methods answer ``E_UNAVAILABLE``.
        agents: the agents' use-cases (``memory.propose``, the distillation line of ``memory.inject {prompt}``).
    """

    def __init__(self, home: Home, status: Callable[[], dict[str, Any]],
                 publish: Callable[[str, dict[str, Any]], Any], review: Review, injector: Injector,
                 digests: BoundedPool | None = None, git: GitSync | None = None, *, agents: Agents) -> None:
        self.home = home
        self.agents = agents
        self.state = home.user.state
        self.git = git
        self.digests = digests or BoundedPool("digest")
        self._status = status
        self._publish = publish
        self.review = review
        self.injector = injector
        self.inline: dict[str, Callable[[dict[str, Any]], Any]] = {
            name: getattr(self, attr) for name, attr in _HANDLERS.items() if METHODS[name].inline}
        """``{method: handler}`` answered on the loop."""
        self.awaited: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            name: getattr(self, attr) for name, attr in _HANDLERS.items() if not METHODS[name].inline}
        """``{method: coroutine handler}`` run as tasks."""

    # --- scopes (docs/projects.md) ----------------------------------------------------------------

    def _snapshots(self, p: dict[str, Any]) -> tuple[Scoped, list[tuple[Root, Snapshot]]]:
        """The request's scope and the snapshots its reads see, the scope's own root first: the session's pinned
        ones with a ``sessionId`` (a project root made after the session opened is not among them), else the
        current ones.

        Raises:
            DaemonError(E_INVALID): for a bad ``project``. DaemonError(E_NO_SESSION): for an unknown session.
        """
        scoped = self.home.resolve(p)
        sid = p.get("sessionId")
        if sid is None:
            return scoped, [(root, root.state.current) for root in scoped.roots]
        self.state.session(sid)  # every session has its place in the user root
        return scoped, [(root, root.state.session(sid).snapshot) for root in scoped.roots
                        if sid in root.state.sessions]

    def _own(self, p: dict[str, Any]) -> tuple[Scoped, Snapshot | None]:
        """The scope and the snapshot of its own root (None for a project whose root does not exist yet)."""
        scoped, snaps = self._snapshots(p)
        if scoped.root is None:
            return scoped, None
        return scoped, next((snap for root, snap in snaps if root is scoped.root), None)

    async def _writer(self, p: dict[str, Any]) -> tuple[MemoryState, str | None]:
        """The state a write goes to (a project root is created by its first write) and the session id to count
        it in (None when the session has no place in that root)."""
        root = await self.home.writable(p)
        sid = p.get("sessionId")
        if sid is not None:
            self.state.session(sid)
        return root.state, sid if sid is not None and sid in root.state.sessions else None

    # --- sessions -------------------------------------------------------------------------------

    @handles(wire.MEMORY_OPEN)
    def open(self, p: dict[str, Any]) -> OpenResult:
        """``memory.open {project?}`` → ``{sessionId, revision, loadedAt, scope}``: pin the current revision of the
        scope's root and of the user root (one id for both)."""
        scoped = self.home.resolve(p)
        session = self.state.open_session()
        if scoped.root is not None and scoped.root is not self.home.user:
            scoped.root.state.open_session(session.session_id)
        if scoped.scope != USER:
            self.home.session_scopes[session.session_id] = p["project"]
        return self._pinned(scoped, session.session_id)

    def _pinned(self, scoped: Scoped, sid: str) -> OpenResult:
        own = scoped.root if scoped.root is not None and sid in scoped.root.state.sessions else self.home.user
        snap = own.state.session(sid).snapshot
        return {"sessionId": sid, "revision": snap.revision, "loadedAt": snap.loaded_at, "scope": scoped.scope}

    @handles(wire.MEMORY_RELOAD)
    def reload(self, p: dict[str, Any]) -> OpenResult:
        """``memory.reload {sessionId}`` → as ``memory.open``: re-pin the session on the current revisions (a project
        root made since it opened joins it)."""
        sid = p["sessionId"]
        self.state.reload_session(sid)
        scoped = self.home.resolve({"sessionId": sid})
        for root in scoped.roots:
            if root is self.home.user:
                continue
            if sid in root.state.sessions:
                root.state.reload_session(sid)
            else:
                root.state.open_session(sid)
        return self._pinned(scoped, sid)

    @handles(wire.MEMORY_CLOSE)
    def close(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.close {sessionId}`` → ``{ok, sessionId, pendingWrites}``; publishes a ``session-end`` nudge."""
        sid = p["sessionId"]
        session = self.state.close_session(sid)
        pending = session.pending_writes
        for root in self.home.projects():
            if sid in root.state.sessions:
                pending += root.state.close_session(sid).pending_writes
        self.home.session_scopes.pop(sid, None)
        report = nudge_report(self.state.current, pending, self.state.now_iso())
        self._publish(MEMORY_NUDGE, {**report, "reason": "session-end", "queuePending": self.review.pending,
                                       "sessionId": sid, "due": self.injector.due_now(),
                                       "proposals": self.agents.of_session(sid)})
        return {"ok": True, "sessionId": sid, "pendingWrites": pending}

    # --- reads ----------------------------------------------------------------------------------

    @handles(wire.MEMORY_INDEX)
    def index(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.index {sessionId?, project?}`` → the index view of the scope's own root, at the session's (or
        the latest) revision; a project whose root does not exist yet has an empty one.

        Shape: ``{memoryId, root, loadedAt, lineCount, byteCount, overBudget, lineCap,
        byteCap, entries, revision, scope}``.
        """
        scoped, snap = self._own(p)
        if snap is None or scoped.root is None:
            from mmd.core.model import DEFAULT_INDEX_BYTES, DEFAULT_INDEX_LINES
            from mmd.core.projects import project_root

            assert scoped.project is not None
            return {"memoryId": scoped.scope, "root": str(project_root(self.home.home, scoped.project)),
                    "loadedAt": self.state.now_iso(), "lineCount": 0, "byteCount": 0, "overBudget": False,
                    "lineCap": DEFAULT_INDEX_LINES, "byteCap": DEFAULT_INDEX_BYTES, "entries": [], "revision": 0,
                    "scope": scoped.scope}
        o = scoped.root.state.options
        return {"memoryId": snap.memory_id, "root": str(snap.root), "loadedAt": snap.loaded_at,
                "lineCount": snap.index_line_count, "byteCount": snap.index_byte_count,
                "overBudget": snap.index_over_budget, "lineCap": o.index_lines, "byteCap": o.index_bytes,
                "entries": [e.to_json() for e in snap.entries], "revision": snap.revision, "scope": scoped.scope}

    @handles(wire.MEMORY_READ)
    def read(self, p: dict[str, Any]) -> dict[str, Any] | None:
        """``memory.read {topic?, sessionId?, project?}`` → the note's JSON (with ``scope``: the root holding it, the
        scope's own first, then the user root) or null; without a topic, the index view.

        Raises:
            MMError(E_INVALID): for a bad topic slug.
        """
        if "topic" not in p:
            return self.index(p)
        topic = validate_topic(p["topic"])
        scoped, snaps = self._snapshots(p)
        for root, snap in snaps:
            note = snap.note(topic)
            if note is not None:
                if root.injector is not None:  # it counts toward a baseline's order: newest and most used first
                    root.injector.read(topic)
                return _scoped(note.to_json(), scoped, root)
        return None

    @handles(wire.MEMORY_LIST)
    def list(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.list {sessionId?, project?}`` → ``{notes: [note JSON with scope, …]}``: the scope's own root's
        sorted by topic, then the user root's."""
        scoped, snaps = self._snapshots(p)
        return {"notes": [_scoped(n.to_json(), scoped, root) for root, snap in snaps
                          for n in sorted(snap.notes, key=lambda n: n.topic)]}

    @handles(wire.MEMORY_SEARCH)
    async def search(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.search {query, mode?, limit?, sessionId?, project?}`` → the core search result (mm v1 §8) over
        the scope's roots, each match with its ``scope`` (:func:`mmd.core.memory.merge_searches`).

        Runs in a worker thread: the first search of a revision builds its index.

        Raises:
            MMError(E_INVALID): for a blank query or a limit below 1.
        """
        scoped, snaps = self._snapshots(p)

        def run() -> dict[str, Any]:
            found = [(root.scope, search_snapshot(snap, p["query"], mode=p.get("mode"), limit=p.get("limit"),
                                                  options=root.state.options,
                                                  fts5_available=root.state.fts5_available))
                     for root, snap in snaps]
            if scoped.scope == USER:  # the user root alone: the core's result as it is
                return found[0][1]
            return merge_searches(found, p.get("limit") or self.state.options.search_limit)

        return await asyncio.to_thread(run)

    @handles(wire.MEMORY_BUDGET)
    async def budget(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.budget {sessionId?}`` → the live budget report, as the core's ``Memory.budget``.

        Raises:
            MMError(E_PARSE | E_IO): if the live MEMORY.md cannot be read.
        """
        sid = p.get("sessionId")
        scoped, snap = self._own(p)
        root = scoped.root if scoped.root is not None and snap is not None else self.home.user
        snap = snap if snap is not None else root.state.snapshot_for(sid)
        state = root.state
        pending = state.session(sid).pending_writes if sid is not None and sid in state.sessions else 0
        live = await asyncio.to_thread(state.store.budget)
        age_ms = int((parse_iso_ms(self.state.now_iso()) - parse_iso_ms(snap.loaded_at)).total_seconds() * 1000)
        return {"root": str(snap.root), "memoryId": snap.memory_id, "loadedAt": snap.loaded_at,
                "snapshotAgeMs": age_ms, "pendingWrites": pending, **live,
                "search": {"configuredMode": state.options.search_mode, "engine": snap.engine},
                "scope": root.scope}

    @handles(wire.MEMORY_NUDGE)
    def nudge(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.nudge {sessionId?}`` → the mm nudge report for the session (or the latest revision)."""
        sid = p.get("sessionId")
        scoped, own = self._own(p)
        root = scoped.root if scoped.root is not None and own is not None else self.home.user
        snap: Snapshot = own if own is not None else root.state.snapshot_for(sid)
        pending = root.state.session(sid).pending_writes if sid is not None and sid in root.state.sessions else 0
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
        state, sid = await self._writer(p)
        return await state.write(p["topic"], p["content"], if_revision=p.get("ifRevision"), session_id=sid,
                                 summary=p.get("summary"), budget=p.get("budget"), tags=p.get("tags"),
                                 review_after=p.get("reviewAfter"), **_allow(p))

    @handles(wire.MEMORY_DELETE)
    async def delete(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.delete {topic, ifRevision?, sessionId?}`` → ``{ok, removed, topic, usage, revision}``.

        Raises:
            DaemonError(E_CONFLICT | E_NO_SESSION), MMError(E_INVALID | E_PARSE | E_IO): as ``memory.write``.
        """
        state, sid = await self._writer(p)
        return await state.delete(p["topic"], if_revision=p.get("ifRevision"), session_id=sid)

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
        """``memory.inject {client, maxBytes?, commit?, reset?, prompt?}`` → ``{mode, text, added, updated, removed,
        unchanged, reminded, bytes, token, revision, committed, distill?}``; with ``prompt`` (a hook before an agent's
        prompt) the prompt is counted and ``distill`` is the session's one distillation line when it is due
        (:meth:`.agents.Agents.prompted`; never part of ``text``).

        Raises:
            MMError(E_INVALID): as :meth:`.inject.Injector.inject`.
        """
        scoped = self.home.resolve(p)
        root = scoped.root
        if root is None:  # a project without a root yet: nothing to inject from it
            injected: dict[str, Any] = {
                "mode": "none", "text": "", "added": [], "updated": [], "removed": [], "unchanged": 0, "reminded": [],
                "bytes": 0, "token": None, "revision": 0, "committed": False, "scope": scoped.scope}
        else:
            injected = await root.injector.inject(p["client"], max_bytes=p.get("maxBytes"),
                                                  commit=bool(p.get("commit")), reset=bool(p.get("reset")))
        if p.get("prompt"):
            line = await self.agents.prompted(p["client"], scoped.scope, injected["token"],
                                              commit=bool(p.get("commit")))
            if line is not None:
                injected["distill"] = line
        return injected

    @handles(wire.MEMORY_INJECTED)
    async def injected(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.injected {client, token}`` → ``{ok: true, client, token}``.

        Raises:
            MMError(E_INVALID), DaemonError(E_NOT_FOUND): as :meth:`.inject.Injector.injected`.
        """
        root = self.home.resolve(p).root or self.home.user
        confirmed: dict[str, Any] = await root.injector.injected(p["client"], p["token"])
        await self.agents.confirmed(p["client"], p["token"])
        return confirmed

    @handles(wire.MEMORY_DUE)
    async def due(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.due {withinDays?}`` → ``{today, due, invalid}``.

        Raises:
            MMError(E_INVALID): for a negative ``withinDays``.
        """
        root = self.home.resolve(p).root or self.home.user
        due: dict[str, Any] = await root.injector.due(p.get("withinDays"))
        return due

    # --- merges ---------------------------------------------------------------------------------

    @handles(wire.MEMORY_MERGE)
    async def merge(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.merge {topics, into, summary?, ifRevision?, sessionId?}`` → ``{ok, topic, uri, action, merged,
        usage, revision}`` or a budget failure ``{ok: false, code, …}``: the notes joined into ``into`` (under
        ``summary`` when given), the others deleted, one revision; allowed over the index caps when it shrinks
        the index (mm v1 §6).

        Raises:
            DaemonError(E_CONFLICT | E_NO_SESSION), MMError(E_INVALID | E_PARSE | E_IO): as ``memory.write``.
        """
        state, sid = await self._writer(p)
        return await state.merge(p["topics"], p["into"], summary=p.get("summary"),
                                 if_revision=p.get("ifRevision"), session_id=sid, **_allow(p))

    @handles(wire.MEMORY_RENAME)
    async def rename(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.rename {topic, to, ifRevision?, sessionId?, project?}`` → ``{ok, topic, uri, from, linked,
        proposals, usage, revision}`` or a budget failure ``{ok: false, code, …}``: the note, its index entry, the
        links to it from other notes and the pending candidates' proposals follow the new name, one revision.

        Raises:
            DaemonError(E_CONFLICT | E_NO_SESSION | E_UNAVAILABLE), MMError(E_INVALID | E_CONFLICT | E_PARSE |
            E_IO): as :meth:`.review.Review.rename` (a NEW with a note, or not a slug: refused, nothing changed).
        """
        state, sid = await self._writer(p)
        return await self.review.rename(p["topic"], p["to"], if_revision=p.get("ifRevision"), session_id=sid,
                                        state=state)

    # --- the memory home -----------------------------------------------------------------------

    @handles(wire.MEMORY_ADOPT)
    async def adopt(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.adopt {topics, project}`` → ``{ok, moved, refused, revisions: {scope: revision}}``: the user
        root's notes moved into the project's root (:func:`mmd.core.move.move_notes`), one revision in each.

        Raises:
            DaemonError(E_INVALID): for a bad ``project``, or one that names the user root.
            MMError(E_INVALID | E_CONFLICT | E_PARSE | E_IO): as :func:`~mmd.core.move.move_notes`.
        """
        target = await self.home.writable(p)
        if target is self.home.user:
            raise DaemonError(ErrorCode.E_INVALID, "memory.adopt moves notes into a project's root: name the project")
        return await self.home.move(self.home.user, target, p["topics"])

    # --- daemon ---------------------------------------------------------------------------------

    @handles(wire.DAEMON_STATUS)
    def status(self, p: dict[str, Any]) -> dict[str, Any]:
        """``daemon.status {}`` → ``{version, pid, root, revision, sessions, startedAt, endpoints, queue, ingest,
        watcher, events, requests}``; ``queue`` counts candidates per status."""
        return {"version": __version__, "pid": os.getpid(), "root": str(self.state.options.root),
                "revision": self.state.revision, "sessions": len(self.state.sessions), **self._status()}


def _scoped(note: dict[str, Any], scoped: Scoped, root: Root) -> dict[str, Any]:
    """A note's JSON, with the ``scope`` of the root holding it when the request is a project's (a user-root
    request gets the note as mm v1 shapes it)."""
    return note if scoped.scope == USER else {**note, "scope": root.scope}


def _allow(p: dict[str, Any]) -> dict[str, bool]:
    """A write's or merge's ``allowSecret`` / ``allowHidden`` as the state's keyword arguments."""
    return {"allow_secret": bool(p.get("allowSecret")), "allow_hidden": bool(p.get("allowHidden"))}


_HANDLERS = bind(Methods)
"""``{method name: Methods attribute}``, every method of the wire exactly once."""
