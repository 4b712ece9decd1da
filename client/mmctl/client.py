"""``Client``: the blocking client of ``mmd`` (JSON-RPC 2.0 over a ZeroMQ DEALER socket).

One socket per client, requests sent one at a time; replies are matched by
``id`` and stale ones (from a request that timed out) are dropped. The socket
connects with ``ZMQ_IMMEDIATE``, so a request waits for a live daemon instead
of queueing into the void: no daemon within the timeout is
:class:`~.errors.DaemonUnavailable`, a daemon that took the request and did
not answer is :class:`~.errors.RequestTimeout`. ZeroMQ reconnects by itself
when a daemon comes back on the same endpoint; read-only requests lost in a
restart are sent once more, and any request a stopping daemon refused unexecuted
(``E_SHUTTING_DOWN``) is sent again until its timeout, to the next daemon
(both decided by :class:`~._base.Attempt`). Not thread-safe: one client per thread.
"""

from __future__ import annotations

import itertools
import os
import time
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import zmq

from mmd.wire.endpoints import LIVENESS_MS, listener_of
from mmd.wire.methods import MEMORY_CLOSE, MEMORY_OPEN, SESSION_PARAM

from ._base import (
    DEFAULT_TIMEOUT_MS,
    Attempt,
    EndpointCheck,
    Methods,
    Post,
    SessionMethods,
    Target,
    answers,
    decode_reply,
    encode_request,
    start_hint,
)
from .errors import DaemonUnavailable, NoSessionError, RequestTimeout
from .events import Event, SeqTracker, decode_event
from .transport import Curve, connect

__all__ = ["Client", "Session", "Subscription"]


class Client(Methods):
    """A blocking client for the daemon owning ``root``.

    Example::

        with Client("~/.dsh/memory") as client:
            print(client.status()["revision"])
            with client.session() as s:          # a frozen snapshot
                s.write("deploy", "us-east-1")
                s.read("deploy")                  # None: the session still sees its snapshot

    Args:
        root: the memory root (None: ``$DSH_MEMORY_ROOT``, else ``$DSH_HOME/memory``).
        endpoint, pub_endpoint: explicit endpoints instead of the ones derived from the root.
        timeout_ms: how long one request waits for its answer, in milliseconds.
        env: the environment to resolve the root and ``$XDG_RUNTIME_DIR`` from (default ``os.environ``).
        curve: CURVE keys, required by a daemon on ``tcp://`` endpoints.
        project: the scope of every memory method (:attr:`~._base.Methods.project`): a project key or an absolute
            path; None, the user root.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, *, endpoint: str | None = None,
                 pub_endpoint: str | None = None, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                 env: Mapping[str, str] | None = None, curve: Curve | None = None,
                 project: str | None = None) -> None:
        self.target = Target.resolve(root, endpoint=endpoint, pub_endpoint=pub_endpoint, env=env)
        self.project = project
        self.timeout_ms = timeout_ms
        self.curve = curve
        self._ctx: zmq.Context[Any] = zmq.Context.instance()
        self._sock: zmq.Socket[bytes] | None = None
        self._ids = itertools.count(1)
        self._check = EndpointCheck(self.target.rpc)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the socket (a later call opens a new one); ``AsyncClient.aclose`` is the async twin."""
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None

    def close_socket(self) -> None:
        """Deprecated name of :meth:`close`."""
        warnings.warn("Client.close_socket() is deprecated; use Client.close()", DeprecationWarning, stacklevel=2)
        self.close()

    def _socket(self) -> zmq.Socket[bytes]:
        if self._sock is None:
            self._check()  # before connecting: not even ZeroMQ's greeting goes to another user's socket
            self._sock = connect(self._ctx.socket(zmq.DEALER), self.target.rpc, self.curve)
        return self._sock

    def call(self, method: str, params: Mapping[str, Any] | None = None, *, timeout_ms: int | None = None) -> Any:
        """Send any method and return its result (see :class:`Methods` for the named ones).

        Raises:
            RpcError: the daemon's error answer, typed by its ``data.code`` (``E_TOO_LARGE`` too).
            DaemonUnavailable: no daemon took the request within ``timeout_ms``.
            UnsafeEndpoint: another user owns the socket folder, the socket or the listener (nothing sent).
            RequestTimeout: the daemon took it but did not answer in time (read-only
                methods are sent once more first).
        """
        return self._call(method, dict(params or {}), None, timeout_ms)

    def _call(self, method: str, params: dict[str, Any], post: Post = None, timeout_ms: int | None = None) -> Any:
        timeout = self.timeout_ms if timeout_ms is None else timeout_ms
        params = self._in_scope(method, params)
        attempt = Attempt.start(method, timeout, time.monotonic())
        while True:
            try:
                reply = self._roundtrip(method, params, timeout)
            except RequestTimeout:
                if attempt.resend_after_timeout():
                    continue
                raise
            pause_s = attempt.retry_pause_s(reply, time.monotonic())
            if pause_s is None:
                return attempt.result(reply, post)
            time.sleep(pause_s)

    def _roundtrip(self, method: str, params: dict[str, Any], timeout_ms: int) -> dict[str, Any]:
        sock = self._socket()
        deadline = time.monotonic() + timeout_ms / 1000
        rid = next(self._ids)
        listener = listener_of(self._check.path, connect=False)
        while not sock.poll(max(1, min(int((deadline - time.monotonic()) * 1000), LIVENESS_MS)), zmq.POLLOUT):
            if time.monotonic() >= deadline or listener is not None and listener_of(self._check.path) != listener:
                raise DaemonUnavailable(start_hint(self.target), self.target.rpc)
        self._check()  # connected: check who listens before anything is sent
        frame = encode_request(rid, method, params)
        try:
            sock.send(frame, zmq.NOBLOCK)
        except zmq.Again:
            raise DaemonUnavailable(start_hint(self.target), self.target.rpc) from None
        while True:
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                raise RequestTimeout(f"{method}: no answer from the daemon within {timeout_ms} ms", self.target.rpc)
            if not sock.poll(min(left_ms, LIVENESS_MS), zmq.POLLIN):
                if listener is not None and listener_of(self._check.path) != listener:
                    raise DaemonUnavailable(f"{method}: the daemon stopped before it answered, so whether the call "
                                            f"took effect is unknown (`mmctl status` once it runs again); "
                                            f"{start_hint(self.target)}", self.target.rpc)
                continue
            reply = decode_reply(sock.recv())
            if reply is not None and answers(reply, rid, len(frame)):
                return reply

    def session(self) -> Session:
        """Open a frozen-snapshot session (``memory.open``); use it as a context manager to close it."""
        return Session(self, self.open())

    def subscribe(self, topics: tuple[str, ...] | list[str] = (), *, timeout_ms: int | None = None) -> Subscription:
        """Subscribe to events (all topics when ``topics`` is empty); iterate the result.

        Args:
            topics: topic prefixes (``memory/`` matches ``memory/changed`` and ``memory/nudge``).
            timeout_ms: stop iterating after this long without an event (None: wait forever).

        Raises:
            UnsafeEndpoint: another user owns the event socket's folder, the socket or its listener.
        """
        EndpointCheck(self.target.pub)()  # events from another user's socket would be forged
        return Subscription(self._ctx, self.target.pub, topics, timeout_ms, self.curve)


class Session(SessionMethods):
    """A frozen snapshot pinned in the daemon; every read sees it until :meth:`reload` or close.

    Attributes:
        session_id, revision, loaded_at: from ``memory.open``.
    """

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()

    def end(self) -> Any:
        """Close the session (``memory.close``); a session already gone (daemon restarted) is fine."""
        try:
            return self._parent._call(MEMORY_CLOSE.name, {SESSION_PARAM: self.session_id})
        except (NoSessionError, DaemonUnavailable):
            return None

    def close(self) -> Any:
        """Close the session, as :meth:`end` (``with client.session() as s:`` does it on exit)."""
        return self.end()

    def reopen(self) -> Session:
        """Pin a new snapshot after the session was lost (daemon restart, expiry)."""
        self._parent._call(MEMORY_OPEN.name, {}, self._pinned)
        return self


class Subscription:
    """Events from the daemon's PUB socket, as an iterator of :class:`~.events.Event` (``seq`` gaps counted)."""

    def __init__(self, ctx: zmq.Context[Any], endpoint: str, topics: tuple[str, ...] | list[str],
                 timeout_ms: int | None, curve: Curve | None = None) -> None:
        self.sock = connect(ctx.socket(zmq.SUB), endpoint, curve)
        self.topics = tuple(topics)
        self.timeout_ms = timeout_ms
        self.tracker = SeqTracker()

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        while True:
            if not self.sock.poll(self.timeout_ms):
                raise StopIteration
            event = decode_event(self.sock.recv_multipart(), self.tracker)
            if event is not None and (not self.topics or event.topic.startswith(self.topics)):
                return event

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Unsubscribe and close the socket."""
        self.sock.close(linger=0)

