"""Session-log ingestion: follow every enabled source folder and turn what agents said into review-queue candidates.

One worker thread (:class:`Ingestor`) owns the whole job for every source
(DSH, Claude Code, Codex), so the RPC loop stays responsive during a long
backfill:

1. wait until at least one enabled source folder exists (a missing folder is
   looked for at every wake, at most :data:`WAKE_MS` apart: one ``stat``),
2. backfill the logs already in each folder that appeared, every folder
   together, newest file first (progress per folder in ``daemon.status``); the
   logs read for the first time share :attr:`Ingestor.backfill_shown` places on
   show (:class:`~..queue_offers.Allowance`: the newest sessions' best),
3. follow changes in every present folder with one watchfiles watch (native
   backend), until a folder is deleted or replaced (it goes back to 1), a
   missing one appears (it is backfilled) or the daemon stops. When the OS
   refuses native watches (the inotify watch limit), the worker polls instead
   and says so in its health (``mode``, ``watchError``) and the log; a failing
   watch restarts after a pause doubling up to a minute (:mod:`..watching`).

Which files count is the sources' call (:class:`~.folders.Folders`): a path
goes to the deepest folder holding it and to the first of that folder's
sources whose ``classify`` says yes. When a log stops being wanted (deleted,
or replaced by a newer file beside it), its cursor is forgotten and the files
beside it are offered again. Reading one log into candidates is
:class:`~.harvest.Harvester`'s job; a re-read produces the same candidates
again and the queue drops them by identity.

A log of a session (its slices name a session id) that grew while the daemon
followed it, then stayed quiet for ``idle_s`` seconds while its source does
not report it live (:meth:`mmd.sources.Source.is_live`), is reported once as
ended (:class:`~.folders.EndedSession`: agent, session id, project, file).

Never: names a log format, writes memory files, publishes events itself
(callbacks do, on the loop), or reads ``os.environ``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mmd.core.clock import iso_ms, system_clock
from mmd.core.snapshot import Snapshot
from mmd.sources import SESSIONS_KIND, Source

from ..queue import ReviewQueue
from ..queue_offers import BACKFILL_SHOWN, Allowance
from ..statedb import CursorRow
from ..watching import POLL_DELAY_MS, Backoff, watch_or_poll
from .folders import EndedSession, Folder, Folders, FolderSetting
from .harvest import AddedBatch, Harvester, TrackedLog
from .health import BackfillHealth, IngestHealth

__all__ = ["AddedBatch", "EndedSession", "Ingestor"]

log = logging.getLogger("mmd.ingest")

WAKE_MS = 1000
"""The watch wakes at least this often (idle sessions, a missing or vanished folder), milliseconds."""
PROGRESS_S = 2.0
"""Backfill progress is logged at most this often, seconds."""


class Ingestor:
    """The ingestion worker of one daemon.

    Args:
        sources: the configured sources (kind, folder, enabled), one per kind of :data:`mmd.sources.FOLDERS`.
        queue: the review queue (candidates and cursors).
        notes: the current memory snapshot (None before the first load): candidates equal to a note are skipped.
        write_budget: the default write budget (code points) the digest cuts bodies to.
        exclude: the daemon's own paths (the memory root) never read even when inside a folder.
        idle_s: quiet seconds after which a followed session log counts as ended.
        on_added: called (in the worker thread) after each slice that added candidates.
        on_session_end: called (in the worker thread) once per ended session.
        on_distill: called (in the worker thread) once per followed session that has grown past
            :data:`~mmd.inject.guide.DISTILL_AFTER_PROMPTS` prompts of the person without a proposal of the agent
            (the ``distill`` nudge, issue 28); it decides whether the nudge is wanted.
        monotonic: the clock for idleness, seconds.
        debounce_ms, step_ms: watchfiles' grouping window and step, milliseconds.
    """

    def __init__(self, sources: Sequence[FolderSetting], queue: ReviewQueue, *, notes: Callable[[], Snapshot | None],
                 write_budget: Callable[[], int], exclude: Sequence[Path] = (), idle_s: float = 300.0,
                 on_added: Callable[[AddedBatch], None] = lambda batch: None,
                 on_session_end: Callable[[EndedSession], None] = lambda ended: None,
                 on_distill: Callable[[EndedSession], None] = lambda session: None,
                 monotonic: Callable[[], float] = time.monotonic, debounce_ms: int = 50, step_ms: int = 50) -> None:
        self.folders = Folders(sources, exclude)
        self.queue = queue
        self.idle_s = idle_s
        self._on_session_end = on_session_end
        self._on_distill = on_distill
        self._monotonic = monotonic
        self.debounce_ms, self.step_ms = debounce_ms, step_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tracked: dict[str, TrackedLog] = {}
        self._following = False
        dsh = next((f for f in self.folders.all if f.kind == SESSIONS_KIND), None)
        self.health = IngestHealth(str(dsh.root) if dsh is not None else "",
                                   sources=[f.health for f in self.folders.all])
        self.backoff = Backoff()
        self.harvester = Harvester(queue, notes=notes, write_budget=write_budget, health=self.health,
                                   on_added=on_added, stop=self._stop)
        self.backfill_shown: Callable[[], int] = lambda: BACKFILL_SHOWN
        """Rule drafts a backfill's new logs show in all (``candidates.backfillShown``; the composition root may
        replace it)."""

    # --- life ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker thread."""
        for f in self.folders.enabled():
            if self.folders.own(str(f.root)):
                log.warning("ingest.folder_inside_own kind=%s folder=%s (nothing there will be read)", f.kind, f.root)
        self._thread = threading.Thread(target=self._run, name="mmd-ingest", daemon=True)
        self.health.running = True
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the worker and wait up to ``timeout_s`` seconds for it (blocking: call it in a thread)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                log.warning("ingest.stop_timeout: the worker is still busy; leaving it")
        self.health.running = False
        self.health.phase = "stopped"
        for f in self.folders.enabled():
            f.health.phase = "stopped"

    def _run(self) -> None:
        try:
            self.harvester.rows = self.queue.db.cursors()
            self.queue.refresh_counts()
        except Exception as error:  # noqa: BLE001 - reported in health; the daemon serves on
            self._failed("ingest.db_failed", error)
        while not self._stop.is_set():
            try:
                if not self._wait_for_folders():
                    break
                self._backfill([f for f in self.folders.watched() if not f.backfilled])
                self._follow()
            except Exception as error:  # noqa: BLE001 - the watch restarts; the daemon serves on
                self._failed("ingest.watch_failed", error, repeat=True)
                self._stop.wait(self.backoff.next_s())
        self.health.running = False

    def _failed(self, event: str, error: BaseException, path: str | None = None, repeat: bool = False) -> None:
        """Count a failure; with ``repeat``, the same failure as the last one is logged at debug level only."""
        text = f"{path + ': ' if path else ''}{type(error).__name__}: {error}"
        self.health.errors += 1
        level = logging.DEBUG if repeat and text == self.health.last_error else logging.ERROR
        self.health.last_error = text
        folder = self.folders.folder_of(path) if path else None
        if folder is not None:
            folder.health.errors += 1
            folder.health.last_error = text
        log.log(level, "%s path=%s error=%r", event, path, f"{type(error).__name__}: {error}")

    # --- the folders -----------------------------------------------------------------------------

    def _watch(self, paths: Sequence[Path]) -> Iterator[set[tuple[Any, str]]]:
        def report(failure: str | None) -> None:
            if failure is not None and failure != self.health.watch_error:
                log.error("ingest.native_refused paths=%s error=%r; polling every %d ms instead",
                          ",".join(map(str, paths)), failure, POLL_DELAY_MS)
            self.health.watch_error = failure
            self.health.mode = "native" if failure is None else "polling"

        return watch_or_poll(paths, recursive=True, report=report, watch_filter=None, debounce=self.debounce_ms,
                             step=self.step_ms, stop_event=self._stop, rust_timeout=WAKE_MS, yield_on_timeout=True,
                             raise_interrupt=False)

    def _look(self) -> bool:
        """Note which enabled folders exist now; True when that changed (one appeared, vanished or was replaced)."""
        changed = False
        for f in self.folders.enabled():
            inode = f.present_inode()
            if inode is not None and inode == f.inode:
                continue
            if inode is None and f.health.phase == "waiting":
                continue
            changed = changed or inode is not None or f.inode is not None
            if f.inode is not None:
                log.warning("ingest.folder_gone kind=%s folder=%s (waiting for it to come back)", f.kind, f.root)
                self._drop_tracked(f)
            f.inode, f.backfilled = inode, False
            f.health.folder_present = inode is not None
            f.health.phase = "waiting" if inode is None else "backfill"
            if inode is None:
                log.info("ingest.waiting kind=%s folder=%s (missing; read when it appears)", f.kind, f.root)
        dsh = self.folders.by_source.get(SESSIONS_KIND)
        self.health.folder_present = dsh is not None and dsh.inode is not None
        return changed

    def _wait_for_folders(self) -> bool:
        """Block until at least one enabled folder exists (True) or the worker stops (False)."""
        self._look()
        while not self.folders.watched():
            self.health.phase = "waiting"
            if self._stop.wait(WAKE_MS / 1000):
                return False
            self._look()
        return not self._stop.is_set()

    def _drop_tracked(self, folder: Folder) -> None:
        """A folder vanished: stop following its logs (their cursors stay until its next backfill)."""
        for path in [p for p, t in self._tracked.items() if self.folders.by_source.get(t.source.name) is folder]:
            del self._tracked[path]
        folder.health.files = 0
        self.health.files_tracked = len(self._tracked)

    # --- backfill and follow --------------------------------------------------------------------

    def _backfill(self, folders: list[Folder]) -> None:
        """Read every log already in ``folders``, newest first; forget cursors of their logs that are gone."""
        if not folders:
            return
        self.health.phase = "backfill"
        self._following = False
        started = self._monotonic()
        b0, c0 = self.health.bytes_read, self.health.candidates_added
        found: list[tuple[int, str, Source, Folder]] = []
        for f in folders:
            f.health.phase = "backfill"
            unread: list[str] = []
            logs = self.folders.scan(f, unread)
            if unread:
                log.info("ingest.files_not_read kind=%s folder=%s files=%d first=%s (subagent logs, or logs not laid "
                         "out as the agent writes them)", f.kind, f.root, len(unread), min(unread))
            sizes = 0
            for path, source in logs:
                st = _stat(path)
                sizes += st.st_size if st else 0
                found.append((st.st_mtime_ns if st else 0, path, source, f))
            f.health.backfill = BackfillHealth(False, 0, 0, 0, None, len(logs), sizes)
            self._forget_gone(f, {path for path, _ in logs})
            log.info("ingest.backfill_start kind=%s folder=%s files=%d bytes=%d", f.kind, f.root, len(logs), sizes)
        found.sort(key=lambda item: (-item[0], item[1]))
        last = started
        allowance = self.harvester.allowance = Allowance(self.backfill_shown())
        try:
            for n, (_, path, source, f) in enumerate(found, 1):
                if self._stop.is_set():
                    return
                last = self._backfill_one(n, found, path, source, f, last, (b0, c0))
        finally:
            self.harvester.allowance = None
        if allowance.held:
            log.info("ingest.backfill_held drafts=%d shown=%d (the newest sessions' best are shown; the rest are "
                     "expired: `mmctl queue list --status expired` lists them)", allowance.held,
                     len(allowance.charged))
        seconds = round(self._monotonic() - started, 3)
        for f in folders:
            b = f.health.backfill
            f.health.backfill = BackfillHealth(True, b.files, b.bytes, b.candidates, seconds, b.files_total,
                                               b.bytes_total)
            f.backfilled = True
        total = BackfillHealth(True, len(found), self.health.bytes_read - b0, self.health.candidates_added - c0,
                               seconds)
        self.health.backfill = total
        log.info("ingest.backfill_done files=%d bytes=%d candidates=%d seconds=%.3f", len(found), total.bytes,
                 total.candidates, seconds)

    def _backfill_one(self, n: int, found: Sequence[tuple[int, str, Source, Folder]], path: str, source: Source,
                      f: Folder, last: float, before: tuple[int, int]) -> float:
        """Read the ``n``-th log of a backfill, count it in its folder's progress and log the progress at most
        every :data:`PROGRESS_S` seconds; returns when progress was last logged (monotonic seconds)."""
        done = self._ingest(path, source, f)
        b = f.health.backfill
        f.health.backfill = BackfillHealth(False, b.files + 1, b.bytes + done[0], b.candidates + done[1], None,
                                           b.files_total, b.bytes_total)
        now = self._monotonic()
        if now - last < PROGRESS_S:
            return last
        log.info("ingest.backfill files=%d/%d bytes=%d candidates=%d", n, len(found),
                 self.health.bytes_read - before[0], self.health.candidates_added - before[1])
        return now

    def _forget_gone(self, folder: Folder, present: set[str]) -> None:
        """Forget the stored cursors of ``folder``'s sources for logs under it that are no longer there."""
        names = {s.name for s in folder.sources}
        for path, row in list(self.harvester.rows.items()):
            if row.kind in names and folder.holds(path) and path not in present:
                self._forget(path)

    def _follow(self) -> None:
        """Follow changes in every watched folder until the set of present folders changes or the worker stops."""
        watched = self.folders.watched()
        self.health.phase = "following"
        for f in watched:
            f.health.phase = "following"
        caught_up = False
        for changes in self._watch([f.root for f in watched]):
            self._following = True
            self.backoff.reset()
            if changes:
                self._changed(sorted({p for _, p in changes}))
            if not caught_up:
                # Trigger: the first wake of a new watch. Why: lines appended between the backfill's scan
                # and the watch's start raised no event. Outcome: one catch-up pass (unchanged files cost a stat).
                caught_up = True
                for f in watched:
                    for path, source in self.folders.scan(f):
                        self._ingest(path, source, f)
            self._check_idle()
            if self._stop.is_set() or self._look():
                return

    def _changed(self, paths: list[str]) -> None:
        """Read what the watch reported (files, or folders created or moved in)."""
        at = iso_ms(system_clock())
        self.health.last_event_at = at
        for path in paths:
            if self._stop.is_set():
                return
            folder = self.folders.folder_of(path)
            if folder is None:
                continue
            folder.health.last_event_at = at
            if os.path.isdir(path) and not os.path.islink(path):
                for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
                    dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                    for name in sorted(filenames):
                        self._ingest(os.path.join(dirpath, name))
            else:
                self._ingest(path)

    # --- one log ---------------------------------------------------------------------------------

    def _forget(self, path: str) -> None:
        t = self._tracked.pop(path, None)
        if t is not None:
            folder = self.folders.by_source.get(t.source.name)
            if folder is not None:
                folder.health.files = max(0, folder.health.files - 1)
        if self.harvester.rows.pop(path, None) is not None:
            self.queue.db.drop_cursor(path)
        self.health.files_tracked = len(self._tracked)

    def _known(self) -> set[str]:
        return {*self._tracked, *self.harvester.rows}

    def _ingest(self, path: str, source: Source | None = None, folder: Folder | None = None) -> tuple[int, int]:
        """Read what is new in one path, if a source reads it now; never raises.

        Args:
            path: the file (absolute).
            source, folder: its source and folder when the caller has just classified it, else None.

        Returns:
            (log bytes consumed, candidates added).
        """
        c0 = self.health.candidates_added
        try:
            folder = folder or self.folders.folder_of(path)
            source = source or self.folders.source_of(path, folder)
            if source is None or folder is None:
                self._unwanted(path, folder)
                return 0, 0
            t = self._tracked.get(path)
            if t is None:
                if self._following:
                    self._forget_replaced(path)
                t = self._track(path, source, folder, self.harvester.rows.get(path))
            consumed = self.harvester.read(t)
            added = self.health.candidates_added - c0
            folder.health.bytes_read += consumed
            folder.health.candidates_added += added
            if consumed and self._following:
                t.grew_at, t.ended = self._monotonic(), False
                self._maybe_distill(t)
            return consumed, added
        except FileNotFoundError:
            self._forget(path)  # gone between the event and the read
        except Exception as error:  # noqa: BLE001 - one bad log never stops the others
            self._failed("ingest.log_failed", error, path)
        return 0, self.health.candidates_added - c0

    def _unwanted(self, path: str, folder: Folder | None) -> None:
        """``path`` is no log read now: forget it (and, if it is gone, what was under it); offer the files beside it."""
        if path in self._tracked or path in self.harvester.rows:
            self._forget(path)  # deleted, or a newer file beside it took over
        if not os.path.exists(path):  # a folder deleted or moved out: its logs went with it
            under = path.rstrip(os.sep) + os.sep
            for gone in [p for p in self._known() if p.startswith(under)]:
                self._forget(gone)
            return
        if folder is None or not self.folders.visible(folder, path):
            return
        # Trigger: a file that exists but no source reads now (e.g. an older generation, a lock, a temp file).
        # Why: the file that replaced it may not have raised its own event yet. Outcome: the new files beside it
        # are read now; the ones already followed are left to their own events.
        where = os.path.dirname(path)
        try:
            names = sorted(os.listdir(where))
        except OSError:
            return
        for name in names:
            sibling = os.path.join(where, name)
            if sibling != path and sibling not in self._tracked and not name.startswith("."):
                source = self.folders.source_of(sibling, folder)
                if source is not None:
                    self._ingest(sibling, source, folder)

    def _forget_replaced(self, path: str) -> None:
        """A log is new to us while following: stop following the files beside it that no source reads any more."""
        where = os.path.dirname(path)
        for old in [p for p in self._known() if p != path and os.path.dirname(p) == where]:
            if self.folders.source_of(old) is None:
                self._forget(old)

    def _track(self, path: str, source: Source, folder: Folder, row: CursorRow | None) -> TrackedLog:
        """Follow ``path`` from its stored cursor (the adapter reads the JSON; one it does not know restarts it)."""
        t = self._tracked[path] = TrackedLog(path, source, row.session_id if row is not None else None,
                                             row.cursor if row is not None else None)
        folder.health.files += 1
        self.health.files_tracked = len(self._tracked)
        return t

    def _maybe_distill(self, t: TrackedLog) -> None:
        """The session's one distillation nudge, once it grew past the prompts that earn it without a proposal."""
        from mmd.candidates.proposals import PROPOSAL_RULE
        from mmd.inject.guide import DISTILL_AFTER_PROMPTS

        if t.distilled or t.session_id is None or t.prompts <= DISTILL_AFTER_PROMPTS:
            return
        t.distilled = True
        proposed = self.queue.db.conn().execute("SELECT 1 FROM candidates WHERE rule = ? AND session_id = ? LIMIT 1",
                                                (PROPOSAL_RULE, t.session_id)).fetchone()
        if proposed is None:
            self._on_distill(EndedSession(t.source.name, t.session_id, t.project, t.path))

    # --- ended sessions -------------------------------------------------------------------------

    def _check_idle(self) -> None:
        """Report followed session logs quiet for ``idle_s`` that their source does not report live."""
        now = self._monotonic()
        for t in list(self._tracked.values()):
            if t.session_id is None or t.ended or t.grew_at is None or now - t.grew_at < self.idle_s:
                continue
            if t.source.is_live(Path(t.path)):
                continue  # a writer still holds the log: it is only pausing
            t.ended = True
            self.health.sessions_ended += 1
            log.info("session.ended agent=%s session=%s project=%s file=%s idle_s=%.1f", t.source.name,
                     t.session_id, t.project, t.path, now - t.grew_at)
            self._on_session_end(EndedSession(t.source.name, t.session_id, t.project, t.path))


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None
