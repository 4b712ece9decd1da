"""Session-log ingestion: watch the sessions folder and turn what agents said into review-queue candidates.

One worker thread (:class:`Ingestor`) owns the whole job, so the RPC loop
stays responsive during a long backfill:

1. wait for the sessions folder (watching its nearest existing ancestor),
2. backfill every log already there (progress in the log: files, bytes, candidates),
3. follow changes with watchfiles' native backend, until the folder is deleted
   or replaced (then back to 1) or the daemon stops. When the OS refuses native
   watches (the inotify watch limit), the worker polls instead and says so in its
   health (``mode``, ``watchError``) and the log; a failing watch restarts after
   a pause doubling up to a minute (:mod:`..watching`).

Which files count is the sources' call: a path is offered to each source of
the folder in turn (:data:`mmd.sources.SESSIONS_FOLDER`) and the first whose
``classify`` says yes reads it (the DSH adapter takes the newest generation of
each session, the ``other`` adapter other ``*.jsonl`` / ``*.json`` / ``*.md``
files); hidden paths and the daemon's own root are never offered. When a log
stops being wanted (deleted, or replaced by a newer file beside it), its
cursor is forgotten and the files beside it are offered again. Reading one
log into candidates is :class:`~.harvest.Harvester`'s job. A re-read (shrink,
replaced file, new generation) produces the same candidates again and the
queue drops them by identity (:func:`mmd.candidates.candidate_key`);
candidates whose body equals an existing note's are skipped.

Utterances are digested as soon as their lines are complete (a torn tail is
never parsed). A log of a session (its slices name a session id) that grew
while the daemon followed it, then stayed quiet for ``idle_s`` seconds while
its source does not report it live (:meth:`mmd.sources.Source.is_live`), is
reported once as ended.

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
from mmd.sources import SESSIONS_FOLDER, SOURCES, Source

from ..queue import ReviewQueue
from ..statedb import CursorRow
from ..watching import POLL_DELAY_MS, Backoff, watch_or_poll
from .harvest import AddedBatch, Harvester, TrackedLog
from .health import BackfillHealth, IngestHealth

__all__ = ["AddedBatch", "Ingestor"]

log = logging.getLogger("mmd.ingest")

WAKE_MS = 1000
"""The watch wakes at least this often (idle sessions, a vanished folder), milliseconds."""
PROGRESS_S = 2.0
"""Backfill progress is logged at most this often, seconds."""


class Ingestor:
    """The ingestion worker of one daemon.

    Args:
        sessions_dir: the folder to watch.
        queue: the review queue (candidates and cursors).
        notes: the current memory snapshot (None before the first load): candidates equal to a note are skipped.
        write_budget: the default write budget (code points) the digest cuts bodies to.
        exclude: the daemon's own paths (the memory root) never read even when inside the folder.
        idle_s: quiet seconds after which a followed session log counts as ended.
        on_added: called (in the worker thread) after each slice that added candidates.
        on_session_end: called (in the worker thread) with ``(session id, log path)`` once per ended session.
        monotonic: the clock for idleness, seconds.
        debounce_ms, step_ms: watchfiles' grouping window and step, milliseconds.
        sources: the sources that read this folder, in the order a path is offered to them
            (default: :data:`mmd.sources.SESSIONS_FOLDER`).
    """

    def __init__(self, sessions_dir: Path, queue: ReviewQueue, *, notes: Callable[[], Snapshot | None],
                 write_budget: Callable[[], int], exclude: Sequence[Path] = (), idle_s: float = 300.0,
                 on_added: Callable[[AddedBatch], None] = lambda batch: None,
                 on_session_end: Callable[[str, str], None] = lambda sid, path: None,
                 monotonic: Callable[[], float] = time.monotonic, debounce_ms: int = 50, step_ms: int = 50,
                 sources: Sequence[Source] | None = None) -> None:
        self.sessions_dir = Path(os.path.abspath(sessions_dir))
        self.queue = queue
        self.exclude = [Path(p) for p in exclude]
        self.sources = list(sources) if sources is not None else [SOURCES[name] for name in SESSIONS_FOLDER]
        self.idle_s = idle_s
        self._on_session_end = on_session_end
        self._monotonic = monotonic
        self.debounce_ms, self.step_ms = debounce_ms, step_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tracked: dict[str, TrackedLog] = {}
        self._following = False
        self.health = IngestHealth(str(self.sessions_dir))
        self.backoff = Backoff()
        self.harvester = Harvester(queue, notes=notes, write_budget=write_budget, health=self.health,
                                   on_added=on_added, stop=self._stop)

    # --- life ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker thread."""
        for own in self.exclude:
            if own == self.sessions_dir or own in self.sessions_dir.parents:
                log.warning("ingest.sessions_inside_own sessions=%s own=%s (nothing there will be read)",
                            self.sessions_dir, own)
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

    def _run(self) -> None:
        try:
            self.harvester.rows = self.queue.db.cursors()
            self.queue.refresh_counts()
        except Exception as error:  # noqa: BLE001 - reported in health; the daemon serves on
            self._failed("ingest.db_failed", error)
        while not self._stop.is_set():
            try:
                if not self._wait_for_folder():
                    break
                self._backfill()
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
        log.log(level, "%s path=%s error=%r", event, path, f"{type(error).__name__}: {error}")

    # --- the folder ------------------------------------------------------------------------------

    def _watch(self, path: Path, recursive: bool) -> Iterator[set[tuple[Any, str]]]:
        def report(failure: str | None) -> None:
            if failure is not None and failure != self.health.watch_error:
                log.error("ingest.native_refused path=%s error=%r; polling every %d ms instead", path, failure,
                          POLL_DELAY_MS)
            self.health.watch_error = failure
            self.health.mode = "native" if failure is None else "polling"

        return watch_or_poll(path, recursive=recursive, report=report, watch_filter=None, debounce=self.debounce_ms,
                             step=self.step_ms, stop_event=self._stop, rust_timeout=WAKE_MS, yield_on_timeout=True,
                             raise_interrupt=False)

    def _ancestor(self) -> Path:
        p = self.sessions_dir.parent
        while not p.is_dir() and p != p.parent:
            p = p.parent
        return p

    def _wait_for_folder(self) -> bool:
        """Block until the sessions folder exists (True) or the worker stops (False)."""
        self.health.folder_present = self.sessions_dir.is_dir()
        if self.health.folder_present:
            return True
        self.health.phase = "waiting"
        log.info("ingest.waiting sessions=%s (missing; ingestion starts when it appears)", self.sessions_dir)
        while not self._stop.is_set():
            ancestor = self._ancestor()
            for _changes in self._watch(ancestor, recursive=False):
                if self.sessions_dir.is_dir():
                    self.health.folder_present = True
                    return True
                if self._ancestor() != ancestor:
                    break
        return False

    def _same_folder(self, inode: int) -> bool:
        try:
            return os.stat(self.sessions_dir).st_ino == inode
        except OSError:
            return False

    # --- which files ---------------------------------------------------------------------------

    def _own(self, path: str) -> bool:
        """Whether ``path`` is at or under one of the daemon's own paths (as given, or resolved)."""
        p = Path(path)
        try:
            real = p.resolve()
        except (OSError, RuntimeError):
            real = p
        for own in self.exclude:
            if _inside(real, own.resolve()) or _inside(p.absolute(), own.absolute()):
                return True
        return False

    def _source_of(self, path: str) -> Source | None:
        """The source that reads ``path`` now, or None (not a log, not wanted now, or our own file)."""
        if self._own(path):
            return None
        p = Path(path)
        for source in self.sources:
            if source.classify(p, self.sessions_dir):
                return source
        return None

    def _scan(self) -> list[tuple[str, Source]]:
        """Every log in the folder a source reads now, sorted by path (hidden folders and files skipped)."""
        found: list[tuple[str, Source]] = []
        for dirpath, dirnames, filenames in os.walk(self.sessions_dir, followlinks=False):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if name.startswith("."):
                    continue
                path = os.path.join(dirpath, name)
                source = self._source_of(path)
                if source is not None:
                    found.append((path, source))
        return sorted(found, key=lambda item: item[0])

    # --- backfill and follow --------------------------------------------------------------------

    def _backfill(self) -> None:
        """Read every log already in the folder; forget cursors of logs that are gone."""
        self.health.phase = "backfill"
        self._following = False
        started = self._monotonic()
        b0, c0 = self.health.bytes_read, self.health.candidates_added
        found = self._scan()
        log.info("ingest.backfill_start sessions=%s files=%d", self.sessions_dir, len(found))
        present = {path for path, _ in found}
        inside = str(self.sessions_dir) + os.sep
        for path in [p for p in self.harvester.rows if p not in present and p.startswith(inside)]:
            self._forget(path)
        last = started
        for n, (path, source) in enumerate(found, 1):
            if self._stop.is_set():
                return
            self._ingest(path, source)
            now = self._monotonic()
            if now - last >= PROGRESS_S:
                last = now
                log.info("ingest.backfill files=%d/%d bytes=%d candidates=%d", n, len(found),
                         self.health.bytes_read - b0, self.health.candidates_added - c0)
        seconds = round(self._monotonic() - started, 3)
        done = BackfillHealth(True, len(found), self.health.bytes_read - b0, self.health.candidates_added - c0,
                              seconds)
        self.health.backfill = done
        log.info("ingest.backfill_done files=%d bytes=%d candidates=%d seconds=%.3f", len(found), done.bytes,
                 done.candidates, seconds)

    def _follow(self) -> None:
        """Follow changes until the folder is deleted or replaced, or the worker stops."""
        self.health.phase = "following"
        inode = os.stat(self.sessions_dir).st_ino
        caught_up = False
        for changes in self._watch(self.sessions_dir, recursive=True):
            self._following = True
            self.backoff.reset()
            if changes:
                self.health.last_event_at = iso_ms(system_clock())
                for path in sorted({p for _, p in changes}):
                    if self._stop.is_set():
                        return
                    if os.path.isdir(path) and not os.path.islink(path):
                        self._ingest_tree(path)
                    else:
                        self._ingest(path)
            if not caught_up:
                # Trigger: the first wake of a new watch. Why: lines appended between the backfill's scan
                # and the watch's start raised no event. Outcome: one catch-up pass (unchanged files cost a stat).
                caught_up = True
                for path, source in self._scan():
                    self._ingest(path, source)
            self._check_idle()
            if not self._same_folder(inode):
                log.warning("ingest.folder_gone sessions=%s (waiting for it to come back)", self.sessions_dir)
                self.health.folder_present = False
                return

    def _ingest_tree(self, folder: str) -> None:
        """A folder appeared (created or moved in): read the logs under it."""
        for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in sorted(filenames):
                self._ingest(os.path.join(dirpath, name))

    # --- one log ---------------------------------------------------------------------------------

    def _forget(self, path: str) -> None:
        self._tracked.pop(path, None)
        if self.harvester.rows.pop(path, None) is not None:
            self.queue.db.drop_cursor(path)
        self.health.files_tracked = len(self._tracked)

    def _known(self) -> set[str]:
        return {*self._tracked, *self.harvester.rows}

    def _ingest(self, path: str, source: Source | None = None) -> None:
        """Read what is new in one path, if a source reads it now; never raises.

        Args:
            path: the file (absolute).
            source: its source when the caller has just classified it, else None (classified here).
        """
        try:
            source = source or self._source_of(path)
            if source is None:
                self._unwanted(path)
                return
            t = self._tracked.get(path)
            if t is None:
                if self._following:
                    self._forget_replaced(path)
                t = self._track(path, source, self.harvester.rows.get(path))
            consumed = self.harvester.read(t)
            if consumed and self._following:
                t.grew_at, t.ended = self._monotonic(), False
        except FileNotFoundError:
            self._forget(path)  # gone between the event and the read
        except Exception as error:  # noqa: BLE001 - one bad log never stops the others
            self._failed("ingest.log_failed", error, path)

    def _unwanted(self, path: str) -> None:
        """``path`` is no log read now: forget it (and, if it is gone, what was under it); offer the files beside it."""
        if path in self._tracked or path in self.harvester.rows:
            self._forget(path)  # deleted, or a newer file beside it took over
        if not os.path.exists(path):  # a folder deleted or moved out: its logs went with it
            under = path.rstrip(os.sep) + os.sep
            for gone in [p for p in self._known() if p.startswith(under)]:
                self._forget(gone)
            return
        rel = os.path.relpath(path, self.sessions_dir)
        if not os.path.isfile(path) or rel.startswith("..") or any(part.startswith(".") for part in Path(rel).parts):
            return
        # Trigger: a file that exists but no source reads now (e.g. an older generation, a lock, a temp file).
        # Why: the file that replaced it may not have raised its own event yet. Outcome: the new files beside it
        # are read now; the ones already followed are left to their own events.
        folder = os.path.dirname(path)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return
        for name in names:
            sibling = os.path.join(folder, name)
            if sibling != path and sibling not in self._tracked and not name.startswith("."):
                source = self._source_of(sibling)
                if source is not None:
                    self._ingest(sibling, source)

    def _forget_replaced(self, path: str) -> None:
        """A log is new to us while following: stop following the files beside it that no source reads any more."""
        folder = os.path.dirname(path)
        for old in [p for p in self._known() if p != path and os.path.dirname(p) == folder]:
            if self._source_of(old) is None:
                self._forget(old)

    def _track(self, path: str, source: Source, row: CursorRow | None) -> TrackedLog:
        """Follow ``path`` from its stored cursor (the adapter reads the JSON; one it does not know restarts it)."""
        t = self._tracked[path] = TrackedLog(path, source, row.session_id if row is not None else None,
                                             row.cursor if row is not None else None)
        self.health.files_tracked = len(self._tracked)
        return t

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
            log.info("session.ended session=%s file=%s idle_s=%.1f", t.session_id, t.path, now - t.grew_at)
            self._on_session_end(t.session_id, t.path)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
