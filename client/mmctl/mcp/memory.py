"""The memory behind one MCP connection: one frozen snapshot, from the daemon or from the files.

With a daemon, the connection opens a daemon session (``memory.open``) and
every read and write carries its ``sessionId``; a session lost in a daemon
restart is opened again (the snapshot then moves to the newest revision).
Without one, it is a core :class:`~mmd.core.Memory` loaded once: reads serve
that snapshot, writes reach the disk under the root's lock and count as
pending, exactly the reference's session semantics (mm v1 §7). The review
queue needs the daemon. Review dates (``due``) and injections (``inject``) look
at the latest revision, not the connection's snapshot: they are about now. The
server follows the daemon (:class:`FollowingMemory`): before each call it checks
that its daemon's socket still accepts (else it goes on with the files, at once
rather than after a timeout) or, on the files, looks for a daemon and, once one
owns the root, goes through it (the snapshot then moves to the daemon's newest
revision), so its writes never wait for the lock that daemon holds. A write or
delete of a topic whose latest version is not the one this connection has seen
(its first snapshot's, else the one it last read or wrote) is refused
(:meth:`FollowingMemory.check_unchanged`): it would replace another writer's
text unseen; ``reload`` takes a new snapshot, whose read of the topic counts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mmd.core.errors import ErrorCode, MMError
from mmd.core.memory import Memory

from ..aclient import AsyncClient, AsyncSession
from ..errors import MmctlError, NoSessionError

__all__ = ["DaemonMemory", "DirectMemory", "FollowingMemory", "MemoryUnavailable", "NoRootYet", "SessionMemory",
           "describe_error"]


class MemoryUnavailable(Exception):
    """Raised for a call this connection cannot serve (the review queue without a daemon); says what to do."""


class SessionMemory:
    """What the MCP tools call; results are the core's JSON dicts (camelCase keys).

    Raises (every method): MMError or MmctlError from the memory, MemoryUnavailable as documented.
    """

    async def live_updated(self, topic: str) -> str | None:
        """The ``updated`` of ``topic`` in the latest revision (None: no such note)."""
        raise NotImplementedError

    async def reload(self) -> dict[str, Any]:
        """A new snapshot (mm v1 §7 ``reload``): ``{loadedAt, revision?, pendingWrites?}``."""
        raise NotImplementedError

    async def read(self, topic: str) -> dict[str, Any] | None:
        raise NotImplementedError

    async def index(self) -> dict[str, Any]:
        raise NotImplementedError

    async def notes(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    async def search(self, query: str, mode: str | None, limit: int | None) -> dict[str, Any]:
        raise NotImplementedError

    async def budget(self) -> dict[str, Any]:
        raise NotImplementedError

    async def write(self, topic: str, content: str, summary: str | None, tags: str | None,
                    budget: int | None, review_after: str | None = None) -> dict[str, Any]:
        """Write a note (``review_after``: ``YYYY-MM-DD``, ``10d``/``2w``/``3m``/``1y``, ``""`` removes the date)."""
        raise NotImplementedError

    async def digest(self, text: str | None, file: str | None, max_items: int | None,
                     topic_hint: str | None) -> dict[str, Any]:
        raise NotImplementedError

    async def delete(self, topic: str) -> dict[str, Any]:
        """Delete a note and its index entry: ``{ok, removed, topic, usage, pendingWrites?, …}``."""
        raise NotImplementedError

    async def due(self, within_days: int) -> dict[str, Any]:
        """``{today, due: [{topic, reviewAfter, daysLeft}], invalid: [{topic, value}]}`` of the latest revision."""
        raise NotImplementedError

    async def inject(self, client: str, max_bytes: int | None) -> dict[str, Any]:
        """The injection for ``client`` (``memory.inject``), committed: the tool's answer reaches the agent."""
        raise NotImplementedError

    async def queue(self, action: str, **params: Any) -> Any:
        """``queue.<action>`` (``list`` | ``get`` | ``accept`` | ``reject``) with the given params."""
        raise NotImplementedError

    async def propose(self, **params: Any) -> dict[str, Any]:
        """``memory.propose`` (an agent's proposal, issue 28); on the files there is no queue to take it."""
        raise MemoryUnavailable("proposals wait in the review queue of the mmd daemon, which is not running: nothing "
                                "was written; put the fact on a line `mm: …` in your reply instead (mmd reads it "
                                "from this session's log once it runs)")

    async def close(self) -> None:
        """Release the snapshot."""

    uri_for: Callable[[str], str]


class DirectMemory(SessionMemory):
    """A core :class:`Memory` on the files (no daemon)."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.uri_for = memory.uri_for

    async def live_updated(self, topic: str) -> str | None:
        from mmd.core.snapshot import parse_live_index

        _, entries = await asyncio.to_thread(parse_live_index, self.memory.root, self.memory.memory_id)
        return next((e.updated for e in entries if e.topic == topic), None)

    async def reload(self) -> dict[str, Any]:
        memory = await asyncio.to_thread(self.memory.reload)
        return {"loadedAt": memory.read_index()["loadedAt"], "pendingWrites": memory.pending_writes}

    async def read(self, topic: str) -> dict[str, Any] | None:
        note = self.memory.read_topic(topic)
        return None if note is None else note.to_json()

    async def index(self) -> dict[str, Any]:
        return self.memory.read_index()

    async def notes(self) -> list[dict[str, Any]]:
        return [n.to_json() for n in self.memory.list_notes()]

    async def search(self, query: str, mode: str | None, limit: int | None) -> dict[str, Any]:
        return await asyncio.to_thread(self.memory.search, query, mode=mode, limit=limit)

    async def budget(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.memory.budget)

    async def write(self, topic: str, content: str, summary: str | None, tags: str | None,
                    budget: int | None, review_after: str | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.memory.write, topic, content, summary=summary, tags=tags, budget=budget,
                                       review_after=review_after)

    async def digest(self, text: str | None, file: str | None, max_items: int | None,
                     topic_hint: str | None) -> dict[str, Any]:
        return await asyncio.to_thread(self.memory.digest, text=text, file=file, max_items=max_items,
                                       topic_hint=topic_hint)

    async def delete(self, topic: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.memory.delete, topic)

    async def due(self, within_days: int) -> dict[str, Any]:
        return await asyncio.to_thread(self._due, within_days)

    def _due(self, within_days: int) -> dict[str, Any]:
        from datetime import date

        from mmd.core.clock import iso_ms
        from mmd.core.snapshot import parse_live_index
        from mmd.inject.due import due_topics

        today = date.fromisoformat(iso_ms(self.memory._now())[:10])
        _, entries = parse_live_index(self.memory.root, self.memory.memory_id)
        return {"today": today.isoformat(), **due_topics(entries, today, within_days).to_json()}

    async def inject(self, client: str, max_bytes: int | None) -> dict[str, Any]:
        from ..injection import plan_direct

        def run() -> dict[str, Any]:
            injection = plan_direct(self.memory.options, client, now=self.memory._now, max_bytes=max_bytes)
            injection.commit()
            return injection.result

        return await asyncio.to_thread(run)

    async def queue(self, action: str, **params: Any) -> Any:
        raise MemoryUnavailable(f"the review queue needs the mmd daemon; start it with `mmd --root {self.memory.root}`")


class DaemonMemory(SessionMemory):
    """A daemon session: the snapshot pinned by ``memory.open``, reopened if the daemon restarts."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self.session = AsyncSession(client)
        self.memory_id = "local"
        self.uri_for = self._uri_for

    def _uri_for(self, topic: str) -> str:
        from mmd.core.uri import uri_for

        return uri_for(self.memory_id, topic)

    async def open(self) -> DaemonMemory:
        """Pin the snapshot of this connection (and learn the root's memory id for URIs)."""
        await self.session.reopen()
        self.memory_id = (await self.session.index())["memoryId"]
        return self

    async def _in_session(self, call: Callable[[], Awaitable[Any]]) -> Any:
        try:
            return await call()
        except NoSessionError:  # the daemon restarted or the session expired: pin the newest revision
            await self.session.reopen()
            return await call()

    async def live_updated(self, topic: str) -> str | None:
        note = await self.client.read(topic)  # no session: the latest revision
        return None if note is None else note.get("updated")

    async def reload(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._in_session(lambda: self.session.reload())
        return {"loadedAt": result["loadedAt"], "revision": result["revision"]}

    async def read(self, topic: str) -> dict[str, Any] | None:
        result: dict[str, Any] | None = await self._in_session(lambda: self.session.read(topic))
        return result

    async def index(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._in_session(lambda: self.session.index())
        return result

    async def notes(self) -> list[dict[str, Any]]:
        result = await self._in_session(lambda: self.session.list())
        return list(result["notes"])

    async def search(self, query: str, mode: str | None, limit: int | None) -> dict[str, Any]:
        result: dict[str, Any] = await self._in_session(lambda: self.session.search(query, mode=mode, limit=limit))
        return result

    async def budget(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._in_session(lambda: self.session.budget())
        return result

    async def write(self, topic: str, content: str, summary: str | None, tags: str | None,
                    budget: int | None, review_after: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await self._in_session(
            lambda: self.session.write(topic, content, summary=summary, tags=tags, budget=budget,
                                       review_after=review_after))
        return result

    async def digest(self, text: str | None, file: str | None, max_items: int | None,
                     topic_hint: str | None) -> dict[str, Any]:
        result: dict[str, Any] = await self.client.digest(text=text, file=file, max_items=max_items,
                                                          topic_hint=topic_hint)
        return result

    async def delete(self, topic: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._in_session(lambda: self.session.delete(topic))
        return result

    async def due(self, within_days: int) -> dict[str, Any]:
        result: dict[str, Any] = await self.client.due(within_days=within_days)
        return result

    async def inject(self, client: str, max_bytes: int | None) -> dict[str, Any]:
        from .agents import inject_scoped

        return await inject_scoped(self.client, client, max_bytes)

    async def propose(self, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self._in_session(lambda: self.session.propose(**params))
        return result

    async def queue(self, action: str, **params: Any) -> Any:
        if action not in ("list", "get", "accept", "reject"):
            raise ValueError(f"unknown queue action {action!r}")
        return await getattr(self.client, f"queue_{action}")(**params)

    async def close(self) -> None:
        await self.session.end()
        await self.client.aclose()


class NoRootYet(SessionMemory):
    """A root that does not exist yet (no ``MEMORY.md``): reads fail naming it, the first write or delete
    creates it and goes on as :class:`DirectMemory` (only writes create a root, as with ``mmctl``). A mistyped
    ``--root`` so shows at the first read, instead of serving a new, empty memory.

    Args:
        root: the root's path.
        memory_id: the memory id of its URIs.
        create: makes the root and returns the memory on it (called once, in a worker thread).
    """

    def __init__(self, root: Any, memory_id: str, create: Callable[[], DirectMemory]) -> None:
        from mmd.core.uri import uri_for

        self.root, self._create = root, create
        self.created: DirectMemory | None = None
        self.uri_for = lambda topic: uri_for(memory_id, topic)

    def _missing(self) -> MMError:
        return MMError(ErrorCode.E_NOT_INITIALIZED, f"no memory root at {self.root} yet: the first mem_write creates "
                                                    "it; if that is not the path you meant, fix the server's --root")

    async def _made(self) -> DirectMemory:
        if self.created is None:
            self.created = await asyncio.to_thread(self._create)
        return self.created

    async def read(self, topic: str) -> dict[str, Any] | None:
        raise self._missing()

    async def index(self) -> dict[str, Any]:
        raise self._missing()

    async def notes(self) -> list[dict[str, Any]]:
        raise self._missing()

    async def search(self, query: str, mode: str | None, limit: int | None) -> dict[str, Any]:
        raise self._missing()

    async def budget(self) -> dict[str, Any]:
        raise self._missing()

    async def due(self, within_days: int) -> dict[str, Any]:
        raise self._missing()

    async def inject(self, client: str, max_bytes: int | None) -> dict[str, Any]:
        raise self._missing()

    async def digest(self, text: str | None, file: str | None, max_items: int | None,
                     topic_hint: str | None) -> dict[str, Any]:
        return await (await self._made()).digest(text, file, max_items, topic_hint)

    async def reload(self) -> dict[str, Any]:
        raise self._missing()

    async def live_updated(self, topic: str) -> str | None:
        return None if self.created is None else await self.created.live_updated(topic)

    async def write(self, topic: str, content: str, summary: str | None, tags: str | None,
                    budget: int | None, review_after: str | None = None) -> dict[str, Any]:
        return await (await self._made()).write(topic, content, summary, tags, budget, review_after)

    async def delete(self, topic: str) -> dict[str, Any]:
        return await (await self._made()).delete(topic)

    async def queue(self, action: str, **params: Any) -> Any:
        raise MemoryUnavailable(f"the review queue needs the mmd daemon; start it with `mmd --root {self.root}`")


class FollowingMemory(SessionMemory):
    """The root's daemon while one answers, else the files: a long-lived server outlives daemon restarts.

    Args:
        first: the memory to start with (a :class:`DaemonMemory`, or one on the files).
        on_files: makes the memory on the files (:class:`DirectMemory`, or :class:`NoRootYet`), for when the
            daemon is gone: its socket no longer accepts (a stopped daemon removes it), checked before each call.
        find: returns an opened :class:`DaemonMemory` when a daemon owns the root now, else None
            (cheap when none runs: a ``stat`` of its socket).
        alive: whether the daemon's socket still accepts connections.
    """

    def __init__(self, first: SessionMemory, on_files: Callable[[], SessionMemory],
                 find: Callable[[], Awaitable[DaemonMemory | None]], alive: Callable[[], bool]) -> None:
        self.current: SessionMemory = first
        self._on_files, self._find, self._alive = on_files, find, alive
        self.uri_for = lambda topic: self.current.uri_for(topic)
        self._seen: dict[str, str | None] = {}
        """topic → the ``updated`` of the version this connection has seen: the snapshot it began with, then
        what each topic read (:meth:`read`, :meth:`notes`, a note resource) or written by it returned. Neither a
        reload nor a move between daemon and files changes it: only reading or writing the topic does."""
        self._ahead: set[str] = set()
        """Topics whose seen version is newer than the snapshot (written by this connection, or read as a note
        resource, since the last reload): a snapshot read of them never takes it back (mm v1 §7: the snapshot
        still shows the version before)."""

    async def begin(self) -> FollowingMemory:
        """Record the snapshot this connection begins with (every topic in it counts as seen at that version)."""
        try:
            index = await self.current.index()
        except (MMError, MmctlError):  # no root yet: nothing seen
            index = {"entries": []}
        self._seen = {e["topic"]: e.get("updated") for e in index.get("entries", [])}
        return self

    async def check_unchanged(self, topic: str) -> None:
        """Refuse to write or delete ``topic`` when its latest version is not the one this connection has seen
        (another writer rewrote, created or deleted it since), judged by its ``updated`` time.

        Raises:
            MMError(E_CONFLICT): naming the topic and the way out (``mem_reload``, read it, merge, write again).
        """
        expected = self._seen.get(topic)
        live = await (await self._memory()).live_updated(topic)
        if live != expected:
            what = "deleted" if live is None else "created" if expected is None else f"rewritten at {live}"
            read = (f"then mem_read {topic} and fold its text into yours before writing again" if live is not None
                    else "then write it again if it should still exist")
            raise MMError(ErrorCode.E_CONFLICT, f"{topic} was {what} by another writer since you last read it; "
                                                f"nothing was written: mem_reload, {read}")

    def saw(self, topic: str, updated: str | None) -> None:
        """Record that a note resource showed this connection ``topic`` at version ``updated`` (the latest
        revision on disk)."""
        self._seen[topic] = updated
        self._ahead.add(topic)

    def _read(self, topic: str, updated: str | None) -> None:
        """Record a snapshot read of ``topic`` (None: no note in the snapshot), unless this connection has seen a
        newer version since its last reload (its own write, a note resource)."""
        if topic not in self._ahead:
            self._seen[topic] = updated

    async def wrote(self, topic: str) -> None:
        """Record that this connection just wrote or deleted ``topic``: it has seen its latest version."""
        self._seen[topic] = await (await self._memory()).live_updated(topic)
        self._ahead.add(topic)

    async def _memory(self) -> SessionMemory:
        if isinstance(self.current, NoRootYet) and self.current.created is not None:
            self.current = self.current.created
        if isinstance(self.current, DaemonMemory) and not self._alive():
            # gone (stopped, crashed): every call would wait for the client's timeout; the files answer now
            await self.current.client.aclose()
            self.current = self._on_files()
        if not isinstance(self.current, DaemonMemory):
            found = await self._find()
            if found is not None:
                self.current = found
        return self.current

    async def read(self, topic: str) -> dict[str, Any] | None:
        note = await (await self._memory()).read(topic)
        self._read(topic, None if note is None else note.get("updated"))
        return note

    async def live_updated(self, topic: str) -> str | None:
        return await (await self._memory()).live_updated(topic)

    async def reload(self) -> dict[str, Any]:
        result = await (await self._memory()).reload()
        self._ahead.clear()  # the snapshot now holds all this connection had seen ahead of it
        return result

    async def index(self) -> dict[str, Any]:
        return await (await self._memory()).index()

    async def notes(self) -> list[dict[str, Any]]:
        notes = await (await self._memory()).notes()
        for n in notes:
            self._read(n["topic"], n.get("updated"))
        return notes

    async def search(self, query: str, mode: str | None, limit: int | None) -> dict[str, Any]:
        return await (await self._memory()).search(query, mode, limit)

    async def budget(self) -> dict[str, Any]:
        return await (await self._memory()).budget()

    async def write(self, topic: str, content: str, summary: str | None, tags: str | None,
                    budget: int | None, review_after: str | None = None) -> dict[str, Any]:
        return await (await self._memory()).write(topic, content, summary, tags, budget, review_after)

    async def digest(self, text: str | None, file: str | None, max_items: int | None,
                     topic_hint: str | None) -> dict[str, Any]:
        return await (await self._memory()).digest(text, file, max_items, topic_hint)

    async def delete(self, topic: str) -> dict[str, Any]:
        return await (await self._memory()).delete(topic)

    async def due(self, within_days: int) -> dict[str, Any]:
        return await (await self._memory()).due(within_days)

    async def inject(self, client: str, max_bytes: int | None) -> dict[str, Any]:
        return await (await self._memory()).inject(client, max_bytes)

    async def queue(self, action: str, **params: Any) -> Any:
        return await (await self._memory()).queue(action, **params)

    async def propose(self, **params: Any) -> dict[str, Any]:
        return await (await self._memory()).propose(**params)

    async def close(self) -> None:
        await self.current.close()


def describe_error(error: BaseException) -> str:
    """One line for the model: the code, the message, and what to do."""
    if isinstance(error, MMError):
        return f"{error.code.value}: {error.message}"
    if isinstance(error, MmctlError):
        return f"{error.code}: {error.message}"
    return str(error)

