"""The daemon's life, read top to bottom: startup, serve until a signal, shutdown in reverse.

Startup order: the root's lock (and the :class:`~.rootguard.RootGuard` that
notices a root removed or replaced later; our crashed writers' temp files are
removed, paths others can write are warned about), the state database (review
queue, ingest cursors), with ``--git`` the repository (:mod:`.gitsync`), the
first snapshot, the root watcher and the session-log ingestion worker, the scheduler, then the PUB and ROUTER sockets
(only in a private folder, never over a socket a live daemon serves);
``READY=1`` goes to systemd last (the backfill of old logs runs on after it).
Each step pushes its undo on one :class:`contextlib.AsyncExitStack`, so
shutdown runs in reverse by construction, after a partial startup too: answer
running digests ``E_SHUTTING_DOWN`` (never waited for), stop taking requests,
finish the in-flight ones, close the sockets, remove the ipc files, stop the scheduler,
the ingestion worker and the watcher, commit what is pending (``--git``),
close the database, release the lock.
With ``--http`` the review page (:mod:`.web`) starts just before the RPC
socket serves, and stops once the in-flight requests are drained, before the sockets close.
The started parts are one :class:`Running`. Signal handlers only queue the
signal; the serve loop acts on it. Jobs and event payloads are in :mod:`.jobs`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import signal
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import zmq

from mmd.core.durable import LockHeld
from mmd.core.errors import MMError
from mmd.core.health import loose_modes, remove_stale_temp_files
from mmd.core.options import recorded_header
from mmd.core.paths import STATE_DIR
from mmd.core.rootfs import make_folders
from mmd.core.snapshot import Snapshot
from mmd.wire.endpoints import ensure_private_dir, ipc_path

from .agents import Agents
from .config import Config, ConfigError
from .events import Publisher
from .failures import startup_failure
from .home import USER, Home, Root
from .ingest import Ingestor
from .ingest.folders import EndedSession
from .inject import Injector
from .jobs import Jobs, from_worker, periods_ms, status_payload
from .logs import setup_logging
from .methods import Methods
from .notify import Notifier
from .offload import BoundedPool
from .queue import ReviewQueue
from .review import Review
from .rootguard import RootGuard
from .rpc import RpcServer
from .scheduler import Schedule
from .scopes import ProposedScope
from .sockets import LINGER_MS, Sockets, start_authenticator, take_root_lock
from .state import MemoryState
from .statedb import SchemaError, StateDB
from .watcher import Watcher

if TYPE_CHECKING:  # imported where first used: a daemon without --git or an extractor never loads them
    from .gitsync import GitSync
    from .ingest.extractor import Extractor

__all__ = ["EXIT_CONFIG", "EXIT_FAILURE", "EXIT_FORCED", "EXIT_LOCKED", "EXIT_OK", "HANDLED_SIGNALS", "Daemon",
           "Running"]

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
DIGEST_TIMEOUT_S = 60.0
"""Longest run of one ``memory.digest`` (in its worker process), seconds."""
SCHEDULE_FILE = "schedule.json"
"""The durable jobs' next due times, in ``<root>/.mmd/`` (:mod:`.scheduler`)."""
RESTART_KEYS = ("root", "rpc_endpoint", "pub_endpoint", "curve_secret_key", "curve_clients_dir", "sessions_dir",
                "sources", "ingest", "git", "http_listen")
"""Config fields a SIGHUP cannot change."""

log = logging.getLogger("mmd.daemon")


@dataclasses.dataclass(slots=True)
class Running:
    """The parts of a daemon that finished starting (built once, as startup's last step).

    ``ingestor`` is None when ingestion is off (``--no-ingest``), as ``review.queue`` is (unless ``--git``
    keeps the queue for sync conflicts); ``git`` is None without ``--git``.
    """

    state: MemoryState
    db: StateDB
    review: Review
    watcher: Watcher
    ingestor: Ingestor | None
    schedule: Schedule
    publisher: Publisher
    rpc: RpcServer
    started_at: str
    injector: Injector
    home: Home
    """Every root served: the user root (``state``, ``injector``) and the project roots."""
    extractor: Extractor | None = None
    """The extractor command's runner (``[candidates] command``), or None when none is configured."""
    git: GitSync | None = None
    web: Any = None
    """The review page's server (:class:`.web.WebServer`) when started with ``--http``, else None."""


class Daemon:
    """One daemon serving one root.

    Args:
        config: the validated configuration.
        reload_config: builds a fresh Config on SIGHUP (flags and file re-read); None disables reloads.
        merge_driver: the command git runs as the merge driver (``[<mmd>, "merge-index"]``), for ``--git``.
    """

    failure: str | None = None
    """Why startup failed, in one sentence with the fix (:func:`.failures.startup_failure`); None otherwise."""

    def __init__(self, config: Config, reload_config: Callable[[], Config] | None = None,
                 merge_driver: Sequence[str] | None = None) -> None:
        self.config = config
        self.merge_driver = list(merge_driver or ["mmd", "merge-index"])
        self._reload_config = reload_config
        self.notifier = Notifier(config.notify_socket)
        self.running: Running | None = None
        """The started parts; None until startup finished."""
        self._stack = contextlib.AsyncExitStack()
        self._signals: asyncio.Queue[signal.Signals] = asyncio.Queue()
        self._stopping = False
        self._force = asyncio.Event()
        self.sockets = Sockets(config)
        """The bound sockets (bound again from the heartbeat when their files were removed)."""

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
                log.error("daemon.refused root=%s reason=%r", self.config.root,
                          f"{error.holder} already serves this root (it holds {error.details})")
                await self.shutdown()
                return EXIT_LOCKED
            except (MMError, OSError, zmq.ZMQError, sqlite3.Error, SchemaError) as error:
                self.failure = startup_failure(error, self.config.root)
                log.error("daemon.startup_failed error=%r", self.failure)
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

    # --- startup: each step pushes its undo; shutdown pops them in reverse ---------------------------

    async def startup(self) -> None:
        """Lock, state database, snapshot, watchers, scheduler, sockets; then READY.

        Raises:
            LockHeld: if another process holds ``<root>/.mmd/lock``.
            MMError: if the root cannot be created or its MEMORY.md is not mm v1.
            OSError / zmq.ZMQError: if a socket folder or endpoint cannot be used.
            sqlite3.Error / SchemaError: if ``.mmd/state.db`` cannot be opened or is from a newer mmd.
        """
        cfg, undo = self.config, self._stack
        if cfg.git.enabled:  # refused before anything is created: no git, or a root inside another repository
            from .gitsync import check_root

            await asyncio.to_thread(check_root, cfg.root)
        for endpoint in (cfg.pub_endpoint, cfg.rpc_endpoint):  # a socket folder we cannot use: refused before
            folder = ipc_path(endpoint)                         # the root is created (its bind comes last)
            if folder is not None:
                await asyncio.to_thread(ensure_private_dir, folder.parent)
        # 1. lock: the root must exist to hold its .mmd/lock; released last, when no write can be running
        await asyncio.to_thread(make_folders, cfg.root)  # 0700 whatever the umask (issue 15)
        lock = await take_root_lock(cfg)
        undo.callback(lock.release)
        state = MemoryState(cfg.memory)
        state.guard = RootGuard(cfg.root, lock.path)
        home = Home(Root(USER, state, lock), state.now_iso)
        await asyncio.to_thread(_tidy_root, cfg.root)
        await asyncio.to_thread(_warn_differing_header, cfg)
        publisher = Publisher(None, state.now_iso)
        # 2. the state database: the journal, and with ingestion the review queue and ingest cursors
        db = StateDB(cfg.root)
        await asyncio.to_thread(db.open)
        undo.callback(db.close)
        proposed = ProposedScope(cfg.root)  # the root a candidate goes to; also whose notes a session is seen against
        queue = ReviewQueue(db, state.now_iso, proposed) if cfg.ingest or cfg.git.enabled else None
        if queue is not None:
            queue.expire_days = lambda: self.config.expire_days
            await asyncio.to_thread(queue.refresh_counts)
        review = Review(home, queue)
        injector = home.user.injector = Injector(state, db, publisher.publish, lambda: self.config.inject_ttl_days,
                                                 lambda: self.config.export_files)
        undo.push_async_callback(injector.stop)
        injector.project_of = functools.partial(_export_project, home, proposed)
        jobs = Jobs(lambda: self.config, home, db, review, publisher, injector)
        jobs.agents = Agents(home, queue, db, publisher.publish, lambda: self.config.distill, lambda: self.config.lang)
        state.on_change, state.on_allowed = jobs.on_change, jobs.allowed

        home.opened = functools.partial(_wire_project, home=home, db=db, publish=publisher.publish,
                                        ttl_days=lambda: self.config.inject_ttl_days, views=injector.views, jobs=jobs)
        # 3. with --git: the repository (the revision mark raised to its history's); then the snapshot
        #    (creating MEMORY.md and memories/ if missing), and the commit of edits made while we were down
        git = None
        if cfg.git.enabled and queue is not None:
            from .gitsync import GitSync

            git = jobs.git = GitSync(cfg.git, home, queue, publisher, self.merge_driver)
            await asyncio.to_thread(git.prepare)
        await asyncio.to_thread(state.store.ensure_root)
        await state.load()
        await home.find_existing()  # the project roots: opened once serving (home.warm), released after the requests
        undo.push_async_callback(home.stop)
        started_at = state.now_iso()
        if git is not None:
            await git.start()
            undo.push_async_callback(git.stop)  # after the watcher and requests stopped: commits what is pending
        # 4. watchers: the root (it catches up on edits made since the load), then the session logs;
        #    at shutdown the ingestion worker finishes its current slice
        watcher = Watcher(cfg.root, home.refresh)  # project roots live below the user root: one watch, routed
        await watcher.start()
        undo.push_async_callback(watcher.stop)
        ingestor = extractor = None
        if queue is not None and cfg.ingest:
            loop = asyncio.get_running_loop()
            ended = from_worker(loop, jobs.session_ended)
            if cfg.extractor:
                from mmd.candidates import Seen

                from .ingest.extractor import Extractor

                extractor = Extractor(cfg.extractor, cfg.extractor_timeout_ms, queue,
                                      seen=lambda: ingestor.harvester.candidacy.seen() if ingestor else Seen(),
                                      write_budget=lambda: state.options.default_write_budget,
                                      on_added=from_worker(loop, jobs.queue_added), now_iso=state.now_iso)
                extractor.start()
                undo.push_async_callback(asyncio.to_thread, extractor.stop)

                def ended_with_extractor(session: EndedSession, run: Extractor = extractor) -> None:
                    run.submit(session.session_id, session.file)
                    ended(session)

                on_end: Callable[[EndedSession], None] = ended_with_extractor
            else:
                on_end = ended
            ingestor = Ingestor(
                cfg.sources, queue, notes=lambda: state.current if state.revision else None,
                write_budget=lambda: state.options.default_write_budget, exclude=[cfg.root],
                idle_s=cfg.session_idle_s, on_added=from_worker(loop, jobs.queue_added), on_session_end=on_end,
                on_distill=from_worker(loop, jobs.distill))
            ingestor.harvester.candidacy.per_session = lambda: self.config.per_session
            ingestor.harvester.candidacy.project_notes = functools.partial(_project_snapshot, home, proposed)
            ingestor.backfill_shown = lambda: self.config.backfill_shown
            ingestor.start()
            undo.push_async_callback(asyncio.to_thread, ingestor.stop)
        # 5. scheduler
        loop = asyncio.get_running_loop()

        def heartbeat() -> None:  # a worker thread: the sockets are the loop's
            jobs.heartbeat()
            loop.call_soon_threadsafe(self.sockets.rebind_lost)

        schedule = Schedule({"nudge": jobs.nudge, "heartbeat": heartbeat, "expire": jobs.expire,
                             "due": jobs.due, "injectExpire": jobs.inject_expire, "watchdog": self.notifier.watchdog},
                            due_file=cfg.root / STATE_DIR / SCHEDULE_FILE)
        schedule.start(periods_ms(cfg))
        undo.callback(schedule.shutdown)
        # 6. sockets: PUB first so the first write's event has somewhere to go; at shutdown the ipc
        #    files go once the context has terminated
        context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        sockets = self.sockets
        undo.callback(sockets.remove_files)
        undo.push_async_callback(asyncio.to_thread, context.term)
        if cfg.curve_secret_key is not None and cfg.curve_clients_dir is not None:
            undo.callback(start_authenticator(context, cfg.curve_clients_dir).stop)
        publisher.socket = sockets.bind(context, zmq.PUB, cfg.pub_endpoint)
        undo.callback(lambda: publisher.close(self._linger_ms()))
        router = sockets.bind(context, zmq.ROUTER, cfg.rpc_endpoint)
        digests = BoundedPool("digest", processes=True, timeout_s=DIGEST_TIMEOUT_S)
        methods = Methods(home, self._status, publisher.publish, review, injector, digests, git, agents=jobs.agents)
        rpc = RpcServer(router, methods, cfg.max_request_bytes, max_queued_bytes=cfg.max_queued_bytes)
        undo.callback(lambda: rpc.close(self._linger_ms()))
        # 7. the review page (only with --http; imported only then): it stops before the sockets close
        web = None
        if cfg.http_listen is not None:
            from .web import WebServer

            web = WebServer(cfg.http_listen, methods, publisher)
            await web.start()
            undo.push_async_callback(web.stop)
        jobs.holds.at_start(home.user)  # edits made while no daemon ran: screened before the first injection
        jobs.screen_queue()
        rpc.start()
        # first at shutdown: stop taking requests and let the in-flight ones (writes included) finish;
        # before that, digests (reading a caller's file) are answered E_SHUTTING_DOWN, never waited for
        undo.push_async_callback(self._drain_requests, rpc)
        undo.callback(digests.close)
        self.running = Running(state, db, review, watcher, ingestor, schedule, publisher, rpc, started_at, injector,
                               home, extractor, git, web)
        # the first revision: prepared for injection, due topics announced, export blocks refreshed
        injector.revision_installed(state.current)
        home.warm()
        jobs.inject_expire()
        self.notifier.ready(f"serving {cfg.root} at revision {state.revision}")
        log.info("daemon.ready pid=%d root=%s revision=%d rpc=%s pub=%s", os.getpid(), cfg.root,
                 state.revision, cfg.rpc_endpoint, cfg.pub_endpoint)

    def _status(self) -> dict[str, Any]:
        """The daemon-level part of ``daemon.status`` (requests are served only once running)."""
        assert self.running is not None, "daemon.status before startup finished"
        return status_payload(self.config, self.running)

    # --- SIGHUP ---------------------------------------------------------------------------------

    async def reload(self) -> None:
        """Re-read the config; apply what can change live, log and keep what needs a restart."""
        running = self.running
        if self._reload_config is None or running is None:
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
        memory = new.memory.replace(root=old.memory.root, dsh_home=old.memory.dsh_home)
        new = dataclasses.replace(new, memory=memory, rpc_endpoint=old.rpc_endpoint, pub_endpoint=old.pub_endpoint,
                                  curve_secret_key=old.curve_secret_key, curve_public_key=old.curve_public_key,
                                  curve_clients_dir=old.curve_clients_dir,
                                  sessions_dir=old.sessions_dir, sources=old.sources, git=old.git)
        self.config = new
        setup_logging(new.log_level, new.journal)
        if memory != old.memory:
            running.state.replace_options(memory)
            try:
                await running.state.load()
            except MMError as error:
                log.error("config.reload_failed error=%r", str(error))
        running.schedule.apply(periods_ms(new))
        if running.ingestor is not None:
            running.ingestor.idle_s = new.session_idle_s
        running.rpc.max_request_bytes = new.max_request_bytes
        running.rpc.max_queued_bytes = new.max_queued_bytes
        extractor = running.extractor
        if extractor is not None and new.extractor:  # the next run takes the new command and limit
            extractor.command, extractor.timeout_s = list(new.extractor), new.extractor_timeout_ms / 1000
        elif bool(new.extractor) != bool(old.extractor):
            log.warning("config.needs_restart key=candidates.command (an extractor starts or stops with the daemon)")
        log.info("config.reloaded file=%s", new.config_file)
        self.notifier.ready(f"serving {new.root} at revision {running.state.revision}")

    # --- shutdown -------------------------------------------------------------------------------

    async def shutdown(self) -> None:
        """Undo startup in reverse (the exit stack holds exactly the steps that started)."""
        self._stopping = True
        self.notifier.stopping()
        await self._stack.aclose()
        log.info("daemon.stopped")

    def _linger_ms(self) -> int:
        """How long closing sockets flush replies and events: none after a forced exit."""
        return 0 if self._force.is_set() else LINGER_MS

    async def _drain_requests(self, rpc: RpcServer) -> None:
        """Wait up to DRAIN_TIMEOUT_S for in-flight requests; a second SIGINT stops waiting."""
        drain = asyncio.ensure_future(rpc.stop(DRAIN_TIMEOUT_S))
        force = asyncio.ensure_future(self._force.wait())
        await asyncio.wait({drain, force}, return_when=asyncio.FIRST_COMPLETED)
        force.cancel()
        if not drain.done():
            drain.cancel()
            for task in list(rpc.tasks):
                task.cancel()
        cancelled = drain.result() if drain.done() and not drain.cancelled() else len(rpc.tasks)
        if cancelled:
            log.warning("daemon.requests_cancelled count=%d", cancelled)


def _project_snapshot(home: Home, proposed: ProposedScope, folder: str) -> Snapshot | None:
    """The current snapshot of the project root of an agent session's ``folder`` (ingestion thread), or None when
    its project has no root served yet."""
    key = proposed.key_of(folder)
    root = home.get(key) if key is not None else None
    return root.state.current if root is not None and root.state.revision else None


def _export_project(home: Home, proposed: ProposedScope, path: Path) -> Injector | None:
    """The injector of the project root served for the folder of an ``[export]`` file, or None."""
    key = proposed.key_of(str(path.parent))
    root = home.get(key) if key is not None else None
    return root.injector if root is not None and root.injector is not None else None


def _wire_project(root: Root, *, home: Home, db: StateDB, publish: Callable[[str, dict[str, Any]], Any],
                  ttl_days: Callable[[], int], views: Any, jobs: Jobs) -> None:
    """A project root found at start, by a read or made by its first write (:attr:`.home.Home.opened`): its
    injector (sharing the user root's injection rows), its revisions journaled and published (and, with
    ``--git``, committed, its edits made while it was not served first), and for a root outside the home
    (``<repo>/.mm``: the home's watch does not see it, and mmd's git never commits it) a watcher of its own."""
    root.injector = Injector(root.state, db, publish, ttl_days, lambda: (), scope=root.scope, views=views)
    root.state.on_change, root.state.on_allowed = jobs.changed_in(root), jobs.allowed
    # opened while a sync runs (by the sync itself, the watch or a request): a root the remote brought
    made = jobs.git is not None and jobs.git.syncing is not None
    jobs.holds.at_start(root, "remote" if made else "outside-edit")
    root.injector.revision_installed(root.state.current)
    if jobs.git is not None:
        jobs.git.opened(root)
    if root in home.outside:
        root.watcher = Watcher(root.path, root.state.refresh)
        asyncio.get_running_loop().create_task(root.watcher.start())


def _tidy_root(root: Path) -> None:
    """At start, with the lock held: remove temp files of our crashed writers; warn about paths others
    may write (a memory others can write is a prompt-injection channel; ``daemon.status`` lists them)."""
    removed = remove_stale_temp_files(root)
    if removed:
        log.info("daemon.removed_stale_temp_files count=%d paths=%s", len(removed), ",".join(removed))
    loose = loose_modes(root)
    if loose:
        log.warning("daemon.loose_modes paths=%s: others can write this memory; chmod go-w them",
                    ",".join(f"{m['path']}({m['mode']})" for m in loose))


def _warn_differing_header(cfg: Config) -> None:
    """At start: warn about an id or cap given (flag or config file) that differs from what the root's MEMORY.md
    header records; the daemon's first write records the configured value there (``recorded_header``)."""
    recorded = recorded_header(cfg.root)
    for key, name in (("memory_id", "memoryId"), ("index_lines", "indexLines"), ("index_bytes", "indexBytes")):
        configured = getattr(cfg.memory, key)
        if key in recorded and recorded[key] != configured:
            log.warning("config.differs_from_root key=%s root=%s configured=%s: the next write records the configured "
                        "value in MEMORY.md's header (leave it unset to keep the root's)", name, recorded[key],
                        configured)
