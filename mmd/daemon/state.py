"""The daemon's memory state: the current revision, the sessions pinned to older ones, and what changed.

A *revision* is an immutable :class:`~mmd.core.snapshot.Snapshot` numbered above the root's high-water mark
(:mod:`mmd.core.revision_mark`: numbers grow for the life of the root, across restarts and direct-mode writes;
the daemon reserves them in blocks of :data:`RESERVE`); a write, a delete, an external edit or a config reload
makes the next one. Sessions (:mod:`.sessions`) pin the revision current at ``memory.open`` until they close,
reload or expire. Session-less reads see the current revision, so a write is visible to them at once.

Threading: the ``prepare_*`` methods do the disk work (the store's write, then
the next :class:`~.revision.Revision`) without changing the state, so they run
in a worker thread; the async methods (:meth:`MemoryState.write`,
``delete``, ``refresh``, ``load``) hold :attr:`MemoryState.lock` around
prepare-then-install, so writes are serialized and each revision is installed
on the event loop's thread. Group commit (issue 17): writes and deletes wait in
one queue in arrival order; writes that arrived while another was in flight
go to disk together (:meth:`MemoryStore.write_many`: one index rewrite, one
set of fsyncs), each checked against budgets in arrival order, each answered
only once its bytes are durable, each still its own revision and event; after a
group of several, the next waits up to half its time (:func:`.writequeue.gather`)
for those writers to come back, so closed-loop writers share one group.
Reads never take the lock: they read an immutable snapshot. This module never
touches a socket; ``on_change`` tells the daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from mmd.core.clock import Clock, now_iso, system_clock
from mmd.core.engine import choose_engine, fts5_available
from mmd.core.errors import ErrorCode, MMError
from mmd.core.options import MemoryOptions
from mmd.core.paths import STATE_DIR, detail_rel
from mmd.core.revision_mark import advance_mark, read_mark
from mmd.core.snapshot import Snapshot
from mmd.core.store import MemoryStore
from mmd.core.versions import VersionLog
from mmd.screen.secrets import find_secrets
from mmd.wire.protocol import DaemonCode, DaemonError

from .revision import Fingerprints, Revision, load_revision, patch_revision
from .rootguard import RootGuard
from .sessions import PinnedSessions, Session
from .writequeue import Queued, gather, next_group

__all__ = ["RESERVE", "MemoryState", "Session"]

RESERVE = 1000
"""Revision numbers reserved in the root's high-water mark at once (one durable write per block)."""


def _meta(snapshot: Snapshot) -> tuple[Any, ...]:
    return (snapshot.index_line_count, snapshot.index_byte_count, snapshot.anomalies, snapshot.memory_id)


class MemoryState(PinnedSessions):
    """The live state of one root inside the daemon (its agent sessions: :class:`.sessions.PinnedSessions`).

    Args:
        options: the memory options.
        now: the clock (``loadedAt``, ``updated``, nudges).
        monotonic: seconds for session idleness (``time.monotonic`` by default).
        fts5: whether SQLite FTS5 may be used; None probes it once.
    """

    def __init__(self, options: MemoryOptions, *, now: Clock = system_clock,
                 monotonic: Callable[[], float] = time.monotonic, fts5: bool | None = None) -> None:
        self.options = options
        self._now = now
        self._monotonic = monotonic
        self.fts5_available = fts5_available() if fts5 is None else fts5
        self.store = self._store(options)
        self.sessions: dict[str, Session] = {}
        self._current: Snapshot | None = None
        self.previous: Snapshot | None = None
        """The revision before the current one (what ``on_change`` handlers compare it with), None before the second."""
        self.fingerprints: Fingerprints = {}
        self.lock = asyncio.Lock()
        self._queue: deque[Queued] = deque()
        self._arrived = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._base = 0
        self._reserved = 0
        self.guard: RootGuard | None = None
        """Set by the daemon once it locked the root: writes are refused after the root was lost."""
        self.on_change: Callable[[Revision, str], None] = lambda revision, cause: None
        """Called on the loop after each new revision but the first, with its cause
        (``write`` | ``delete`` | ``merge`` | ``rename`` | ``external`` | ``config``)."""
        self.on_allowed: Callable[[dict[str, Any]], None] = lambda outcome: None
        """Called on the loop after a write or merge a person let a secret or hidden text through (its outcome,
        with ``allowed`` and ``revision``): the daemon journals it."""

    def _store(self, options: MemoryOptions) -> MemoryStore:
        """The root's writer: the daemon holds the root's flock for its whole life, so the store must not take it
        again; writes are screened for secrets (:func:`mmd.screen.secrets.find_secrets`); the version history keeps
        its connection for the daemon's life."""
        return MemoryStore(options, self.now_iso, lock=contextlib.nullcontext, screen=find_secrets,
                           versions=VersionLog(options.root, keep_open=True))

    def now_iso(self) -> str:
        """The clock as ISO-8601 UTC with milliseconds."""
        return now_iso(self._now)

    @property
    def current(self) -> Snapshot:
        """The newest revision. Raises MMError(E_SNAPSHOT) before :meth:`load` was first awaited."""
        if self._current is None:
            raise MMError(ErrorCode.E_SNAPSHOT, "the daemon has not loaded the root yet")
        return self._current

    @property
    def revision(self) -> int:
        """The newest revision number (0 before the first load)."""
        return self._current.revision if self._current else 0

    @property
    def engine(self) -> str:
        """The search engine of the configured mode (``scan`` | ``fts5``)."""
        return choose_engine(self.options.search_mode, self.fts5_available)

    # --- preparing revisions (blocking I/O, safe in a worker thread) -------------------------------

    def prepare_load(self) -> Revision:
        """Read the whole root as the next revision.

        Raises:
            MMError(E_NOT_INITIALIZED | E_PARSE | E_IO): as :func:`~mmd.core.snapshot.load_snapshot`.
        """
        return load_revision(self.options, self._current, self.store.live_index, number=self._next_number(),
                             loaded_at=self.now_iso(), engine=self.engine)

    def _next_number(self, after: int | None = None) -> int:
        """The next revision number after ``after`` (default the current one; a group commit numbers its
        writes one after the other before installing them), above the root's high-water mark; reserves a
        block when needed.

        Raises:
            MMError(E_IO): if the mark cannot be written (no number is handed out then).
        """
        if self._current is None:
            self._base = self._reserved = read_mark(self.options.root)
        number = max(self.revision if after is None else after, self._base) + 1
        if number > self._reserved:
            try:
                self._reserved = advance_mark(self.options.root, number + RESERVE - 1)
            except OSError as error:
                raise MMError(ErrorCode.E_IO, f"recording revision {number} in .mmd/ failed: "
                                              f"{error.strerror or error}") from error  # MMError passes as is
        return number

    def _prepare_patch(self, touched: str) -> Revision:
        if self._current is None or self._current.memory_id != self.options.memory_id:
            return self.prepare_load()
        return patch_revision(self.options, self._current, self.fingerprints, touched, self.store.live_index,
                              number=self._next_number(), loaded_at=self.now_iso())

    def prepare_write(self, topic: Any, content: Any, **kwargs: Any) -> tuple[dict[str, Any], Revision | None]:
        """Write through the store; on success also build the next revision.

        Returns:
            ``(outcome, revision)``; ``revision`` is None when the write was refused (``ok: false``).

        Raises:
            MMError: as :meth:`MemoryStore.write` and :func:`~.revision.patch_revision`.
        """
        outcome, revision = self.prepare_writes([(topic, content, kwargs)])[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome, revision

    def prepare_writes(self, writes: Sequence[tuple[Any, Any, dict[str, Any]]]) \
            -> list[tuple[dict[str, Any] | MMError, Revision | None]]:
        """Write ``(topic, content, keyword arguments)`` in order as one group commit
        (:meth:`MemoryStore.write_many`), then build one revision per accepted write, in order.

        Returns:
            Per write ``(outcome, revision)`` (``revision`` None when refused), or ``(MMError, None)``
            for a write that failed (the others are not affected).
        """
        last = self.revision

        def number() -> int:  # each accepted write's revision, handed out as the store writes it
            nonlocal last
            last = self._next_number(last)
            return last

        done = self.store.write_many(writes, number=number)
        old, prints = self._current, self.fingerprints
        out: list[tuple[dict[str, Any] | MMError, Revision | None]] = []
        for one in done:
            if one.outcome is None or one.state is None:
                out.append((one.outcome or one.error or MMError(ErrorCode.E_IO, "the write was not applied"), None))
                continue
            state = one.state
            try:
                if old is None or old.memory_id != self.options.memory_id:
                    revision = self.prepare_load()
                else:
                    revision = patch_revision(self.options, old, prints, detail_rel(one.outcome["topic"]),
                                              lambda state=state: (state.text, state.entries),  # type: ignore[misc]
                                              number=one.revision or self._next_number(old.revision),
                                              loaded_at=self.now_iso(),
                                              written=one.note, usage=state.usage)
            except MMError as error:
                out.append((error, None))
                continue
            old, prints = revision.snapshot, revision.fingerprints
            out.append((one.outcome, revision))
        return out

    def prepare_delete(self, topic: Any) -> tuple[dict[str, Any], Revision]:
        """Delete through the store, then build the next revision (the index is rewritten either way).

        Raises:
            MMError: as :meth:`MemoryStore.delete` and :func:`~.revision.patch_revision`.
        """
        if not isinstance(topic, str):
            raise MMError(ErrorCode.E_INVALID, "topic must be a string")
        known = self._current.note(topic) if self._current is not None else None
        outcome = self.store.delete(topic, number=self._next_number)  # the number _prepare_patch gives it
        return outcome, self._prepare_patch(known.entry.file if known else detail_rel(topic))

    def external_change(self, rels: Iterable[str]) -> bool:
        """Whether any of ``rels`` (root-relative paths reported by the watcher) differs from the
        files as the daemon last wrote or read them. Own writes therefore never count as external."""
        root = self.options.root
        for rel in rels:
            if rel.startswith(STATE_DIR + "/") or not rel.endswith(".md"):
                continue
            try:
                st = os.stat(root.joinpath(*rel.split("/")))
                now: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
            except OSError:
                now = None
            if self.fingerprints.get(rel) != now:
                return True
        return False

    # --- changing (event-loop thread; the disk work runs in a worker thread) -----------------------

    async def load(self) -> Revision:
        """Load the first revision (or reload after SIGHUP) and install it; announce it as ``config``
        when it is not the first. The loaded notes live as long as the daemon (later revisions reuse
        them), so they are moved out of the collector's sight (``gc.freeze``): at 20,000 topics the
        longest collection pause during searches fell from 35 to 13 ms (issue 17).

        Raises:
            MMError: as :meth:`prepare_load`; the previous revision then stays current.
        """
        async with self.lock:
            return self.load_now(await asyncio.to_thread(self.prepare_load))

    def load_now(self, revision: Revision | None = None) -> Revision:
        """Install ``revision`` (default: :meth:`prepare_load` now, blocking) as :meth:`load` does, the caller
        holding :attr:`lock` or being the only one to see this state (a project root opened for a read)."""
        first, revision = self._current is None, revision or self.prepare_load()
        self._install(revision, None, None if first else "config")
        gc.freeze()
        return revision

    async def write(self, topic: Any, content: Any, *, if_revision: int | None = None,
                    session_id: str | None = None, tags: str | Sequence[str] | None = None,
                    **kwargs: Any) -> dict[str, Any]:
        """A write (mm v1 §6) in arrival order, group-committed with the writes queued beside it:
        the outcome plus ``revision`` (and ``pendingWrites`` in a session), once its bytes are durable.

        ``tags`` is a comma-separated string or a list of tags (joined with ``,``); the other
        keyword arguments (``summary``, ``budget``) go to :meth:`MemoryStore.write`.

        Raises:
            DaemonError(E_CONFLICT): if ``if_revision`` is not the current revision when its turn comes.
            DaemonError(E_UNAVAILABLE): if the root or its lock file was removed or replaced (:attr:`guard`).
            MMError: as :meth:`MemoryStore.write`.
        """
        if tags is not None and not isinstance(tags, str):
            tags = ",".join(tags)
        return await self._queued(Queued(topic, (content, {"tags": tags, **kwargs}), if_revision, session_id))

    async def delete(self, topic: Any, *, if_revision: int | None = None,
                     session_id: str | None = None) -> dict[str, Any]:
        """A delete in arrival order (alone, never grouped): ``{ok, removed, topic, usage, revision, pendingWrites?}``.

        Raises:
            DaemonError(E_CONFLICT): if ``if_revision`` is not the current revision when its turn comes.
            DaemonError(E_UNAVAILABLE): as :meth:`write`.
            MMError: as :meth:`MemoryStore.delete`.
        """
        return await self._queued(Queued(topic, None, if_revision, session_id))

    async def _queued(self, request: Queued) -> dict[str, Any]:
        self._queue.append(request)
        self._arrived.set()
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush())
        return await request.done

    async def _flush(self) -> None:
        """Apply the queue, one group at a time under :attr:`lock`, until it is empty."""
        group: list[Queued] = []
        try:
            last, took_ms = 0, 0.0  # the last group's size, and how long it took
            while self._queue:
                if last > 1:  # its writers come back a round trip later: wait a little for them
                    await gather(self._queue, self._arrived, last + len(self._queue), took_ms / 2)
                async with self.lock:
                    group = self._next_group()
                    started = time.perf_counter()
                    await self._apply(group)
                    last, took_ms = len(group), (time.perf_counter() - started) * 1000
        except BaseException as error:
            for request in (*group, *self._queue):
                request.settle(error)
            self._queue.clear()
            if not isinstance(error, Exception):
                raise
        finally:
            self._flusher = None

    def _next_group(self) -> list[Queued]:
        alone = self._current is None or self._current.memory_id != self.options.memory_id
        return next_group(self._queue, alone=alone)

    async def _apply(self, group: list[Queued]) -> None:
        """Apply one group (the caller holds :attr:`lock`) and answer each of its callers."""
        try:
            self._check_root()
        except DaemonError as error:
            for request in group:
                request.settle(error)
            return
        try:
            self._check_revision(group[0].if_revision)
        except DaemonError as error:
            group.pop(0).settle(error)
        if not group:
            return
        if group[0].write is None:
            request = group[0]
            try:
                outcome, revision = await asyncio.to_thread(self.prepare_delete, request.topic)
            except Exception as error:  # noqa: BLE001 - the caller gets it
                request.settle(error)
                return
            if outcome.pop("existed") or not revision.empty:
                self._install(revision, request.session_id, "delete")
            else:
                self.fingerprints = revision.fingerprints
            request.settle(self._finish(outcome, request.session_id))
            return
        writes = [(r.topic, r.write[0], r.write[1]) for r in group if r.write is not None]
        results = await asyncio.to_thread(self.prepare_writes, writes)
        for request, (result, made) in zip(group, results, strict=True):
            if isinstance(result, BaseException):
                request.settle(result)
                continue
            if made is not None:
                self._install(made, request.session_id, "write")
            request.settle(self._finish(result, request.session_id))
            if made is not None and result.get("allowed"):
                self.on_allowed(result)

    async def merge(self, topics: Sequence[str], into: str, *, summary: str | None = None,
                    if_revision: int | None = None, session_id: str | None = None, **allow: bool) -> dict[str, Any]:
        """A serialized merge of notes into one (:meth:`mmd.core.store.MemoryStore.merge`), one revision.

        ``allow``: ``allow_hidden``, ``allow_secret`` (a person's own merge). Returns the store's outcome plus
        ``revision`` (and ``pendingWrites`` in a session).

        Raises:
            DaemonError(E_CONFLICT): if ``if_revision`` is not the current revision.
            MMError: as :meth:`MemoryStore.merge`.
        """
        return await self._alone(lambda: self.store.merge(list(topics), into, summary=summary, number=self._next_number,
                                                          **allow), "merge", if_revision, session_id)

    async def rename(self, old: str, new: str, *, if_revision: int | None = None,
                     session_id: str | None = None) -> dict[str, Any]:
        """A serialized rename of a topic, links to it following (:meth:`mmd.core.store.MemoryStore.rename`),
        one revision (cause ``rename``).

        Raises:
            DaemonError(E_CONFLICT | E_UNAVAILABLE): as :meth:`write`.
            MMError: as :meth:`MemoryStore.rename` (refused: nothing changed).
        """
        self._check_root()
        return await self._alone(lambda: self.store.rename(old, new), "rename", if_revision, session_id)

    async def _alone(self, change: Callable[[], dict[str, Any]], cause: str, if_revision: int | None,
                     session_id: str | None) -> dict[str, Any]:
        """``change`` (a store operation on several files) under :attr:`lock`, then its revision installed."""
        async with self.lock:
            self._check_revision(if_revision)

            def run() -> tuple[dict[str, Any], Revision | None]:
                outcome = change()
                return outcome, self.prepare_load() if outcome["ok"] else None

            outcome, revision = await asyncio.to_thread(run)
            if revision is not None:
                self._install(revision, session_id, cause)
                if outcome.get("allowed"):
                    self.on_allowed({**outcome, "revision": self.revision})
            return self._finish(outcome, session_id)

    async def refresh(self, rels: Iterable[str]) -> Revision | None:
        """Pick up external edits among ``rels`` (root-relative paths) as a new revision.

        Files whose fingerprint matches what the daemon last wrote or read are
        ignored, so the daemon's own writes never come back as external.

        Returns:
            The installed revision, or None when nothing a reader sees changed.

        Raises:
            MMError(E_PARSE | E_IO): if the edited root cannot be loaded; the
                previous revision stays current.
        """
        rels = list(rels)
        async with self.lock:
            if self.guard is not None and self.guard.check() is not None:
                return None  # a lost root is not reloaded: readers keep the last revision
            if not self.external_change(rels):
                return None
            revision = await asyncio.to_thread(self.prepare_load)
            old = self.current
            if revision.empty and _meta(old) == _meta(revision.snapshot):
                self.fingerprints = revision.fingerprints
                return None
            self._install(revision, None, "external")
            return revision

    def adopt(self, revision: Revision, cause: str) -> bool:
        """Install a revision from :meth:`prepare_load` made while the caller holds :attr:`lock` (a git
        sync changed the files); announced with ``cause``. False when nothing a reader sees changed."""
        if revision.empty and _meta(self.current) == _meta(revision.snapshot):
            self.fingerprints = revision.fingerprints
            return False
        self._install(revision, None, cause)
        return True

    def _check_root(self) -> None:
        if self.guard is not None:
            self.guard.require()

    def _check_revision(self, if_revision: int | None) -> None:
        if if_revision is not None and if_revision != self.revision:
            raise DaemonError(DaemonCode.E_CONFLICT,
                              f"ifRevision {if_revision} is not the current revision {self.revision}",
                              revision=self.revision)

    def _install(self, revision: Revision, session_id: str | None, cause: str | None) -> None:
        self.previous, self._current = self._current, revision.snapshot
        self.fingerprints = revision.fingerprints
        if session_id is not None and session_id in self.sessions:
            self.sessions[session_id].pending_writes += 1
        if cause is not None:
            self.on_change(revision, cause)

    def _finish(self, outcome: dict[str, Any], session_id: str | None) -> dict[str, Any]:
        outcome["revision"] = self.revision
        if session_id is not None and session_id in self.sessions:
            outcome["pendingWrites"] = self.sessions[session_id].pending_writes
        return outcome

    def replace_options(self, options: MemoryOptions) -> None:
        """Swap the memory options (SIGHUP); the next :meth:`load` applies them to the snapshot."""
        self.options = options
        self.store.versions.close()
        self.store = self._store(options)
