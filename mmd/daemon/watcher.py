"""The root watcher: edits by a person or another tool become new revisions.

Watches the memory root recursively with watchfiles, ignoring ``.mmd/``,
hidden files (our own temp files are ``.<name>….tmp``) and anything that is
not ``*.md``. Each batch is handed to a ``refresh`` callback (the state's
:meth:`~.state.MemoryState.refresh`), which tells the daemon's own writes
from external ones by comparing file fingerprints. One failing batch (a
half-written MEMORY.md that does not parse) is logged and counted in
:attr:`Watcher.health`; the next batch is tried again. When the OS refuses
native watches (the inotify watch limit), the watcher says so in its health
(``mode: polling``, ``watchError``) and the log, and polls instead; a watch that
fails restarts after a pause that doubles up to a minute (:mod:`.watching`),
each distinct failure logged once. The watcher never writes.

Threading: watchfiles' notifier is read on a thread of its own (``mmd-watcher``); each batch is handled on
the loop's thread, and :attr:`Watcher.health` is touched there only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mmd.core.errors import MMError
from mmd.core.paths import DETAIL_DIR, INDEX_NAME, STATE_DIR

from .watching import POLL_DELAY_MS, Backoff, native_failure

__all__ = ["Watcher"]

log = logging.getLogger("mmd.watcher")

RUST_TIMEOUT_MS = 5000
"""How long one read of the notifier waits for a change before it reads again, ms (the stop event is checked
every ``step_ms`` meanwhile)."""


class Watcher:
    """Watches one root and reports changed files.

    Args:
        root: the memory root.
        refresh: awaited with the changed root-relative POSIX paths; returns the
            new revision or None when nothing a reader sees changed.
        debounce_ms: how long changes are grouped into one batch, milliseconds.
        step_ms: polling step of the watch loop, milliseconds (also its stop latency).
    """

    def __init__(self, root: Path, refresh: Callable[[list[str]], Awaitable[Any]], *,
                 debounce_ms: int = 50, step_ms: int = 50) -> None:
        self.root = root
        self._real_root = os.path.realpath(root)
        self._refresh = refresh
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.health: dict[str, Any] = {"running": False, "mode": "native", "watchError": None, "batches": 0,
                                       "externalChanges": 0, "errors": 0, "restarts": 0, "lastError": None}
        """``{running, mode: native | polling, watchError, batches, externalChanges, errors, restarts,
        lastError}``: ``watchError`` says why native watching was refused (then ``mode`` is ``polling``)."""
        self.backoff = Backoff()

    def _keep(self, _change: object, path: str) -> bool:
        """Whether a changed path can matter: a visible ``*.md`` outside ``.mmd/``."""
        if not path.endswith(".md"):  # first, and cheap: most events are the writes' temp files
            return False
        if os.path.basename(path).startswith("."):
            return False
        rel = self._rel(path)
        return rel is not None and not (rel == STATE_DIR or rel.startswith(STATE_DIR + "/"))

    def _rel(self, path: str) -> str | None:
        for base in (str(self.root), self._real_root):
            if path.startswith(base.rstrip(os.sep) + os.sep):
                return path[len(base.rstrip(os.sep)) + 1:].replace(os.sep, "/")
        return None

    async def start(self) -> None:
        """Start watching, then catch up on edits made since the snapshot was loaded."""
        polling = await self._choose_mode()
        self._task = asyncio.create_task(self._run(polling), name="mmd-watcher")
        await asyncio.sleep(0)  # let the task register its watches (:meth:`_watch`) before the catch-up below
        await self.handle([INDEX_NAME, *self._detail_files()])

    def _detail_files(self) -> list[str]:
        try:
            return [f"{DETAIL_DIR}/{n}" for n in os.listdir(self.root / DETAIL_DIR) if n.endswith(".md")]
        except OSError:
            return []

    async def stop(self) -> None:
        """Stop watching (returns within about ``step_ms``)."""
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout=5.0)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
        self.health["running"] = False

    async def handle(self, rels: list[str]) -> None:
        """Hand one batch to ``refresh``; failures are logged and counted, never raised."""
        try:
            revision = await self._refresh(rels)
        except MMError as error:
            self.health["errors"] += 1
            self.health["lastError"] = str(error)
            log.warning("watcher.reload_failed error=%r (the previous revision stays current)", str(error))
            return
        if revision is not None:
            self.health["externalChanges"] += 1

    async def _choose_mode(self) -> bool:
        """Ask the OS for native watches; True to poll. A refusal is logged when it is new."""
        failure = await asyncio.to_thread(native_failure, self.root, recursive=True)
        if failure is not None and failure != self.health["watchError"]:
            log.error("watcher.native_refused error=%r; polling every %d ms instead", failure, POLL_DELAY_MS)
        elif failure is None and self.health["watchError"] is not None:
            log.info("watcher.native_restored")
        self.health["watchError"] = failure
        self.health["mode"] = "native" if failure is None else "polling"
        return failure is not None

    async def _run(self, polling: bool) -> None:
        first = True
        while not self._stop.is_set():
            try:
                if not first:
                    polling = await self._choose_mode()
                first = False
                self.health["running"] = True
                await self._watch(polling)
            except Exception as error:  # noqa: BLE001 - the watch restarts; the daemon serves on
                self._failed(error)
                try:
                    await asyncio.wait_for(self._stop.wait(), timeout=self.backoff.next_s())
                except TimeoutError:
                    pass
        self.health["running"] = False

    async def _watch(self, polling: bool) -> None:
        """Watch until stopped: watchfiles' notifier (its watches registered here, before the first await), read
        on a thread of its own; each batch is handled on the loop before the next is read, as with ``awatch``,
        without loading anyio's event-loop layer for it (a third of a start's imports after the standard
        library's, ~33 ms of CPU). Raises what the watch or a batch raised."""
        from watchfiles._rust_notify import RustNotify  # the notifier ``watch``/``awatch`` drive (documented API)

        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()
        notify = RustNotify([str(self.root)], False, polling, POLL_DELAY_MS, True, True)

        def finish(error: BaseException | None) -> None:
            if ended.done():
                return
            if error is None:
                ended.set_result(None)
            else:
                ended.set_exception(error)

        def read() -> None:
            error: BaseException | None = None
            try:
                with notify:
                    self._read(notify, loop)
            except BaseException as failure:  # noqa: BLE001 - handed to the loop, raised there
                error = failure
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits for the watch
                loop.call_soon_threadsafe(finish, error)

        threading.Thread(target=read, name="mmd-watcher", daemon=True).start()
        await ended

    def _read(self, notify: Any, loop: asyncio.AbstractEventLoop) -> None:
        """On the watcher's thread: each batch of kept changes handled on ``loop`` (and waited for), until the
        stop event is set."""
        from watchfiles import Change

        while True:
            raw = notify.watch(self.debounce_ms, self.step_ms, RUST_TIMEOUT_MS, self._stop)
            if raw == "stop":
                return
            if raw == "signal":  # signals reach the main thread only
                raise RuntimeError("the watch thread unexpectedly received a signal")
            if raw == "timeout":
                continue
            changes = {(change, path) for c, path in raw if self._keep(change := Change(c), path)}
            if changes:
                batch = asyncio.run_coroutine_threadsafe(self._batch(changes), loop)
                while True:
                    try:
                        batch.result(timeout=1.0)
                        break
                    except concurrent.futures.TimeoutError:
                        if loop.is_closed():
                            return
                    except concurrent.futures.CancelledError:  # the loop is ending
                        return

    async def _batch(self, changes: set[tuple[Any, str]]) -> None:
        self.health["batches"] += 1
        self.backoff.reset()
        await self.handle(sorted({r for _, path in changes if (r := self._rel(path)) is not None}))

    def _failed(self, error: Exception) -> None:
        """Count a failed watch; log it when it differs from the last one (else at debug level)."""
        text = f"{type(error).__name__}: {error}"
        self.health["errors"] += 1
        self.health["restarts"] += 1
        self.health["running"] = False
        level = logging.DEBUG if text == self.health["lastError"] else logging.ERROR
        self.health["lastError"] = text
        log.log(level, "watcher.failed error=%r; restarting with back-off (failure %d in a row)", text,
                self.backoff.failures + 1)
