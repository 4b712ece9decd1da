"""Memory reaches the agent, daemon side: injections per client, review-date events, exported blocks (issue 14).

Use-cases over the pure layer :mod:`mmd.inject`:

- ``memory.inject {client, maxBytes?, commit?}``: the plan of
  :func:`mmd.inject.delta.plan_injection` against the client's committed view
  (modes ``baseline`` | ``delta`` | ``reminder`` | ``none``), with a ``token``.
  The view advances only when the text reached the agent: ``commit: true``, or
  ``memory.injected {client, token}`` afterwards. A client that has not
  confirmed for ``daemon.injectTtlDays`` days is forgotten and gets a baseline.
- ``memory.due {withinDays?}`` and one ``memory/due`` event per topic and date
  (remembered in state.db, so a restart does not repeat it); the due list
  rides along in every ``memory/nudge``.
- ``[export] files``: after each revision (debounced by :data:`EXPORT_DEBOUNCE_S`,
  at most :data:`EXPORT_MAX_DELAY_S` behind) each file's ``<!-- mm:begin -->``
  block gets the agents' guide and the baseline (:func:`mmd.inject.guide.with_guide`);
  :func:`mmd.inject.blocks.write_block` keeps every byte outside the block, hand
  edits made meanwhile included.

Each new revision is *prepared* (its content hashes, reusing the previous
revision's for unchanged notes) in a worker thread as soon as it is installed,
so an injection costs a dictionary comparison, not a hashing pass.

Issue 29: a revision is prepared as :func:`mmd.inject.held.held_view` shows it (a topic a sync or an outside
edit brought and the screen flagged is a "held for review" line until a person accepts it: the root's
``.mmd/held.json``), a delta names the topics a sync or an outside edit changed (:attr:`Injector.origins`), and
every text given (an injection, an export block) passes a last guard: secrets redacted, hidden text escaped.

Owns: the client-key rules, the token, the TTL cut-off, the due announcements
and the export schedule. Never: renders text itself, opens sockets (events go
through the ``publish`` callable), or blocks the event loop on a big root:
the hashing, the planning and the file writes run in worker threads.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import aiofiles.os

from mmd.core.clock import iso_ms, parse_iso_ms
from mmd.core.errors import ErrorCode, MMError
from mmd.core.model import IndexEntry
from mmd.core.snapshot import Snapshot
from mmd.core.uri import uri_for
from mmd.inject.baseline import DEFAULT_MAX_BYTES, render_baseline
from mmd.inject.blocks import write_block
from mmd.inject.delta import ClientView, Prepared, plan_injection, prepare
from mmd.inject.due import DueReport, due_topics
from mmd.inject.guide import with_guide
from mmd.inject.held import HeldTopics, held_view
from mmd.inject.scopes import join_texts
from mmd.screen.hidden import escape_hidden
from mmd.screen.secrets import redact
from mmd.wire.events import MEMORY_DUE, DueItem
from mmd.wire.protocol import DaemonCode, DaemonError

from .injectdb import InjectDB
from .state import MemoryState
from .statedb import StateDB

__all__ = ["CLIENT_MAX_CHARS", "EXPORT_DEBOUNCE_S", "EXPORT_MAX_DELAY_S", "USES_SAVE_EVERY", "Injector", "check_client",
           "guarded"]

log = logging.getLogger("mmd.daemon")

CLIENT_MAX_CHARS = 200
"""Longest client key, in code points."""
EXPORT_DEBOUNCE_S = 0.5
"""Quiet time after a revision before the export files are refreshed, seconds."""
EXPORT_MAX_DELAY_S = 5.0
"""Longest an export lags behind a stream of revisions, seconds."""
_write_block = aiofiles.os.wrap(write_block)
""":func:`mmd.inject.blocks.write_block` run by aiofiles (its read, its atomic write and fsync off the loop)."""
USES_SAVE_EVERY = 20
"""Reads of notes counted before the counts are stored (and at stop)."""


def check_client(client: object) -> str:
    """A client key: 1 to 200 code points, no control characters (an agent's session id, a hook's key).

    Raises:
        MMError(E_INVALID): otherwise.
    """
    if not isinstance(client, str) or not client.strip():
        raise MMError(ErrorCode.E_INVALID, "client must be a non-blank string (an agent session id, for example)")
    if len(client) > CLIENT_MAX_CHARS:
        raise MMError(ErrorCode.E_INVALID, f"client must be at most {CLIENT_MAX_CHARS} characters, got {len(client)}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in client):
        raise MMError(ErrorCode.E_INVALID, "client must not contain control characters")
    return client


class Injector:
    """The injection use-cases of one daemon.

    Args:
        state: the memory state (current snapshot, clock).
        db: the open state database.
        publish: sends an event (``topic, payload``); called on the loop's thread only.
        ttl_days: returns ``daemon.injectTtlDays`` (a SIGHUP may change it).
        export_files: returns the ``[export] files`` paths.
        scope: the root's scope (``user`` or a project key, :mod:`.home`): a project root keeps its clients'
            views and its due announcements apart from the user root's in the shared tables.
        views: the injection rows to share (one per state database), else a new one.
    """

    def __init__(self, state: MemoryState, db: StateDB, publish: Callable[[str, dict[str, Any]], Any],
                 ttl_days: Callable[[], int], export_files: Callable[[], tuple[Path, ...]], *,
                 scope: str = "user", views: InjectDB | None = None) -> None:
        self.state = state
        self.scope = scope
        self.views = views if views is not None else InjectDB(db)
        self._publish = publish
        self._ttl_days = ttl_days
        self._export_files = export_files
        self._prepared: tuple[Snapshot, Prepared, str, tuple[IndexEntry, ...], Any] | None = None
        self.held = HeldTopics(state.options.root)
        """The root's held topics (:mod:`mmd.inject.held`): shown as held, never as their text."""
        self.origins: dict[str, str] = {}
        """Topic → what last changed it when that was no write through mmd (``sync`` | ``outside edit``): a delta
        names it. Kept for the daemon's life."""
        self._announced: set[tuple[str, str]] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._warming = False
        self._export_timer: asyncio.TimerHandle | None = None
        self._export_since: float | None = None
        self._uses: dict[str, int] | None = None
        self._reads: dict[str, int] = {}
        self._reads_lock = threading.Lock()
        self._saving = False
        self.exports = 0
        """How many export passes ran (``daemon.status``)."""
        self.project_of: Callable[[Path], Injector | None] = lambda path: None
        """The injector of the project root an export file's folder belongs to (set by the daemon: the home's)."""
        self.export_failures = 0
        """Files an export pass could not write, summed over the passes (``daemon.status``)."""
        self.export_error: str | None = None
        """``<file>: <why>`` of the last file a pass could not write; None once a pass wrote every file."""

    # --- preparing revisions (worker thread, under views.lock) ----------------------------------------

    def _prepare(self, snapshot: Snapshot) -> tuple[Prepared, str, tuple[IndexEntry, ...]]:
        """``(prepared form, its map key, entries carrying a review date)`` of ``snapshot``, built once."""
        current, holds = self._prepared, self.held.get()
        if current is not None and current[0] is snapshot and current[4] == self.held.key:
            return current[1], current[2], current[3]
        prep = prepare(held_view(snapshot, holds))
        key = secrets.token_hex(8)
        self.views.remember(key, prep.hashes, current_of=self.scope)
        reviewed = tuple(e for e in prep.order if e.review_after is not None) if prep.reviews else ()
        self._prepared = (snapshot, prep, key, reviewed, self.held.key)
        return prep, key, reviewed

    def _warm(self, snapshot: Snapshot, now_iso: str) -> Prepared | None:
        """Prepare ``snapshot`` unless a newer revision replaced it; store its map when clients exist."""
        if snapshot is not self.state.current:
            return None
        with self.views.lock:
            prep, key, _ = self._prepare(snapshot)
            try:
                if self.views.any_clients():
                    self.views.store_map(key, now_iso)
            except sqlite3.Error as error:  # the next injection stores it (or reports the failure)
                log.error("inject.store_failed error=%s", error)
            return prep

    # --- memory.inject / memory.injected ---------------------------------------------------------------

    async def inject(self, client: Any, *, max_bytes: int | None = None, commit: bool = False,
                     reset: bool = False) -> dict[str, Any]:
        """``memory.inject`` → ``{mode, text, added, updated, removed, unchanged, reminded, bytes, token,
        revision, committed}`` (see :meth:`mmd.inject.delta.Injection.to_json`).

        ``reset`` plans as for a new client (a baseline): the agent lost what it was shown (``/clear``,
        a compaction). The stored view still changes only on commit or confirmation.

        Raises:
            MMError(E_INVALID): for a bad client key or ``maxBytes`` (not positive, or too small for a heading).
        """
        check_client(client)
        snapshot, now = self.state.current, self.state.now_iso()
        result = await asyncio.to_thread(self._inject, snapshot, self._key(client), max_bytes, commit, reset, now)
        return {**result, "scope": self.scope}

    def _key(self, client: str) -> str:
        """The client's key in the shared tables: the client itself for the user root (as before the memory home),
        ``<client>\x1f<scope>`` for a project root (a client key never holds a control character)."""
        return client if self.scope == "user" else f"{client}\x1f{self.scope}"

    def _inject(self, snapshot: Snapshot, client: str, max_bytes: int | None, commit: bool, reset: bool,
                now: str) -> dict[str, Any]:
        with self.views.lock:
            prep, key, _ = self._prepare(snapshot)
            row = None if reset else self.views.client(client)
            view = None
            if row is not None and row.committed_at >= self.cutoff(now):
                hashes = self.views.hashes(row.view_key)
                view = None if hashes is None else ClientView(hashes, row.reminded)
            plan = plan_injection(view, prep, today=_today(now),
                                  max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes,
                                  uses=self._read_counts() if view is None else None, origins=self.origins)
            token = secrets.token_urlsafe(12)
            self.views.store_map(key, now)
            if commit:
                self.views.commit(client, token, key, plan.view.reminded, now)
            else:
                self.views.put_pending(client, token, key, plan.view.reminded, now)
        out = plan.to_json()
        out["text"] = guarded(out["text"])
        return {**out, "token": token, "revision": snapshot.revision, "committed": commit}

    # --- what agents read (a baseline's order, issue 28) ---------------------------------------------

    def _read_counts(self) -> dict[str, int]:
        """topic → reads: the saved counts (loaded once; worker thread, under views.lock) plus the reads since."""
        if self._uses is None:
            try:
                self._uses = self.views.uses(self.scope)
            except sqlite3.Error as error:  # counted from now on: the order is by recency meanwhile
                log.error("inject.uses_failed error=%s", error)
                self._uses = {}
        with self._reads_lock:
            fresh = dict(self._reads)
        return {t: self._uses.get(t, 0) + fresh.get(t, 0) for t in {*self._uses, *fresh}}

    def read(self, topic: str) -> None:
        """An agent read the note ``topic`` (``memory.read``; any thread): it counts toward a baseline's order
        (:func:`mmd.inject.content.use_order`); the counts are saved every :data:`USES_SAVE_EVERY` reads and at
        stop."""
        with self._reads_lock:
            self._reads[topic] = self._reads.get(topic, 0) + 1
            due = sum(self._reads.values()) >= USES_SAVE_EVERY
        if due and not self._saving:
            self._saving = True
            self._spawn(asyncio.to_thread(self.save_uses))

    def save_uses(self) -> None:
        """Store the read counts (worker thread); on a failure they stay in memory and are tried again later."""
        with self.views.lock:
            counts = self._read_counts()
            try:
                self.views.save_uses(self.scope, counts)
            except sqlite3.Error as error:
                log.error("inject.uses_save_failed error=%s", error)
                return
            finally:
                self._saving = False
            with self._reads_lock:
                for topic, count in list(self._reads.items()):
                    left = count - (counts.get(topic, 0) - (self._uses or {}).get(topic, 0))
                    if left > 0:
                        self._reads[topic] = left
                    else:
                        del self._reads[topic]
            self._uses = counts

    async def injected(self, client: Any, token: Any) -> dict[str, Any]:
        """``memory.injected {client, token}`` → ``{ok: true, client, token}``: the text of ``token`` reached
        the agent, so the client's view becomes that injection's. Confirming the last confirmed token again is
        a no-op (safe to resend).

        Raises:
            MMError(E_INVALID): for a bad client key.
            DaemonError(E_NOT_FOUND): when ``token`` is not a pending injection of ``client`` (never given,
                superseded by a newer confirmation, or expired); ask ``memory.inject`` again.
        """
        check_client(client)
        now = self.state.now_iso()

        def confirm() -> bool:
            with self.views.lock:
                return self.views.confirm(self._key(client), token, now)

        if not await asyncio.to_thread(confirm):
            raise DaemonError(DaemonCode.E_NOT_FOUND,
                              f"no pending injection {token!r} for client {client!r} (superseded by a newer "
                              "confirmation, expired, or never given); call memory.inject again")
        return {"ok": True, "client": client, "token": token}

    def cutoff(self, now_iso: str) -> str:
        """The ISO time before which a client's last confirmation is too old."""
        return iso_ms(parse_iso_ms(now_iso) - timedelta(days=self._ttl_days()))

    def expire(self) -> int:
        """Forget clients idle for ``injectTtlDays`` and the maps nobody points at; how many clients went.

        Raises:
            sqlite3.Error: if the rows cannot be deleted.
        """
        with self.views.lock:
            return self.views.expire(self.cutoff(self.state.now_iso()))

    # --- review dates ---------------------------------------------------------------------------------

    async def due(self, within_days: int | None = None) -> dict[str, Any]:
        """``memory.due {withinDays?}`` → ``{today, due: [{topic, reviewAfter, daysLeft}], invalid: [{topic,
        value}]}``, most overdue first; ``invalid`` lists hand-written review values that are no date.

        Raises:
            MMError(E_INVALID): if ``withinDays`` is negative.
        """
        snapshot, now = self.state.current, self.state.now_iso()
        report = await asyncio.to_thread(due_topics, snapshot.entries, _today(now), within_days or 0)
        return {"today": _today(now).isoformat(), **report.to_json()}

    def due_now(self) -> list[DueItem]:
        """The topics due today or earlier, for ``memory/nudge`` (cheap once the revision is prepared)."""
        return [d.to_json() for d in self._due_report().due]  # type: ignore[misc]

    def _due_report(self) -> DueReport:
        current, snapshot = self._prepared, self.state.current
        entries = current[3] if current is not None and current[0] is snapshot else snapshot.entries
        return due_topics(entries, _today(self.state.now_iso()))

    def announce_due(self) -> int:
        """Publish ``memory/due`` for each due topic not yet announced at its date; how many were sent.

        Runs on the loop's thread (it publishes). Announcements are recorded in
        state.db first, so each (topic, date) is sent once, across restarts.
        """
        report = self._due_report()
        if not report.due:
            return 0
        if self._announced is None:
            rows = self.views.db.conn().execute("SELECT topic, review_after FROM due_announced").fetchall()
            self._announced = {(r["topic"], r["review_after"]) for r in rows}
        prefix = "" if self.scope == "user" else f"{self.scope}/"  # a topic never holds '/': no root's pairs collide
        sent = 0
        now, memory_id = self.state.now_iso(), self.state.current.memory_id
        for item in report.due:
            pair = (prefix + item.topic, item.review_after.isoformat())
            if pair in self._announced:
                continue
            try:
                self.views.announce(*pair, now)
            except sqlite3.Error as error:  # not recorded, so not sent: the next check tries again
                log.error("due.record_failed topic=%s error=%s", item.topic, error)
                continue
            self._announced.add(pair)
            self._publish(MEMORY_DUE, {"topic": item.topic, "uri": uri_for(memory_id, item.topic),
                                       "reviewAfter": pair[1], "daysLeft": item.days_left, "scope": self.scope})
            sent += 1
        return sent

    # --- after each revision ---------------------------------------------------------------------------

    def revision_installed(self, snapshot: Snapshot, cause: str | None = None, topics: tuple[str, ...] = ()) -> None:
        """A new revision is current (loop thread): prepare it, announce due topics, schedule the export.

        ``topics`` it added or updated, by ``cause`` (``sync`` | ``external`` name where they came from in the next
        deltas, :attr:`origins`; any other cause, a write through mmd, clears that). Revisions that come faster than
        they are prepared (a group commit installs several at once) are prepared once, as the newest: one
        preparation is in flight at a time.
        """
        origin = {"sync": "sync", "external": "outside edit"}.get(cause or "")
        for topic in topics:
            if origin is None:
                self.origins.pop(topic, None)
            else:
                self.origins[topic] = origin
        self._request_warm()
        if self._export_files():
            self._schedule_export()

    def _request_warm(self) -> None:
        if not self._warming:
            self._warming = True
            self._spawn(self._after_revision())

    async def _after_revision(self) -> None:
        """Prepare the current revision (again, while newer ones were installed meanwhile), then announce."""
        try:
            while await asyncio.to_thread(self._warm, self.state.current, self.state.now_iso()) is None:
                pass
        finally:
            self._warming = False
        self.announce_due()

    def check_due(self) -> None:
        """The periodic check (a date may come without a revision): prepare if needed, then announce."""
        self._request_warm()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("inject.task_failed error=%r", task.exception())

    def _schedule_export(self) -> None:
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        if self._export_since is None:
            self._export_since = now
        if self._export_timer is not None:
            self._export_timer.cancel()
        delay = min(EXPORT_DEBOUNCE_S, max(0.0, self._export_since + EXPORT_MAX_DELAY_S - now))
        self._export_timer = loop.call_later(delay, self._fire_export)

    def _fire_export(self) -> None:
        self._export_timer, self._export_since = None, None
        self._spawn(self.export_now())

    def _export_text(self, snapshot: Snapshot) -> str:
        """The baseline the export blocks get (worker thread: preparing a revision is CPU work)."""
        with self.views.lock:
            prep, _, _ = self._prepare(snapshot)
        return render_baseline(prep.order, memory_id=prep.memory_id, ordered=True, command=prep.command,
                               bodies=prep.bodies).text

    async def export_now(self) -> int:
        """Write the current baseline into every ``[export] files`` block; how many changed.

        The baseline is rendered in a worker thread and each file is read and written through aiofiles (its
        thread pool): the loop never waits on a disk. A file that cannot be written (broken markers, a
        missing folder) or that may not be (a symlink out of the account's home, a FIFO, a read-only or another
        user's file: :mod:`mmd.core.userfile`) is logged and left as it was; the others are still written.
        """
        snapshot = self.state.current
        text = await asyncio.to_thread(self._export_text, snapshot)
        changed, failed = 0, None
        for path in self._export_files():
            own = self.project_of(path)  # a file in a project's folder gets that project's memory first
            block = with_guide(text if own is None else join_texts(
                [(own.scope, await asyncio.to_thread(own._export_text, own.state.current)), (self.scope, text)],
                str(path.parent)))
            block = await asyncio.to_thread(guarded, block)
            try:
                changed += await _write_block(path, block)
            except MMError as error:
                log.error("export.failed file=%s error=%s", path, error.message)
                self.export_failures += 1
                failed = f"{path}: {error.message}"
        self.export_error = failed
        self.exports += 1
        log.info("export.done revision=%d files=%d changed=%d", snapshot.revision, len(self._export_files()),
                 changed)
        return changed

    def export_status(self) -> dict[str, Any] | None:
        """``{files, runs, failures, lastError}`` of the ``[export]`` blocks (``daemon.status``); None without any."""
        files = self._export_files()
        if not files:
            return None
        return {"files": [str(f) for f in files], "runs": self.exports, "failures": self.export_failures,
                "lastError": self.export_error}

    async def stop(self) -> None:
        """Run a scheduled export now, store the read counts, then wait for the running tasks (exports finish their
        files)."""
        if self._reads:
            self._spawn(asyncio.to_thread(self.save_uses))
        if self._export_timer is not None:
            self._export_timer.cancel()
            self._export_timer = None
            self._spawn(self.export_now())
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def guarded(text: str) -> str:
    """The last guard on a text an agent or an export is given: secrets redacted, hidden text escaped (what the
    write door and the holds let through already is never a secret nor hidden text; a person's own allowed
    secret is redacted here too)."""
    return escape_hidden(redact(text))


def _today(now_iso: str) -> date:
    """The UTC date of an ISO-8601 UTC time."""
    return date.fromisoformat(now_iso[:10])
