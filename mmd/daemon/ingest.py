"""Session-log ingestion: watch the sessions folder and turn what agents said into review-queue candidates.

One worker thread (:class:`Ingestor`) owns the whole job, so the RPC loop
stays responsive during a long backfill:

1. wait for the sessions folder (watching its nearest existing ancestor),
2. backfill every log already there (progress in the log: files, bytes, candidates),
3. follow changes with watchfiles' native backend (never polling), until the
   folder is deleted or replaced (then back to 1) or the daemon stops.

Which files count is :func:`mmd.sessions.classify_path`'s call: the newest
DSH generation of each session (plain or zstd) and other ``*.jsonl`` /
``*.json`` / ``*.md`` logs; temp, backup, swap and lock files, hidden paths,
the daemon's own root and symlinks leading out are ignored. Reading one log
into candidates is :class:`~.harvest.Harvester`'s job. A re-read (shrink,
replaced file, new generation) produces the same candidates again and the
queue drops them by identity (:func:`~.queue.candidate_key`); candidates whose
body equals an existing note's are skipped.

Records are digested as soon as their lines are complete (a torn tail is
never parsed): DSH writes each message whole, so waiting for ``turn/end``
would only add latency. A DSH session whose log grew while the daemon
followed it, then stayed quiet for ``idle_s`` seconds with its
``session.lock`` not held, is reported once as ended.

Never: writes memory files, publishes events itself (callbacks do, on the
loop), or reads ``os.environ``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any

from mmd.core.clock import iso_ms, system_clock
from mmd.core.snapshot import Snapshot
from mmd.sessions import (
    LogCursor,
    LogKind,
    SessionCursor,
    classify_path,
    is_session_live,
    newest_generation,
    parse_generation,
    scan_sessions,
)

from .harvest import AddedBatch, Harvester, TrackedLog
from .queue import ReviewQueue
from .statedb import CursorRow

__all__ = ["AddedBatch", "Ingestor"]

log = logging.getLogger("mmd.ingest")

WAKE_MS = 1000
"""The watch wakes at least this often (idle sessions, a vanished folder), milliseconds."""
PROGRESS_S = 2.0
"""Backfill progress is logged at most this often, seconds."""
RETRY_S = 1.0
"""Pause after a failed watch before it restarts, seconds."""


class Ingestor:
    """The ingestion worker of one daemon.

    Args:
        sessions_dir: the folder to watch.
        queue: the review queue (candidates and cursors).
        notes: the current memory snapshot (None before the first load): candidates equal to a note are skipped.
        write_budget: the default write budget (code points) the digest cuts bodies to.
        exclude: the daemon's own paths (the memory root) never read even when inside the folder.
        idle_s: quiet seconds after which a followed DSH session counts as ended.
        on_added: called (in the worker thread) after each slice that added candidates.
        on_session_end: called (in the worker thread) with ``(session id, log path)`` once per ended session.
        monotonic: the clock for idleness, seconds.
        debounce_ms, step_ms: watchfiles' grouping window and step, milliseconds.
    """

    def __init__(self, sessions_dir: Path, queue: ReviewQueue, *, notes: Callable[[], Snapshot | None],
                 write_budget: Callable[[], int], exclude: Sequence[Path] = (), idle_s: float = 300.0,
                 on_added: Callable[[AddedBatch], None] = lambda batch: None,
                 on_session_end: Callable[[str, str], None] = lambda sid, path: None,
                 monotonic: Callable[[], float] = time.monotonic, debounce_ms: int = 50, step_ms: int = 50) -> None:
        self.sessions_dir = Path(os.path.abspath(sessions_dir))
        self.queue = queue
        self.exclude = [Path(p) for p in exclude]
        self.idle_s = idle_s
        self._on_session_end = on_session_end
        self._monotonic = monotonic
        self.debounce_ms, self.step_ms = debounce_ms, step_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tracked: dict[str, TrackedLog] = {}
        self._following = False
        self.health: dict[str, Any] = {
            "running": False, "phase": "stopped", "sessionsDir": str(self.sessions_dir), "folderPresent": False,
            "filesTracked": 0, "bytesRead": 0, "candidatesAdded": 0, "lastEventAt": None, "errors": 0,
            "lastError": None, "warnings": 0, "sessionsEnded": 0,
            "backfill": {"done": False, "files": 0, "bytes": 0, "candidates": 0, "seconds": None},
        }
        self.harvester = Harvester(queue, notes=notes, write_budget=write_budget, dsh_home=self.sessions_dir.parent,
                                   health=self.health, on_added=on_added, stop=self._stop)

    # --- life ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker thread."""
        for own in self.exclude:
            if own == self.sessions_dir or own in self.sessions_dir.parents:
                log.warning("ingest.sessions_inside_own sessions=%s own=%s (nothing there will be read)",
                            self.sessions_dir, own)
        self._thread = threading.Thread(target=self._run, name="mmd-ingest", daemon=True)
        self.health["running"] = True
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the worker and wait up to ``timeout_s`` seconds for it (blocking: call it in a thread)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                log.warning("ingest.stop_timeout: the worker is still busy; leaving it")
        self.health["running"] = False
        self.health["phase"] = "stopped"

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
                self._failed("ingest.watch_failed", error)
                self._stop.wait(RETRY_S)
        self.health["running"] = False

    def _failed(self, event: str, error: BaseException, path: str | None = None) -> None:
        self.health["errors"] += 1
        self.health["lastError"] = f"{path + ': ' if path else ''}{type(error).__name__}: {error}"
        log.error("%s path=%s error=%r", event, path, f"{type(error).__name__}: {error}")

    # --- the folder ------------------------------------------------------------------------------

    def _watch(self, path: Path, recursive: bool) -> Generator[set[tuple[Any, str]], None, None]:
        from watchfiles import watch

        return watch(path, watch_filter=None, debounce=self.debounce_ms, step=self.step_ms, stop_event=self._stop,
                     rust_timeout=WAKE_MS, yield_on_timeout=True, raise_interrupt=False, force_polling=False,
                     recursive=recursive, ignore_permission_denied=True)

    def _ancestor(self) -> Path:
        p = self.sessions_dir.parent
        while not p.is_dir() and p != p.parent:
            p = p.parent
        return p

    def _wait_for_folder(self) -> bool:
        """Block until the sessions folder exists (True) or the worker stops (False)."""
        self.health["folderPresent"] = self.sessions_dir.is_dir()
        if self.health["folderPresent"]:
            return True
        self.health["phase"] = "waiting"
        log.info("ingest.waiting sessions=%s (missing; ingestion starts when it appears)", self.sessions_dir)
        while not self._stop.is_set():
            ancestor = self._ancestor()
            for _changes in self._watch(ancestor, recursive=False):
                if self.sessions_dir.is_dir():
                    self.health["folderPresent"] = True
                    return True
                if self._ancestor() != ancestor:
                    break
        return False

    def _same_folder(self, inode: int) -> bool:
        try:
            return os.stat(self.sessions_dir).st_ino == inode
        except OSError:
            return False

    # --- backfill and follow --------------------------------------------------------------------

    def _backfill(self) -> None:
        """Read every log already in the folder; forget cursors of logs that are gone."""
        self.health["phase"] = "backfill"
        self._following = False
        started = self._monotonic()
        b0, c0 = self.health["bytesRead"], self.health["candidatesAdded"]
        found = scan_sessions(self.sessions_dir, exclude=self.exclude)
        log.info("ingest.backfill_start sessions=%s files=%d", self.sessions_dir, len(found))
        present = {str(info.path) for info in found}
        inside = str(self.sessions_dir) + os.sep
        for path in [p for p in self.harvester.rows if p not in present and p.startswith(inside)]:
            self._forget(path)
        last = started
        for n, info in enumerate(found, 1):
            if self._stop.is_set():
                return
            self._ingest(str(info.path))
            now = self._monotonic()
            if now - last >= PROGRESS_S:
                last = now
                log.info("ingest.backfill files=%d/%d bytes=%d candidates=%d", n, len(found),
                         self.health["bytesRead"] - b0, self.health["candidatesAdded"] - c0)
        seconds = round(self._monotonic() - started, 3)
        self.health["backfill"] = {"done": True, "files": len(found), "bytes": self.health["bytesRead"] - b0,
                                   "candidates": self.health["candidatesAdded"] - c0, "seconds": seconds}
        log.info("ingest.backfill_done files=%d bytes=%d candidates=%d seconds=%.3f", len(found),
                 self.health["backfill"]["bytes"], self.health["backfill"]["candidates"], seconds)

    def _follow(self) -> None:
        """Follow changes until the folder is deleted or replaced, or the worker stops."""
        self.health["phase"] = "following"
        inode = os.stat(self.sessions_dir).st_ino
        caught_up = False
        for changes in self._watch(self.sessions_dir, recursive=True):
            self._following = True
            if changes:
                self.health["lastEventAt"] = iso_ms(system_clock())
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
                for info in scan_sessions(self.sessions_dir, exclude=self.exclude):
                    self._ingest(str(info.path))
            self._check_idle()
            if not self._same_folder(inode):
                log.warning("ingest.folder_gone sessions=%s (waiting for it to come back)", self.sessions_dir)
                self.health["folderPresent"] = False
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
        self.health["filesTracked"] = len(self._tracked)

    def _ingest(self, path: str) -> None:
        """Read what is new in one path, if it is a log ingestion reads; never raises."""
        try:
            info = classify_path(path, self.sessions_dir, exclude=self.exclude)
            if not info.wanted:
                if path in self._tracked or path in self.harvester.rows:
                    self._forget(path)  # deleted, or a newer generation took over
                if info.reason == "missing":  # a folder deleted or moved out: its logs went with it
                    under = path.rstrip(os.sep) + os.sep
                    for gone in [p for p in {*self._tracked, *self.harvester.rows} if p.startswith(under)]:
                        self._forget(gone)
                if info.kind is LogKind.DSH:
                    newest = newest_generation(info.path.parent)
                    if newest is not None and str(newest) not in self._tracked:
                        self._ingest(str(newest))
                return
            t = self._tracked.get(path)
            if t is None and info.kind is LogKind.DSH:
                self._forget_older_generations(path)
            if t is None:
                row = self.harvester.rows.get(path)
                t = self._track(path, "dsh" if info.kind is LogKind.DSH else "other", row)
            consumed = self.harvester.read(t)
            if consumed and t.kind == "dsh" and self._following:
                t.grew_at, t.ended = self._monotonic(), False
        except FileNotFoundError:
            self._forget(path)  # gone between the event and the read
        except Exception as error:  # noqa: BLE001 - one bad log never stops the others
            self._failed("ingest.log_failed", error, path)

    def _forget_older_generations(self, path: str) -> None:
        """A newest generation file is new to us: stop following its predecessors in the same folder."""
        folder = os.path.dirname(path)
        for old in [p for p in {*self._tracked, *self.harvester.rows} if p != path and os.path.dirname(p) == folder]:
            if parse_generation(os.path.basename(old)) is not None:
                self._forget(old)

    def _track(self, path: str, kind: str, row: CursorRow | None) -> TrackedLog:
        cursor: SessionCursor | LogCursor | None = None
        if row is not None and row.kind == "dsh" and kind == "dsh":
            cursor = SessionCursor.from_json(row.cursor)
        elif row is not None and row.kind == "other":
            kind, cursor = "other", LogCursor.from_json(row.cursor)  # a DSH-named file that is not DSH
        sid = row.session_id if row is not None else None
        t = self._tracked[path] = TrackedLog(path, kind, sid, cursor)
        self.health["filesTracked"] = len(self._tracked)
        return t

    # --- ended sessions -------------------------------------------------------------------------

    def _check_idle(self) -> None:
        """Report followed DSH sessions quiet for ``idle_s`` whose ``session.lock`` is not held."""
        now = self._monotonic()
        for t in list(self._tracked.values()):
            if t.kind != "dsh" or t.ended or t.grew_at is None or now - t.grew_at < self.idle_s:
                continue
            if is_session_live(Path(t.path).parent):
                continue  # a writer still holds the lock: it is only pausing
            t.ended = True
            self.health["sessionsEnded"] += 1
            log.info("session.ended session=%s file=%s idle_s=%.1f", t.session_id, t.path, now - t.grew_at)
            self._on_session_end(t.session_id or "", t.path)
