"""The RPC methods of DESIGN.md: parameter checks and the calls into the state and the core.

Each method is a row of :data:`PARAMS` (accepted params, their types, which
are required) and a handler on :class:`Methods`. Handlers marked *inline* are
cheap reads of an immutable snapshot and run on the loop directly; the others
are coroutines (writes go through the state's lock, costly reads run in a
worker thread). Handlers raise :class:`~.protocol.RpcError` or ``MMError``;
:func:`~.protocol.error_object` turns them into JSON-RPC errors. Params and
results use camelCase, like the core's JSON. This module never touches a socket.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mmd import __version__
from mmd.core.clock import parse_iso_ms
from mmd.core.errors import ErrorCode
from mmd.core.memory import nudge_report, search_snapshot
from mmd.core.snapshot import Snapshot
from mmd.core.text import validate_topic

from .protocol import CandidateJson, DaemonCode, JsonRpc, OpenResult, QueueAcceptResult, QueueListResult, RpcError
from .queue import ReviewQueue
from .state import MemoryState

__all__ = ["PARAMS", "QUEUE_LIST_MAX", "Methods"]

QUEUE_LIST_MAX = 1000
"""Largest ``queue.list`` page."""
_QUEUE_STATUSES = ("pending", "accepted", "rejected", "all")

_STR, _INT, _BOOL = (str,), (int,), (bool,)
_TAGS = (str, list)

PARAMS: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "memory.open": {},
    "memory.close": {"sessionId": (_STR, True)},
    "memory.reload": {"sessionId": (_STR, True)},
    "memory.index": {"sessionId": (_STR, False)},
    "memory.read": {"topic": (_STR, False), "sessionId": (_STR, False)},
    "memory.list": {"sessionId": (_STR, False)},
    "memory.search": {"query": (_STR, True), "mode": (_STR, False), "limit": (_INT, False),
                      "sessionId": (_STR, False)},
    "memory.budget": {"sessionId": (_STR, False)},
    "memory.write": {"topic": (_STR, True), "content": (_STR, True), "summary": (_STR, False),
                     "tags": (_TAGS, False), "budget": (_INT, False), "ifRevision": (_INT, False),
                     "sessionId": (_STR, False)},
    "memory.delete": {"topic": (_STR, True), "ifRevision": (_INT, False), "sessionId": (_STR, False)},
    "memory.digest": {"text": (_STR, False), "file": (_STR, False), "maxItems": (_INT, False),
                      "topicHint": (_STR, False)},
    "memory.nudge": {"sessionId": (_STR, False)},
    "queue.list": {"status": (_STR, False), "limit": (_INT, False), "offset": (_INT, False)},
    "queue.get": {"id": ((str, int), True)},
    "queue.accept": {"id": ((str, int), True), "topic": (_STR, False), "content": (_STR, False),
                     "summary": (_STR, False), "tags": (_TAGS, False), "ifRevision": (_INT, False),
                     "replace": (_BOOL, False)},
    "queue.reject": {"id": ((str, int), True), "reason": (_STR, False)},
    "daemon.status": {},
}
"""``{method: {param: (accepted types, required)}}``; a null value counts as absent."""


def check_params(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` without nulls, after checking them against :data:`PARAMS`.

    Raises:
        RpcError(-32601): for an unknown method.
        RpcError(-32602 / E_INVALID): for an unknown, missing or mistyped param.
    """
    spec = PARAMS.get(method)
    if spec is None:
        raise RpcError(JsonRpc.METHOD_NOT_FOUND, ErrorCode.E_INVALID, f"unknown method {method!r}")
    out = {k: v for k, v in params.items() if v is not None}
    for key, value in out.items():
        if key not in spec:
            raise _invalid(f"{method} takes no param {key!r} (accepted: {', '.join(spec) or 'none'})")
        types = spec[key][0]
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            raise _invalid(f"{method}: {key} must be {' or '.join(_TYPE_NAMES[t] for t in types)}")
        if key == "tags" and isinstance(value, list) and not all(isinstance(t, str) for t in value):
            raise _invalid(f"{method}: tags must be a string or a list of strings")
        if not all(_is_unicode(v) for v in (value if isinstance(value, list) else [value])):
            raise _invalid(f"{method}: {key} holds a lone surrogate (not Unicode text)")
    for key, (_, required) in spec.items():
        if required and key not in out:
            raise _invalid(f"{method} needs param {key!r}")
    return out


_TYPE_NAMES = {str: "a string", int: "an integer", bool: "a boolean", list: "a list"}


def _is_unicode(value: Any) -> bool:
    """False for a string that cannot be UTF-8 (JSON allows ``"\\ud800"``; files cannot hold it)."""
    if not isinstance(value, str):
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _invalid(message: str) -> RpcError:
    return RpcError(JsonRpc.INVALID_PARAMS, ErrorCode.E_INVALID, message)


class Methods:
    """The method table of one daemon.

    Args:
        state: the memory state.
        status: returns the daemon-level part of ``daemon.status`` (pid, endpoints, watcher…).
        publish: sends an event (``topic, payload``).
        queue: the review queue, or None when ingestion is off (``queue.*`` then answer ``E_UNAVAILABLE``).
    """

    def __init__(self, state: MemoryState, status: Callable[[], dict[str, Any]],
                 publish: Callable[[str, dict[str, Any]], Any], queue: ReviewQueue | None = None) -> None:
        self.state = state
        self._status = status
        self._publish = publish
        self._queue = queue
        self._deciding = asyncio.Lock()
        self.inline: dict[str, Callable[[dict[str, Any]], Any]] = {
            "memory.open": self.open, "memory.close": self.close, "memory.reload": self.reload,
            "memory.index": self.index, "memory.read": self.read, "memory.list": self.list,
            "memory.nudge": self.nudge, "daemon.status": self.status,
        }
        self.awaited: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "memory.search": self.search, "memory.budget": self.budget, "memory.write": self.write,
            "memory.delete": self.delete, "memory.digest": self.digest,
            "queue.list": self.queue_list, "queue.get": self.queue_get, "queue.accept": self.queue_accept,
            "queue.reject": self.queue_reject,
        }

    # --- sessions -------------------------------------------------------------------------------

    def open(self, p: dict[str, Any]) -> OpenResult:
        """``memory.open {}`` → ``{sessionId, revision, loadedAt}``: pin the current revision."""
        session = self.state.open_session()
        return {"sessionId": session.session_id, "revision": session.snapshot.revision,
                "loadedAt": session.snapshot.loaded_at}

    def reload(self, p: dict[str, Any]) -> OpenResult:
        """``memory.reload {sessionId}`` → as ``memory.open``: re-pin the session on the current revision."""
        session = self.state.reload_session(p["sessionId"])
        return {"sessionId": session.session_id, "revision": session.snapshot.revision,
                "loadedAt": session.snapshot.loaded_at}

    def close(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.close {sessionId}`` → ``{ok, sessionId, pendingWrites}``; publishes a ``session-end`` nudge."""
        session = self.state.close_session(p["sessionId"])
        report = nudge_report(self.state.current, session.pending_writes, self.state.now_iso())
        self._publish("memory/nudge", {**report, "reason": "session-end", "queuePending": self.queue_pending(),
                                       "sessionId": session.session_id})
        return {"ok": True, "sessionId": session.session_id, "pendingWrites": session.pending_writes}

    # --- reads ----------------------------------------------------------------------------------

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

    def list(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.list {sessionId?}`` → ``{notes: [note JSON, …]}`` sorted by topic."""
        snap = self.state.snapshot_for(p.get("sessionId"))
        return {"notes": [n.to_json() for n in sorted(snap.notes, key=lambda n: n.topic)]}

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

    def nudge(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.nudge {sessionId?}`` → the mm nudge report for the session (or the latest revision)."""
        sid = p.get("sessionId")
        snap: Snapshot = self.state.snapshot_for(sid)
        pending = self.state.session(sid).pending_writes if sid is not None else 0
        return nudge_report(snap, pending, self.state.now_iso())

    # --- writes ---------------------------------------------------------------------------------

    async def write(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.write {topic, content, summary?, tags?, budget?, ifRevision?, sessionId?}``.

        Returns:
            The core write outcome plus ``revision`` (and ``pendingWrites`` in a
            session); an over-budget write is ``{ok: false, …}``, not an error.

        Raises:
            RpcError(E_CONFLICT): if ``ifRevision`` is not current (``data.revision`` is).
            RpcError(E_NO_SESSION): for an unknown session.
            MMError(E_INVALID | E_PARSE | E_IO): as the core's write.
        """
        sid = p.get("sessionId")
        if sid is not None:
            self.state.session(sid)
        tags = p.get("tags")
        return await self.state.write(
            p["topic"], p["content"], if_revision=p.get("ifRevision"), session_id=sid,
            summary=p.get("summary"), budget=p.get("budget"),
            tags=",".join(tags) if isinstance(tags, list) else tags)

    async def delete(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.delete {topic, ifRevision?, sessionId?}`` → ``{ok, removed, topic, usage, revision}``.

        Raises:
            RpcError(E_CONFLICT | E_NO_SESSION), MMError(E_INVALID | E_PARSE | E_IO): as ``memory.write``.
        """
        sid = p.get("sessionId")
        if sid is not None:
            self.state.session(sid)
        return await self.state.delete(p["topic"], if_revision=p.get("ifRevision"), session_id=sid)

    async def digest(self, p: dict[str, Any]) -> dict[str, Any]:
        """``memory.digest {text?, file?, maxItems?, topicHint?}`` → the core digest result; never writes.

        Raises:
            MMError(E_DIGEST_SOURCE): if no source can be found or read.
        """
        from mmd.core import digest as digest_mod

        o = self.state.options
        file = os.path.expanduser(p["file"]) if "file" in p else None
        return await asyncio.to_thread(
            digest_mod.digest, text=p.get("text"), file=file, max_items=p.get("maxItems"),
            topic_hint=p.get("topicHint"), default_write_budget=o.default_write_budget, dsh_home=o.dsh_home)

    # --- the review queue -----------------------------------------------------------------------

    def queue_pending(self) -> int:
        """Pending candidates (0 when ingestion is off)."""
        return self._queue.pending if self._queue is not None else 0

    def _review_queue(self) -> ReviewQueue:
        if self._queue is None:
            raise RpcError(JsonRpc.SERVER_ERROR, DaemonCode.E_UNAVAILABLE,
                           "the review queue is off in this daemon (started with --no-ingest)")
        return self._queue

    async def _candidate(self, p: dict[str, Any]) -> CandidateJson:
        """The candidate named by ``p["id"]`` (an integer, or a string of digits).

        Raises:
            RpcError(E_INVALID): for an id that is not a positive integer.
            RpcError(E_NOT_FOUND): if no candidate has that id.
        """
        raw = p["id"]
        digits = isinstance(raw, str) and raw.isascii() and raw.isdigit()
        cid = raw if isinstance(raw, int) else int(raw) if digits else -1
        if cid < 1:
            raise _invalid(f"id must be a positive integer, not {raw!r}")
        found = await asyncio.to_thread(self._review_queue().get, cid)
        if found is None:
            raise RpcError(JsonRpc.SERVER_ERROR, DaemonCode.E_NOT_FOUND, f"no candidate {cid} in the review queue")
        return found

    async def queue_list(self, p: dict[str, Any]) -> QueueListResult:
        """``queue.list {status?, limit?, offset?}`` → ``{candidates, total, pending, offset, limit}``, oldest first.

        ``status``: ``pending`` (default) | ``accepted`` | ``rejected`` | ``all``; ``limit`` 1–1000
        (default 100); ``total`` counts every candidate with that status.

        Raises:
            RpcError(E_INVALID): for another status, a limit out of range or a negative offset.
        """
        q = self._review_queue()
        status, limit, offset = p.get("status", "pending"), p.get("limit", 100), p.get("offset", 0)
        if status not in _QUEUE_STATUSES:
            raise _invalid(f"queue.list: status must be one of {', '.join(_QUEUE_STATUSES)}")
        if not 1 <= limit <= QUEUE_LIST_MAX or offset < 0:
            raise _invalid(f"queue.list: limit must be 1..{QUEUE_LIST_MAX} and offset at least 0")
        page, total = await asyncio.to_thread(q.list, status, limit=limit, offset=offset)
        return {"candidates": page, "total": total, "pending": q.pending, "offset": offset, "limit": limit}

    async def queue_get(self, p: dict[str, Any]) -> CandidateJson:
        """``queue.get {id}`` → the candidate.

        Raises:
            RpcError(E_INVALID | E_NOT_FOUND): as :meth:`_candidate`.
        """
        return await self._candidate(p)

    async def queue_accept(self, p: dict[str, Any]) -> QueueAcceptResult:
        """``queue.accept {id, topic?, summary?, tags?, content?, ifRevision?, replace?}`` → ``{ok, candidate, write}``.

        Writes the candidate (``topic``, ``summary``, ``tags`` and ``content`` override its own) through
        ``memory.write``, so budgets hold: an over-budget write is ``ok: false`` with the usage in
        ``write``, and the candidate stays pending. On success it becomes ``accepted``. A topic that
        already has a note is only overwritten with ``replace: true``; the check and the write are one
        compare-and-set on the revision, so a note created meanwhile is never overwritten either.

        Raises:
            RpcError(E_INVALID | E_NOT_FOUND): as :meth:`_candidate`.
            RpcError(E_DECIDED): if the candidate was already accepted or rejected.
            RpcError(E_EXISTS): if the topic has a note and ``replace`` is not true; the candidate stays pending.
            RpcError(E_CONFLICT), MMError(E_INVALID | E_IO): as ``memory.write``; the candidate stays pending.
        """
        q = self._review_queue()
        async with self._deciding:
            cand = await self._candidate(p)
            if cand["status"] != "pending":
                raise RpcError(JsonRpc.SERVER_ERROR, DaemonCode.E_DECIDED,
                               f"candidate {cand['id']} is already {cand['status']}", status=cand["status"])
            topic = p.get("topic", cand["topic"])
            if_revision = p.get("ifRevision")
            if not p.get("replace"):
                latest = self.state.current
                existing = latest.note(topic)
                if existing is not None:
                    raise RpcError(JsonRpc.SERVER_ERROR, DaemonCode.E_EXISTS,
                                   f"{existing.uri} already has a note; accept with replace to overwrite it, "
                                   f"or give another topic", topic=topic, uri=existing.uri)
                if if_revision is None:
                    if_revision = latest.revision
            write = {"topic": topic, "content": p.get("content", cand["body"]),
                     "summary": p.get("summary", cand["summary"]), "tags": p.get("tags"),
                     "ifRevision": if_revision}
            outcome = await self.write({k: v for k, v in write.items() if v is not None})
            if not outcome.get("ok"):
                return {"ok": False, "candidate": cand, "write": outcome}
            written = {"topic": outcome["topic"], "revision": outcome["revision"]}
            decided = await asyncio.to_thread(q.decide, cand["id"], "accepted", written=written)
            return {"ok": True, "candidate": decided or cand, "write": outcome}

    async def queue_reject(self, p: dict[str, Any]) -> dict[str, Any]:
        """``queue.reject {id, reason?}`` → ``{ok: true, candidate}``; rejecting a rejected candidate is a no-op.

        A rejected candidate never comes back: ingestion drops it by identity for good.

        Raises:
            RpcError(E_INVALID | E_NOT_FOUND): as :meth:`_candidate`.
            RpcError(E_DECIDED): if the candidate was accepted.
        """
        q = self._review_queue()
        async with self._deciding:
            cand = await self._candidate(p)
            if cand["status"] == "rejected":
                return {"ok": True, "candidate": cand}
            if cand["status"] != "pending":
                raise RpcError(JsonRpc.SERVER_ERROR, DaemonCode.E_DECIDED,
                               f"candidate {cand['id']} is already {cand['status']}", status=cand["status"])
            decided = await asyncio.to_thread(q.decide, cand["id"], "rejected", reason=p.get("reason"))
            return {"ok": True, "candidate": decided or cand}

    # --- daemon ---------------------------------------------------------------------------------

    def status(self, p: dict[str, Any]) -> dict[str, Any]:
        """``daemon.status {}`` → ``{version, pid, root, revision, sessions, startedAt, endpoints, queue, ingest,
        watcher, events, requests}``; ``queue`` counts candidates per status."""
        return {"version": __version__, "pid": os.getpid(), "root": str(self.state.options.root),
                "revision": self.state.revision, "sessions": len(self.state.sessions), **self._status()}
