"""The daemon's ZeroMQ sockets and the root's lock at start: where they may be bound, and keeping them bound.

Owns: taking the root's lock at start (:func:`take_root_lock`: a daemon serving the root is refused at once, a
short holder is waited for), binding the PUB and ROUTER sockets (:class:`Sockets`: only in a private folder,
never over a socket a live daemon serves, ipc files user-only), binding again a socket whose file was removed
while the daemon ran, recording the endpoints in ``<root>/.mmd/endpoints.json`` (0600: a client started with
another ``$XDG_RUNTIME_DIR`` finds the daemon from the root, :func:`mmd.wire.endpoints.discover`), removing the
ipc files and that record at shutdown, and the CURVE authenticator. Never: reads or answers
requests (:mod:`.rpc`), publishes (:mod:`.events`), decides the order of startup (:mod:`.lifecycle`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any

import zmq

from mmd.core.durable import LockHeld, WriteLock, atomic_write
from mmd.core.errors import MMError
from mmd.wire.endpoints import ensure_private_dir, ipc_path, peer_credentials, record_path

from .config import Config

__all__ = ["HARD_MAX_FRAME_FACTOR", "LINGER_MS", "ROUTER_RCVHWM", "START_LOCK_WAIT_S", "Sockets", "start_authenticator",
           "take_root_lock"]

LINGER_MS = 1000
"""Longest wait to flush replies and events when the sockets close, milliseconds."""
HARD_MAX_FRAME_FACTOR = 4
"""Frames over this many times ``maxRequestBytes`` drop the peer (ZMQ_MAXMSGSIZE) instead of being read."""
ROUTER_RCVHWM = 16
"""Most messages ZeroMQ queues from one client before it stops reading that client (back-pressure)."""
START_LOCK_WAIT_S = 15.0
"""How long a start waits for the root's lock when no daemon serves the root (an ``mmctl`` writing the files
while none ran, a daemon still stopping), in seconds; a daemon that serves the root is refused at once."""

log = logging.getLogger("mmd.daemon")


async def take_root_lock(cfg: Config) -> WriteLock:
    """The root's write lock (``<root>/.mmd/lock``), held until released.

    Raises:
        LockHeld: naming the holder, at once when a daemon serves the root (its RPC socket answers), else after
            :data:`START_LOCK_WAIT_S` seconds.
        MMError(E_IO): if the lock file cannot be created.
    """
    lock = WriteLock(cfg.root, timeout_s=START_LOCK_WAIT_S)
    try:
        lock.acquire(blocking=False)
    except LockHeld:
        serving = ipc_path(cfg.rpc_endpoint)
        if serving is not None:
            refuse_live_endpoint(serving)  # a daemon serves this root: refused at once, naming it
        log.info("daemon.waiting_for_lock root=%s seconds=%g", cfg.root, START_LOCK_WAIT_S)
        await asyncio.to_thread(lock.acquire)
    return lock


class Sockets:
    """The bound sockets of one daemon.

    Args:
        cfg: the daemon's config (request size cap, CURVE keys).
    """

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.bound: list[tuple[str, zmq.Socket[bytes]]] = []

    def bind(self, context: zmq.Context[zmq.Socket[bytes]], kind: int, endpoint: str) -> zmq.Socket[bytes]:
        """A bound socket: CURVE server when keys are set; ipc files user-only (0600 in a 0700 folder).

        Raises:
            LockHeld: a live daemon serves ``endpoint``. PermissionError: its folder is not private.
            OSError, zmq.ZMQError: the bind failed (the socket is closed).
        """
        cfg = self.cfg
        sock = context.socket(kind)
        sock.setsockopt(zmq.LINGER, LINGER_MS)
        if kind == zmq.ROUTER:
            sock.setsockopt(zmq.MAXMSGSIZE, cfg.max_request_bytes * HARD_MAX_FRAME_FACTOR)
            sock.setsockopt(zmq.RCVHWM, ROUTER_RCVHWM)
        else:
            sock.setsockopt(zmq.SNDHWM, 10_000)
        if cfg.curve_secret_key is not None:
            sock.curve_server = True
            sock.curve_secretkey = cfg.curve_secret_key
            sock.curve_publickey = cfg.curve_public_key or b""
        path = ipc_path(endpoint)
        try:
            if path is None:
                sock.bind(endpoint)
            else:
                refuse_live_endpoint(path)
                _bind_ipc(sock, endpoint, path)
        except BaseException:
            sock.close(linger=0)
            raise
        self.bound.append((endpoint, sock))
        self._record()
        return sock

    def _record(self) -> None:
        """Record both endpoints in the root once both ipc sockets are bound (logged, never raised: a client in
        the daemon's own environment finds it without)."""
        import json

        cfg = self.cfg
        bound = {endpoint for endpoint, _ in self.bound}
        if not {cfg.rpc_endpoint, cfg.pub_endpoint} <= bound or ipc_path(cfg.rpc_endpoint) is None:
            return
        data = json.dumps({"rpc": cfg.rpc_endpoint, "pub": cfg.pub_endpoint, "pid": os.getpid()}).encode()
        try:
            atomic_write(record_path(cfg.root), data, 0o600)
        except MMError as error:
            log.warning("endpoints.unrecorded root=%s error=%s", cfg.root, error.message)

    def rebind_lost(self) -> None:
        """Bind again each ipc socket whose file was removed (a ``/tmp`` cleaner, ``rm -rf`` of the runtime
        folder): its clients could no longer connect, while the daemon went on looking healthy. Loop thread;
        logged, never raises."""
        for endpoint, sock in self.bound:
            path = ipc_path(endpoint)
            if path is None or sock.closed or os.path.exists(path):
                continue
            try:
                with contextlib.suppress(zmq.ZMQError):
                    sock.unbind(endpoint)
                _bind_ipc(sock, endpoint, path)
                log.warning("socket.rebound endpoint=%s: its file had been removed", endpoint)
            except (OSError, zmq.ZMQError) as error:
                log.error("socket.lost endpoint=%s error=%r: clients cannot connect until it is bound", endpoint,
                          str(error))

    def remove_files(self) -> None:
        """Remove the socket files of the bound ``ipc://`` endpoints (after the context terminated), and the
        endpoints' record when it is still this daemon's."""
        import json

        for endpoint, _ in self.bound:
            path = ipc_path(endpoint)
            if path is not None:
                path.unlink(missing_ok=True)
        record = record_path(self.cfg.root)
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if json.loads(record.read_bytes()).get("pid") == os.getpid():
                record.unlink()


def start_authenticator(context: zmq.Context[zmq.Socket[bytes]], clients_dir: Path) -> Any:
    """ZAP: only clients whose public certificate is in ``clients_dir`` get through CURVE; returns the
    started ``ThreadAuthenticator`` (stop it before the context terminates)."""
    from zmq.auth.thread import ThreadAuthenticator

    auth = ThreadAuthenticator(context, log=logging.getLogger("mmd.auth"))
    auth.start()
    auth.configure_curve(domain="*", location=str(clients_dir))
    return auth


def _bind_ipc(sock: zmq.Socket[bytes], endpoint: str, path: Path) -> None:
    """Bind ``sock`` to the ipc ``endpoint`` whose file is ``path``: its folder private (made if missing), the
    file user-only (0600).

    Raises:
        PermissionError: the folder is not private. OSError, zmq.ZMQError: the bind failed.
    """
    ensure_private_dir(path.parent)
    old = os.umask(0o077)  # the socket file is born user-only; chmod below makes sure
    try:
        sock.bind(endpoint)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)


def refuse_live_endpoint(path: Path) -> None:
    """Refuse to bind over a socket another daemon still serves (one whose root was removed and
    recreated holds no lock on the new one, yet still owns the endpoint: never two daemons on a root).

    Raises:
        LockHeld: naming the listening process when the OS tells its pid.
    """
    if not os.path.exists(path):
        return
    try:
        credentials = peer_credentials(path)
    except BlockingIOError:  # a listener that stopped accepting (SIGSTOPped) with a full backlog: alive
        raise LockHeld(path, None) from None
    except OSError:
        return  # a socket file left by a daemon that died: binding replaces it
    raise LockHeld(path, credentials[0] if credentials else None)
