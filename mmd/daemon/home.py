"""The memory home inside the daemon: the user root and one root per project, each with its own state.

``docs/projects.md`` is the contract. A :class:`Root` is one mm v1 root the
daemon serves: its lock (``<root>/.mmd/lock``, held for the daemon's life), its
:class:`~.state.MemoryState` (revisions, sessions, writes) and its
:class:`~.inject.Injector` (client views, due dates). The :class:`Home` holds
them by *scope* (``user``, or a project key), finds the project roots at start
(``<user root>/projects/<key>/`` and the committed ``<repo>/.mm`` roots it
served before), creates one at its first write, and routes the root watcher's
changes (project roots live below the user root, so one watch sees them all)
to the root they belong to. Two or more roots' write locks are always taken in one order,
the user root first, then project roots by key (:meth:`Home.ordered`): a move between two
roots and a git sync holding them all cannot deadlock. While a sync holds them
(:meth:`Home.hold_all`), a root the home did not serve yet waits to be opened until it ends.

Scope resolution (:meth:`Home.resolve`): no ``project`` param, or ``"user"``, is
the user root; a key names a project root that exists; an absolute path names the
project of that folder (its repository, else the folder itself: the caller says a
session ran there), whose root may not exist yet (then reads see only the user
root, and a write creates it).

Threading: everything here runs on the event loop's thread; the disk work of
opening a root runs in a worker thread. Never touches a socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmd.core.clock import Clock, system_clock
from mmd.core.durable import WriteLock, atomic_write
from mmd.core.errors import ErrorCode, MMError
from mmd.core.options import MemoryOptions
from mmd.core.paths import INDEX_NAME, STATE_DIR
from mmd.core.projects import (
    PROJECTS_DIR,
    Project,
    is_key,
    project_for,
    project_options,
    project_root,
    project_roots,
    read_project_file,
    record_project,
)
from mmd.core.rootfs import make_folders
from mmd.wire.protocol import DaemonError

from .revision import Revision
from .rootguard import RootGuard
from .scopes import ProposedScope, Scoped
from .state import MemoryState

__all__ = ["USER", "Home", "ProposedScope", "Root", "Scoped"]

log = logging.getLogger("mmd.daemon")

USER = "user"
"""The user root's scope (never a project key: keys end in ``-<8 hex>``)."""
OUTSIDE_FILE = "roots.json"
"""``{key: path}`` of the project roots served outside the home (``<repo>/.mm``), in the user root's ``.mmd/``."""
LOCK_WAIT_S = 10.0
"""How long opening a project root waits for its lock (a direct ``mmctl`` write holding it), seconds."""


@dataclass(eq=False)
class Root:
    """One root the daemon serves.

    Attributes:
        scope: ``user`` or the project's key.
        state: its memory state (revisions, sessions, writes).
        lock: its ``.mmd/lock``, held until the daemon stops.
        project: what ``project.json`` records (``{}`` for the user root).
        injector: its injection use-cases (set by the daemon once built).
    """

    scope: str
    state: MemoryState
    lock: WriteLock
    project: dict[str, Any] = field(default_factory=dict)
    injector: Any = None
    watcher: Any = None
    """Its own root watcher, for a root outside the home (``<repo>/.mm``); None below the home."""

    @property
    def path(self) -> Path:
        """The root folder."""
        return self.state.options.root

    @property
    def is_user(self) -> bool:
        """Whether this is the user root."""
        return self.scope == USER

    def describe(self) -> dict[str, Any]:
        """``{scope, root, memoryId, revision, entries, lines, lineCap, bytes, byteCap, overBudget, project}``
        for ``daemon.status`` and ``mmctl project list`` (lines and UTF-8 bytes of its MEMORY.md)."""
        snap, o = self.state.current, self.state.options
        return {"scope": self.scope, "root": str(self.path), "memoryId": snap.memory_id, "revision": snap.revision,
                "entries": len(snap.entries), "lines": snap.index_line_count, "lineCap": o.index_lines,
                "bytes": snap.index_byte_count, "byteCap": o.index_bytes, "overBudget": snap.index_over_budget,
                "project": self.project or None}


def _nothing(root: Root) -> None:
    """The default :attr:`Home.opened`: nothing to wire."""


def _inside(path: Path, home: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(home)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


class Home:
    """The roots of one daemon.

    Args:
        user: the user root (locked by the daemon's startup).
        now_iso: the clock (``project.json``'s times).
        clock: the clock the project roots' states use (the user root's).
    """

    def __init__(self, user: Root, now_iso: Callable[[], str], clock: Clock = system_clock) -> None:
        self.user = user
        self._clock = clock
        self.roots: dict[str, Root] = {USER: user}
        self.opened: Callable[[Root], None] = _nothing
        """Called with each project root once it is loaded (the daemon wires its injector, events, journal and,
        for a root outside the home, its watcher there); the home only opens, locks and loads it."""
        self.known: dict[str, Path] = {}
        """``{key: folder}`` of the project roots found at start, opened or not yet (:meth:`warm`)."""
        self.outside: list[Root] = []
        """The roots served that live outside the home (committed with a project: ``<repo>/.mm``)."""
        self.preparing: Callable[[str, Path], None] = lambda key, path: None
        """Called in a worker thread with a project root's key and folder once its lock is held, before its first
        load (with ``--git``: its revision mark raised to its history's)."""
        self._now_iso = now_iso
        self._opening: dict[str, asyncio.Future[Root]] = {}
        self._open_gate = asyncio.Event()
        """Set while new roots may be opened; cleared while a sync holds every root (:meth:`hold_all`)."""
        self._open_gate.set()
        self.session_scopes: dict[str, str] = {}
        """``{session id: scope}`` of the sessions opened with a project scope."""

    @property
    def home(self) -> Path:
        """The user root's folder (project roots live in its ``projects/``)."""
        return self.user.path

    def __iter__(self) -> Iterator[Root]:
        return iter(list(self.roots.values()))

    @property
    def revision(self) -> int:
        """The sum of every root's revision: it moves whenever any root changes (revisions only grow), the one
        number a page of every root's candidates is as old as."""
        return sum(root.state.revision for root in self.roots.values())

    def projects(self) -> list[Root]:
        """The project roots served now, by key."""
        return [self.roots[k] for k in sorted(self.roots) if k != USER]

    @staticmethod
    def ordered(roots: list[Root]) -> list[Root]:
        """``roots`` in the one order their write locks are taken in: the user root first, then project roots by
        key (every holder of two or more takes them so, so none waits for another holding one it needs)."""
        return sorted(set(roots), key=lambda root: (not root.is_user, root.scope))

    async def hold_all(self) -> list[Root]:
        """Take the write lock of every root of the home (for a git sync): the known roots not served yet are
        opened first, then the locks are taken in :meth:`ordered`'s order; roots outside the home
        (``<repo>/.mm``) are left alone. Until :meth:`release_all`, a root not served yet waits to be opened.

        Returns:
            The roots held, in order.
        """
        for key in sorted(self.known):
            if key not in self.roots and key not in self._opening:
                self._open_now(key, self.known[key], None)
        self._open_gate.clear()
        held: list[Root] = []
        try:
            for pending in list(self._opening.values()):  # opened past the gate already: held too once served
                with contextlib.suppress(Exception):
                    await asyncio.shield(pending)
            for root in self.ordered([r for r in self.roots.values() if r not in self.outside]):
                await root.state.lock.acquire()
                held.append(root)
        except BaseException:
            self.release_all(held)
            raise
        return held

    def release_all(self, held: list[Root]) -> None:
        """Release what :meth:`hold_all` took, in reverse order; new roots may be opened again."""
        for root in reversed(held):
            root.state.lock.release()
        self._open_gate.set()

    # --- opening ---------------------------------------------------------------------------------

    async def find_existing(self) -> None:
        """Find every project root of the home (``projects/<key>/MEMORY.md``, and the committed ones it served
        before): each is opened by :meth:`warm` once the daemon serves, or at once by the first request naming
        it (the daemon's start does not wait for 20 roots of notes to load)."""
        found = await asyncio.to_thread(lambda: dict(project_roots(self.home)))
        for key, raw in _read_json(self.home / STATE_DIR / OUTSIDE_FILE).items():  # roots committed with a project
            path = Path(str(raw))
            if is_key(key) and (path / INDEX_NAME).is_file():
                found.setdefault(key, path)
        self.known.update(found)

    def warm(self) -> None:
        """Open the known project roots one by one on the loop, each in its own turn (about a millisecond per
        note; requests are answered between two roots); one that cannot be opened is logged and left for the
        first request naming it."""
        waiting = [key for key in sorted(self.known) if key not in self.roots]
        loop = asyncio.get_running_loop()

        def next_one() -> None:
            while waiting:
                key = waiting.pop(0)
                if key not in self.roots:
                    self._open_now(key, self.known[key], None)
                    break
            if waiting:
                loop.call_soon(next_one)

        loop.call_soon(next_one)

    async def ensure(self, project: Project, seen: Path | None = None) -> Root:
        """The root of ``project``, created (``MEMORY.md``, ``memories/``) and opened when it is not served yet;
        ``seen`` (the folder a session or command came from) is recorded in its ``project.json``.

        Raises:
            MMError(E_IO | E_PARSE), LockHeld: if the root cannot be created, locked or loaded.
        """
        root = self.roots.get(project.key)
        if root is not None:
            if seen is not None and str(seen) not in root.project.get("paths", ()):
                root.project = await asyncio.to_thread(record_project, root.path, project, seen, self._now_iso())
            return root
        return await self._open(project.key, project_root(self.home, project), project, seen)

    async def ensure_key(self, key: str, folders: list[str]) -> Root:
        """The root of the project ``key`` (a candidate's proposed root), created when it is not served: through
        the first of ``folders`` (where the candidate was said) that is still that project, so its
        ``project.json`` knows it; else by key alone (the folder is gone, or this machine never saw it).

        Raises:
            DaemonError(E_INVALID): for a malformed key. MMError, LockHeld: as :meth:`ensure`.
        """
        if not is_key(key):
            raise DaemonError(ErrorCode.E_INVALID, f"{key!r} is not a project key")
        served = self.roots.get(key)
        if served is not None:
            return served
        for folder in folders:
            if os.path.isabs(folder):
                project = await asyncio.to_thread(project_for, folder, self.home, session=True)
                if project is not None and project.key == key:
                    return await self.ensure(project, Path(folder))
        return await self._open(key, self.home / PROJECTS_DIR / key, None, None)

    async def _open(self, key: str, path: Path, project: Project | None, seen: Path | None) -> Root:
        await self._open_gate.wait()  # a sync holding every root: opened once it ends
        pending = self._opening.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        served = self.roots.get(key)
        if served is not None:  # opened meanwhile (a sync made it, the watcher saw it)
            return served
        future: asyncio.Future[Root] = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        try:
            lock, options, info = await asyncio.to_thread(self._lock_and_prepare, key, path, project, seen,
                                                          LOCK_WAIT_S)
            try:
                state = self._state(options, path, lock)
                await asyncio.to_thread(state.store.ensure_root)
                await state.load()
            except BaseException:
                lock.release()
                raise
            root = self._served(Root(key, state, lock, info))
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: a waiter re-raises it, no "never retrieved" warning
            raise
        finally:
            del self._opening[key]
        future.set_result(root)
        return root

    def _open_now(self, key: str, path: Path, project: Project | None) -> Root | None:
        """Open an existing project root at once, on the loop (a read found it on disk before any write made the
        daemon open it: a root committed with its project, or one made by another tool); None when its lock is
        held, a sync holds every root (it is opened once the sync ends) or it cannot be loaded (logged; the read sees
        the user root alone)."""
        if key in self._opening or not self._open_gate.is_set():
            return None
        try:
            lock, options, info = self._lock_and_prepare(key, path, project, None, 0.0)
        except (MMError, OSError) as error:
            log.warning("project.open_deferred key=%s root=%s error=%r", key, path, str(error))
            return None
        try:
            state = self._state(options, path, lock)
            state.load_now()
        except (MMError, OSError) as error:
            lock.release()
            log.error("project.open_failed key=%s root=%s error=%r", key, path, str(error))
            return None
        return self._served(Root(key, state, lock, info))

    def _lock_and_prepare(self, key: str, path: Path, project: Project | None, seen: Path | None,
                          wait_s: float) -> tuple[WriteLock, MemoryOptions, dict[str, Any]]:
        """Make the root's folder, take its lock (waiting ``wait_s`` seconds), record the project; blocking."""
        make_folders(path)
        lock = WriteLock(path, timeout_s=wait_s)
        lock.acquire(blocking=wait_s > 0)
        try:
            self.preparing(key, path)
            info = record_project(path, project, seen, self._now_iso()) if project is not None \
                else read_project_file(path)
            return lock, project_options(self.user.state.options, path, key), info
        except BaseException:
            lock.release()
            raise

    def _state(self, options: MemoryOptions, path: Path, lock: WriteLock) -> MemoryState:
        state = MemoryState(options, now=self._clock, fts5=self.user.state.fts5_available)
        state.guard = RootGuard(path, lock.path)
        return state

    def _served(self, root: Root) -> Root:
        """Serve ``root`` from now on: wired by :attr:`opened`; a root outside the home (``<repo>/.mm``) is
        remembered for the next start (``.mmd/roots.json``) and watched on its own."""
        self.roots[root.scope] = root
        self.known[root.scope] = root.path
        if not _inside(root.path, self.home):
            self._remember(root.scope, root.path)
            self.outside.append(root)
        self.opened(root)
        log.info("project.opened key=%s root=%s revision=%d", root.scope, root.path, root.state.revision)
        return root

    def _remember(self, key: str, path: Path) -> None:
        known = _read_json(self.home / STATE_DIR / OUTSIDE_FILE)
        if known.get(key) != str(path):
            try:
                atomic_write(self.home / STATE_DIR / OUTSIDE_FILE,
                             (json.dumps({**known, key: str(path)}, indent=1) + "\n").encode())
            except OSError as error:  # a record for the next start; this one serves the root anyway
                log.warning("project.remember_failed key=%s error=%r", key, str(error))

    async def stop(self) -> None:
        """At shutdown, once no request runs: the project roots' injectors finish their work, then their locks are
        released (the user root's are the daemon's own undo steps)."""
        for root in self.projects():
            if root.watcher is not None:
                await root.watcher.stop()
            if root.injector is not None:
                await root.injector.stop()
            with contextlib.suppress(Exception):  # its version history's connection
                root.state.store.versions.close()
            with contextlib.suppress(OSError, MMError):
                root.lock.release()

    # --- scopes ----------------------------------------------------------------------------------

    def get(self, scope: str) -> Root | None:
        """The root served for ``scope`` (``user`` or a key), or None."""
        return self.roots.get(scope)

    def resolve(self, p: dict[str, Any]) -> Scoped:
        """The scope of one request's params: ``project`` (a key, an absolute path, or ``user``), else the
        session's scope (``sessionId`` of a session opened with a project), else the user root. Opens nothing:
        a project whose root is not served yet resolves with ``root`` None (:meth:`writable` creates it).

        Raises:
            DaemonError(E_INVALID): for a relative path, a malformed value, or a key no root has.
        """
        raw = p.get("project")
        if raw is None and isinstance(p.get("sessionId"), str):
            raw = self.session_scopes.get(p["sessionId"])
        if raw is None or raw == USER:
            return Scoped(USER, self.user, None, self.user)
        if not isinstance(raw, str) or not raw.strip():
            raise DaemonError(ErrorCode.E_INVALID, "project must be a project key, an absolute path or 'user'")
        if is_key(raw):
            root = self.roots.get(raw)
            where = self.known.get(raw, self.home / PROJECTS_DIR / raw)
            if root is None and (where / INDEX_NAME).is_file():
                root = self._open_now(raw, where, None)
            if root is None:
                raise DaemonError(ErrorCode.E_INVALID, f"no project root {raw!r} in {self.home / PROJECTS_DIR} "
                                  "(mmctl project list shows the projects)", project=raw)
            return Scoped(raw, root, None, self.user)
        if not os.path.isabs(raw):
            raise DaemonError(ErrorCode.E_INVALID, f"project {raw!r} is neither a project key nor an absolute path")
        project = project_for(raw, self.home, session=True)
        assert project is not None  # session=True: a folder is at least its own project
        root = self.roots.get(project.key)
        if root is None:
            where = self.known.get(project.key) or project_root(self.home, project)
            if (where / INDEX_NAME).is_file():
                root = self._open_now(project.key, where, project)
        return Scoped(project.key, root, project, self.user)

    async def writable(self, p: dict[str, Any]) -> Root:
        """The root a write with params ``p`` goes to; a project's is created by its first write (and the folder
        named by ``project`` recorded in its ``project.json``).

        Raises:
            DaemonError(E_INVALID): as :meth:`resolve`.
            MMError, LockHeld: as :meth:`ensure`.
        """
        scoped = self.resolve(p)
        if scoped.root is not None:
            return scoped.root
        assert scoped.project is not None
        raw = p.get("project")
        return await self.ensure(scoped.project, Path(raw) if isinstance(raw, str) and os.path.isabs(raw) else None)

    async def move(self, source: Root, target: Root, topics: list[str]) -> dict[str, Any]:
        """Move ``topics`` from ``source`` into ``target`` (:func:`mmd.core.move.move_notes`) holding both roots'
        write locks (in :meth:`ordered`'s order, as a sync takes them), then install one new revision in each
        (cause ``adopt``): ``{ok, moved, refused, revisions}``.

        Raises:
            DaemonError(E_UNAVAILABLE): if either root was lost. MMError: as :func:`~mmd.core.move.move_notes`.
        """
        from mmd.core.move import move_notes

        first, second = self.ordered([source, target])
        async with first.state.lock, second.state.lock:
            for root in (target, source):
                if root.state.guard is not None:
                    root.state.guard.require()
            outcome = await asyncio.to_thread(move_notes, source.state.store, target.state.store, topics)
            revisions: dict[str, int] = {}
            for root in (target, source):
                revision = await asyncio.to_thread(root.state.prepare_load)
                root.state.adopt(revision, "adopt")
                revisions[root.scope] = root.state.revision
        return {**outcome, "revisions": revisions}

    # --- the watcher's batches -------------------------------------------------------------------

    async def refresh(self, rels: list[str]) -> Revision | None:
        """Route a batch of changed paths (relative to the user root) to their roots' ``refresh``; a project
        root that appeared (``projects/<key>/MEMORY.md`` written by another tool, a sync) is opened.
        Returns the user root's new revision, or the last project's, or None."""
        mine: list[str] = []
        theirs: dict[str, list[str]] = {}
        prefix = PROJECTS_DIR + "/"
        for rel in rels:
            if rel.startswith(prefix):
                key, _, inner = rel[len(prefix):].partition("/")
                if is_key(key) and inner and not (inner == STATE_DIR or inner.startswith(STATE_DIR + "/")):
                    theirs.setdefault(key, []).append(inner)
            else:
                mine.append(rel)
        last: Revision | None = None
        for key, changed in theirs.items():
            root = self.roots.get(key)
            if root is None:
                if INDEX_NAME in changed:
                    await self._open(key, self.home / PROJECTS_DIR / key, None, None)
                continue
            last = await root.state.refresh(changed) or last
        if mine:
            last = await self.user.state.refresh(mine) or last
        return last
