"""How one ``mmctl`` call reaches the memory: directly on the files, or through the daemon owning the root.

DESIGN.md: when a daemon owns the root, writes and everything stateful go
through it; without one, ``mmctl`` works on the files itself and takes the
root's write lock for each write. One-shot reads always read the files (each
CLI call is a fresh live view, mm v1 §7), so they never pay for a socket.

Finding the daemon is cheap: the ipc socket file must exist (a ``stat``), and
only then is pyzmq imported and ``daemon.status`` asked with a short timeout.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from mmd.core.clock import Clock
from mmd.core.config_file import config_path, memory_options
from mmd.core.durable import LockHeld, WriteLock
from mmd.core.errors import ErrorCode, MMError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from mmd.core.memory import Memory
    from mmd.core.options import MemoryOptions

    from .client import Client
    from .scope import Scope

__all__ = ["LOCKED", "LOCK_WAIT_S", "PROBE_TIMEOUT_MS", "Daemon", "Direct", "daemon_listening", "find_daemon",
           "patient_lock", "screen_secrets"]

PROBE_TIMEOUT_MS = 1000
"""How long ``daemon.status`` may take before the daemon counts as absent, in milliseconds."""
LOCK_WAIT_S = 10.0
"""How long a direct write waits for the root's write lock, in seconds."""
LOCKED = "the memory root is locked by"
"""How the message of a direct write that waited :data:`LOCK_WAIT_S` in vain begins."""


@contextlib.contextmanager
def patient_lock(root: Path, wait_s: float | None = None, env: Mapping[str, str] | None = None, *,
                 revision: bool = True) -> Iterator[None]:
    """The root's write lock, waiting at most ``wait_s`` seconds for it (default :data:`LOCK_WAIT_S`);
    ``env`` (default ``os.environ``) names where the root's daemon would listen, for the message.

    Before it is released, the root's revision high-water mark goes up by one
    (:func:`mmd.core.revision_mark.bump_mark`), so a direct-mode write is a revision too: a
    daemon started later numbers above it, and a stale ``ifRevision`` never passes. ``revision=False``
    for what writes no note (an injection's client view): no mark, no fsync of it.

    Raises:
        MMError(E_IO): if another process (a daemon that does not answer, a stuck
            writer) keeps it longer, naming its pid and the daemon's endpoint.
    """
    lock = WriteLock(root, timeout_s=LOCK_WAIT_S if wait_s is None else wait_s)
    try:
        lock.acquire()
    except LockHeld as held:
        from mmd.wire.endpoints import endpoints_for

        from .pins import wants_daemon
        from .scope import home_of

        environ = os.environ if env is None else env
        found = home_of(Path(root))  # a project root's daemon is its home's
        rpc = endpoints_for(found[0] if found else root, environ).rpc
        if not wants_daemon(environ):  # it was never asked: it may well answer
            raise MMError(ErrorCode.E_IO, f"{LOCKED} {held.holder}, likely the mmd daemon owning this root, which "
                                          f"MMCTL_NO_DAEMON=1 tells mmctl not to ask; unset it to write through "
                                          f"the daemon, or stop it, then retry") from None
        raise MMError(ErrorCode.E_IO, f"{LOCKED} {held.holder}: an mmd daemon that does not answer at "
                                      f"{rpc} (a daemon started with another $XDG_RUNTIME_DIR listens elsewhere: "
                                      f"give this client the same), or a stuck writer; stop it or wait, "
                                      f"then retry") from None
    if not revision:
        try:
            yield
        finally:
            lock.release()
        return
    try:
        yield
    finally:
        from mmd.core.revision_mark import bump_mark  # a read takes no lock and never loads it

        try:
            bump_mark(root)
        except (OSError, MMError):
            pass  # the write itself failed or the root is going away: the next write bumps it
        finally:
            lock.release()


class Direct:
    """The files themselves, through :class:`mmd.core.Memory` (a fresh live session per call).

    Args:
        root: the ``--root`` value, or None (mm v1 §2 resolution through ``env``).
        env: the environment.
        now: the clock (``MMCTL_NOW`` pins it).
        fts5: force SQLite FTS5 on/off (``MMCTL_FTS5``), None = probe when a command needs it.
        scope: the call's scope when ``root`` is its project's root (:class:`mmctl.scope.Scope`): the root then
            takes a project root's options (its key as the memory id, its own caps), and its first write
            records the project in its ``.mmd/project.json``.
    """

    __slots__ = ("env", "fts5", "now", "root", "scope")

    def __init__(self, root: str | None, env: Mapping[str, str], now: Clock, fts5: bool | None = None,
                 scope: Scope | None = None) -> None:
        self.root, self.env, self.now, self.fts5 = root, env, now, fts5
        self.scope = scope if scope is not None and scope.is_project else None

    def options(self) -> MemoryOptions:
        """The memory options of mmd's config file (the reference CLI's defaults without one) on the root; a
        project root's (:func:`mmd.core.projects.project_options`) in a project scope.

        Raises:
            MMError(E_INVALID): naming the config file, if it holds a bad value.
        """
        scope = self.scope
        if scope is None or scope.key is None:
            return memory_options(self.root, self.env, config_path(None, self.env))
        from mmd.core.projects import project_options

        base = memory_options(str(scope.home), self.env, config_path(None, self.env))
        return project_options(base, scope.root, scope.key)

    def memory(self, *, search: bool = False, options: MemoryOptions | None = None) -> Memory:
        """``Memory.ensure`` on the root (created if missing, as the reference CLI does).

        Args:
            search: the command reports or uses the search engine, so probe FTS5.

        Raises:
            MMError: as :meth:`Memory.ensure`.
        """
        from mmd.core.memory import Memory  # the hook's files path needs options and the lock, not the store

        opts = options or self.options()
        fts5 = self.fts5 if self.fts5 is not None else (None if search else False)
        scope = self.scope
        if scope is not None and scope.project is not None and not opts.root.exists():  # a project root's first use
            from mmd.core.clock import iso_ms
            from mmd.core.projects import record_project

            record_project(opts.root, scope.project, Path(scope.param) if scope.param else None, iso_ms(self.now()))
        return Memory.ensure(opts, now=self.now, fts5=fts5, lock=lambda: patient_lock(opts.root, env=self.env),
                             screen=screen_secrets)


def screen_secrets(text: str) -> Any:
    """The secrets in ``text`` (:func:`mmd.screen.secrets.find_secrets`), the screen of every direct write; the
    screen loads with the first write's check, never with a one-shot read."""
    from mmd.screen.secrets import find_secrets

    return find_secrets(text)


def daemon_listening(root: Path, env: Mapping[str, str]) -> bool:
    """Whether a process accepts connections on the RPC socket of ``root``'s daemon (a ``connect``, no request);
    True for an endpoint that is no ``ipc://`` socket (nothing to check without a request)."""
    from mmd.wire.endpoints import discover, ipc_path, listener_of

    path = ipc_path(discover(root, env).rpc)
    return path is None or listener_of(path) is not None


class Daemon:
    """A daemon that answered: its client and the ``daemon.status`` it gave."""

    __slots__ = ("client", "status")

    def __init__(self, client: Client, status: dict[str, Any]) -> None:
        self.client, self.status = client, status


def find_daemon(root: Path, env: Mapping[str, str], timeout_ms: int = PROBE_TIMEOUT_MS) -> Daemon | None:
    """The daemon owning ``root``, or None when its socket file is absent or nobody answers in ``timeout_ms``; found
    from ``env``'s ``$XDG_RUNTIME_DIR``, or from the record a daemon started with another one left in the root."""
    from mmd.wire.endpoints import discover, ipc_path, listener_of  # a one-shot read never looks for it
    from mmd.wire.methods import DAEMON_STATUS

    endpoints = discover(root, env)
    path = ipc_path(endpoints.rpc)
    if path is not None and listener_of(path) is None:  # a crashed daemon leaves its socket file
        return None
    from .client import Client
    from .errors import MmctlError

    client = Client(root, endpoint=endpoints.rpc, pub_endpoint=endpoints.pub, timeout_ms=timeout_ms, env=env)
    try:
        status = client.call(DAEMON_STATUS.name, timeout_ms=timeout_ms)
    except MmctlError:
        client.close()
        return None
    client.timeout_ms = max(timeout_ms, 10_000)
    return Daemon(client, status)
