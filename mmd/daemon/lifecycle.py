"""The daemon's life, read top to bottom: startup, serve until a signal, shutdown in reverse.

Startup order: the root's lock, the state database (review queue, ingest
cursors), the first snapshot, the root watcher and the session-log ingestion
worker, the scheduler, then the PUB and ROUTER sockets; ``READY=1`` goes to
systemd last (the backfill of old logs runs on after it). Shutdown runs in
reverse: stop taking requests, finish the in-flight ones, close the sockets,
remove the ipc files, stop the scheduler, the ingestion worker and the
watcher, close the database, release the lock. Signal handlers only queue the
signal; the serve loop acts on it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zmq

from mmd.core.durable import LockHeld, WriteLock
from mmd.core.endpoints import ensure_private_dir, ipc_path
from mmd.core.errors import MMError
from mmd.core.memory import nudge_report

from .config import Config, ConfigError
from .events import Publisher
from .ingest import AddedBatch, Ingestor
from .logs import setup_logging
from .methods import Methods
from .notify import Notifier
from .queue import ReviewQueue
from .revision import Revision
from .rpc import RpcServer
from .scheduler import Schedule
from .state import MemoryState
from .statedb import SchemaError, StateDB
from .watcher import Watcher

__all__ = ["EXIT_CONFIG", "EXIT_FAILURE", "EXIT_FORCED", "EXIT_LOCKED", "EXIT_OK", "HANDLED_SIGNALS", "Daemon"]

EXIT_OK = 0
"""Clean shutdown after SIGTERM/SIGINT."""
EXIT_FAILURE = 1
"""Startup failed (unreadable root, endpoint in use, …)."""
EXIT_CONFIG = 2
"""The configuration was refused (key, value and why on stderr)."""
EXIT_LOCKED = 3
"""Another process holds the root's lock (its pid on stderr)."""
EXIT_FORCED = 130
"""A second SIGINT cut the shutdown short."""

HANDLED_SIGNALS = (
    signal.SIGINT,  # Ctrl+C: shut down gracefully; a second one skips waiting for in-flight requests
    signal.SIGTERM,  # systemd stop / kill: shut down gracefully
    signal.SIGHUP,  # reload the config file; keys that need a restart are logged and kept
)

DRAIN_TIMEOUT_S = 10.0
"""Longest wait for in-flight requests at shutdown, seconds."""
LINGER_MS = 1000
"""Longest wait to flush replies and events when the sockets close, milliseconds."""
HARD_MAX_FRAME_FACTOR = 16
"""Frames over this many times ``maxRequestBytes`` drop the peer (ZMQ_MAXMSGSIZE) instead of being read."""
RESTART_KEYS = ("root", "rpc_endpoint", "pub_endpoint", "curve_secret_key", "curve_clients_dir", "sessions_dir",
                "ingest")
"""Config fields a SIGHUP cannot change."""

log = logging.getLogger("mmd.daemon")


class Daemon:
    """One daemon serving one root.

    Args:
        config: the validated configuration.
        reload_config: builds a fresh Config on SIGHUP (flags and file re-read); None disables reloads.
    """

    def __init__(self, config: Config, reload_config: Callable[[], Config] | None = None) -> None:
        self.config = config
        self._reload_config = reload_config
        self.notifier = Notifier(config.notify_socket)
        self.started_at: str | None = None
        self.lock: WriteLock | None = None
        self.state: MemoryState | None = None
        self.db: StateDB | None = None
        self.queue: ReviewQueue | None = None
        self.ingestor: Ingestor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.publisher: Publisher | None = None
        self.watcher: Watcher | None = None
        self.schedule: Schedule | None = None
        self.rpc: RpcServer | None = None
        self._context: zmq.Context[zmq.Socket[bytes]] | None = None
        self._bound: list[str] = []
        self._auth: Any = None
        self._signals: asyncio.Queue[signal.Signals] = asyncio.Queue()
        self._stopping = False
        self._force = asyncio.Event()

    # --- the whole life -------------------------------------------------------------------------

    async def serve(self) -> int:
        """Start, serve until SIGTERM/SIGINT, shut down. Returns the process exit code."""
        loop = asyncio.get_running_loop()
        for sig in HANDLED_SIGNALS:
            loop.add_signal_handler(sig, self.handle_signal, sig)
        try:
            try:
                await self.startup()
            except LockHeld as error:
                who = f"pid {error.holder_pid}" if error.holder_pid else "another process"
                log.error("daemon.refused root=%s reason=%r", self.config.root,
                          f"{who} already serves this root (lock {error.details})")
                await self.shutdown()
                return EXIT_LOCKED
            except (MMError, OSError, zmq.ZMQError, sqlite3.Error, SchemaError) as error:
                log.error("daemon.startup_failed error=%r", str(error))
                await self.shutdown()
                return EXIT_FAILURE
            while True:
                sig = await self._signals.get()
                if sig == signal.SIGHUP:
                    await self.reload()
                    continue
                log.info("daemon.stopping signal=%s", sig.name)
                break
            await self.shutdown()
            return EXIT_FORCED if self._force.is_set() else EXIT_OK
        finally:
            for sig in HANDLED_SIGNALS:
                loop.remove_signal_handler(sig)

    def handle_signal(self, sig: signal.Signals) -> None:
        """Queue a signal for the serve loop; a second SIGINT during shutdown forces the exit."""
        if sig == signal.SIGINT and self._stopping:
            log.warning("daemon.force_exit: not waiting for in-flight requests")
            self._force.set()
            return
        if sig != signal.SIGHUP:
            self._stopping = True
        self._signals.put_nowait(sig)

    def request_stop(self) -> None:
        """Ask the serve loop to shut down, as SIGTERM does."""
        self.handle_signal(signal.SIGTERM)

    # --- startup --------------------------------------------------------------------------------

    async def startup(self) -> None:
        """Lock, snapshot, watcher, scheduler, sockets; then READY.

        Raises:
            LockHeld: if another process holds ``<root>/.mmd/lock``.
            MMError: if the root cannot be created or its MEMORY.md is not mm v1.
            OSError / zmq.ZMQError: if a socket folder or endpoint cannot be used.
            sqlite3.Error / SchemaError: if ``.mmd/state.db`` cannot be opened or is from a newer mmd.
        """
        cfg = self.config
        self._loop = asyncio.get_running_loop()
        # 1. lock: the root must exist to hold its .mmd/lock
        await asyncio.to_thread(cfg.root.mkdir, parents=True, exist_ok=True)
        self.lock = WriteLock(cfg.root)
        self.lock.acquire(blocking=False)
        self.state = state = MemoryState(cfg.memory)
        self.publisher = Publisher(None, state.now_iso)
        state.on_change = self._on_change
        # 2. the state database: the journal, and with ingestion the review queue and ingest cursors
        self.db = StateDB(cfg.root)
        await asyncio.to_thread(self.db.open)
        if cfg.ingest:
            self.queue = ReviewQueue(self.db, state.now_iso)
            await asyncio.to_thread(self.queue.refresh_counts)
        # 3. snapshot (creating MEMORY.md and memories/ if missing)
        await asyncio.to_thread(state.store.ensure_root)
        await state.load()
        self.started_at = state.now_iso()
        # 4. watchers: the root (it catches up on edits made since the load), then the session logs
        self.watcher = Watcher(cfg.root, state.refresh)
        await self.watcher.start()
        if self.queue is not None:
            self.ingestor = Ingestor(
                cfg.sessions_dir, self.queue, notes=lambda: state.current if state.revision else None,
                write_budget=lambda: state.options.default_write_budget, exclude=[cfg.root],
                idle_s=cfg.session_idle_s, on_added=self._from_worker(self._queue_added),
                on_session_end=self._from_worker(self._session_ended))
            self.ingestor.start()
        # 5. scheduler
        self.schedule = Schedule({"nudge": self._nudge_job, "heartbeat": self._heartbeat_job,
                                  "expire": self._expire_job, "watchdog": self.notifier.watchdog})
        self.schedule.start(self._periods_ms(cfg))
        # 6. sockets: PUB first so the first write's event has somewhere to go
        self._context = zmq.Context()
        if cfg.curve_secret_key is not None and cfg.curve_clients_dir is not None:
            self._start_authenticator(cfg.curve_clients_dir)
        pub = self._socket(zmq.PUB, cfg.pub_endpoint)
        self.publisher.socket = pub
        router = self._socket(zmq.ROUTER, cfg.rpc_endpoint)
        methods = Methods(state, self._status, self.publisher.publish, self.queue)
        self.rpc = RpcServer(router, methods, cfg.max_request_bytes)
        self.rpc.start()
        self.notifier.ready(f"serving {cfg.root} at revision {state.revision}")
        log.info("daemon.ready pid=%d root=%s revision=%d rpc=%s pub=%s", os.getpid(), cfg.root,
                 state.revision, cfg.rpc_endpoint, cfg.pub_endpoint)

    def _start_authenticator(self, clients_dir: Path) -> None:
        """ZAP: only clients whose public certificate is in ``clients_dir`` get through CURVE."""
        from zmq.auth.thread import ThreadAuthenticator

        assert self._context is not None
        self._auth = ThreadAuthenticator(self._context, log=logging.getLogger("mmd.auth"))
        self._auth.start()
        self._auth.configure_curve(domain="*", location=str(clients_dir))

    def _socket(self, kind: int, endpoint: str) -> zmq.Socket[bytes]:
        """A bound socket: CURVE server when keys are set; ipc files user-only (0600 in a 0700 folder)."""
        assert self._context is not None
        sock = self._context.socket(kind)
        sock.setsockopt(zmq.LINGER, LINGER_MS)
        if kind == zmq.ROUTER:
            sock.setsockopt(zmq.MAXMSGSIZE, self.config.max_request_bytes * HARD_MAX_FRAME_FACTOR)
        else:
            sock.setsockopt(zmq.SNDHWM, 10_000)
        if self.config.curve_secret_key is not None:
            sock.curve_server = True
            sock.curve_secretkey = self.config.curve_secret_key
            sock.curve_publickey = self.config.curve_public_key or b""
        path = ipc_path(endpoint)
        try:
            if path is None:
                sock.bind(endpoint)
            else:
                ensure_private_dir(path.parent)
                old = os.umask(0o077)  # the socket file is born user-only; chmod below makes sure
                try:
                    sock.bind(endpoint)
                finally:
                    os.umask(old)
                os.chmod(path, 0o600)
        except BaseException:
            sock.close(linger=0)
            raise
        self._bound.append(endpoint)
        return sock

    # --- jobs and events ------------------------------------------------------------------------

    @staticmethod
    def _periods_ms(cfg: Config) -> dict[str, int | None]:
        return {
            "nudge": cfg.memory.nudge_interval_ms if cfg.memory.nudge_enabled else None,
            "heartbeat": cfg.heartbeat_ms,
            "expire": max(250, min(cfg.session_ttl_ms // 4, 60_000)),
            "watchdog": cfg.watchdog_usec // 2000 if cfg.watchdog_usec and cfg.notify_socket else None,
        }

    def _publish(self, topic: str, payload: dict[str, Any]) -> None:
        if self.publisher is not None:
            self.publisher.publish(topic, payload)

    def _on_change(self, revision: Revision, cause: str) -> None:
        log.info("memory.changed revision=%d cause=%s added=%d updated=%d removed=%d", revision.snapshot.revision,
                 cause, len(revision.added), len(revision.updated), len(revision.removed))
        change = {"revision": revision.snapshot.revision, "cause": cause, "added": revision.added,
                  "updated": revision.updated, "removed": revision.removed}
        if self.db is not None:
            try:
                self.db.journal(revision.snapshot.loaded_at, f"memory.{cause}", change)
            except sqlite3.Error as error:  # the journal is a record; the change itself already landed
                log.error("journal.failed revision=%d error=%s", revision.snapshot.revision, error)
        self._publish("memory/changed", change)

    @property
    def queue_pending(self) -> int:
        """Pending review-queue candidates (0 when ingestion is off)."""
        return self.queue.pending if self.queue is not None else 0

    def _nudge_job(self) -> None:
        assert self.state is not None
        report = nudge_report(self.state.current, 0, self.state.now_iso())
        self._publish("memory/nudge", {**report, "reason": "schedule", "queuePending": self.queue_pending})

    def _heartbeat_job(self) -> None:
        assert self.state is not None
        self._publish("daemon/heartbeat", {"revision": self.state.revision, "queuePending": self.queue_pending})

    def _from_worker(self, handler: Callable[..., None]) -> Callable[..., None]:
        """``handler`` made callable from the ingestion thread: it runs on the loop (events belong there)."""

        def call(*args: Any) -> None:
            if self._loop is not None and not self._loop.is_closed():
                try:
                    self._loop.call_soon_threadsafe(handler, *args)
                except RuntimeError:  # the loop closed meanwhile: the daemon is gone, so is the event
                    pass

        return call

    def _queue_added(self, batch: AddedBatch) -> None:
        self._publish("queue/added", {"ids": batch.ids, "sessionId": batch.session_id, "source": batch.file})

    def _session_ended(self, session_id: str, path: str) -> None:
        """A followed agent session went quiet with its lock released: a ``session-end`` nudge."""
        assert self.state is not None
        report = nudge_report(self.state.current, 0, self.state.now_iso())
        self._publish("memory/nudge", {**report, "reason": "session-end", "queuePending": self.queue_pending,
                                       "sessionId": session_id, "source": path})

    def _expire_job(self) -> None:
        assert self.state is not None
        for sid in self.state.expire_sessions(self.config.session_ttl_ms / 1000):
            log.info("session.expired session=%s", sid)

    def _status(self) -> dict[str, Any]:
        return {"startedAt": self.started_at, "lang": self.config.lang,
                "endpoints": {"rpc": self.config.rpc_endpoint, "pub": self.config.pub_endpoint},
                "queue": dict(self.queue.counts) if self.queue else None,
                "ingest": self.ingestor.health.to_json() if self.ingestor else None,
                "watcher": dict(self.watcher.health) if self.watcher else None,
                "events": {"seq": self.publisher.seq if self.publisher else 0},
                "requests": self.rpc.requests if self.rpc else 0}

    # --- SIGHUP ---------------------------------------------------------------------------------

    async def reload(self) -> None:
        """Re-read the config; apply what can change live, log and keep what needs a restart."""
        if self._reload_config is None or self.state is None or self.schedule is None:
            return
        self.notifier.reloading()
        try:
            new = self._reload_config()
        except ConfigError as error:
            log.error("config.reload_refused key=%s value=%r why=%r (the old config stays)",
                      error.key, error.value, error.why)
            self.notifier.ready("config reload refused")
            return
        old = self.config
        for key in RESTART_KEYS:
            if getattr(new, key) != getattr(old, key):
                log.warning("config.needs_restart key=%s (kept the running value)", key)
        memory = dataclasses.replace(new.memory, root=old.memory.root, dsh_home=old.memory.dsh_home)
        new = dataclasses.replace(new, memory=memory, rpc_endpoint=old.rpc_endpoint, pub_endpoint=old.pub_endpoint,
                                  curve_secret_key=old.curve_secret_key, curve_public_key=old.curve_public_key,
                                  curve_clients_dir=old.curve_clients_dir,
                                  sessions_dir=old.sessions_dir)
        self.config = new
        setup_logging(new.log_level, new.journal)
        if memory != old.memory:
            self.state.replace_options(memory)
            try:
                await self.state.load()
            except MMError as error:
                log.error("config.reload_failed error=%r", str(error))
        self.schedule.apply(self._periods_ms(new))
        if self.ingestor is not None:
            self.ingestor.idle_s = new.session_idle_s
        if self.rpc is not None:
            self.rpc.max_request_bytes = new.max_request_bytes
        log.info("config.reloaded file=%s", new.config_file)
        self.notifier.ready(f"serving {new.root} at revision {self.state.revision}")

    # --- shutdown -------------------------------------------------------------------------------

    async def shutdown(self) -> None:
        """Undo startup in reverse; safe after a partial startup."""
        self._stopping = True
        self.notifier.stopping()
        # 1. stop taking requests and let the in-flight ones (writes included) finish
        await self._drain_requests()
        # 2. close the sockets (flushing replies and the last events), remove the ipc files
        await self._close_sockets()
        # 3. scheduler, ingestion worker (it finishes its current slice), watcher, database
        if self.schedule is not None:
            self.schedule.shutdown()
        if self.ingestor is not None:
            await asyncio.to_thread(self.ingestor.stop)
        if self.watcher is not None:
            await self.watcher.stop()
        if self.db is not None:
            self.db.close()
        # 4. the lock last: no write can be running now
        if self.lock is not None:
            self.lock.release()
        log.info("daemon.stopped")

    async def _drain_requests(self) -> None:
        """Wait up to DRAIN_TIMEOUT_S for in-flight requests; a second SIGINT stops waiting."""
        if self.rpc is None:
            return
        drain = asyncio.ensure_future(self.rpc.stop(DRAIN_TIMEOUT_S))
        force = asyncio.ensure_future(self._force.wait())
        await asyncio.wait({drain, force}, return_when=asyncio.FIRST_COMPLETED)
        force.cancel()
        if not drain.done():
            drain.cancel()
            for task in list(self.rpc.tasks):
                task.cancel()
        cancelled = drain.result() if drain.done() and not drain.cancelled() else len(self.rpc.tasks)
        if cancelled:
            log.warning("daemon.requests_cancelled count=%d", cancelled)

    async def _close_sockets(self) -> None:
        linger = 0 if self._force.is_set() else LINGER_MS
        if self.rpc is not None:
            self.rpc.close(linger)
        if self.publisher is not None:
            self.publisher.close(linger)
        if self._auth is not None:
            self._auth.stop()
        if self._context is not None:
            await asyncio.to_thread(self._context.term)
        for endpoint in self._bound:
            path = ipc_path(endpoint)
            if path is not None:
                path.unlink(missing_ok=True)
