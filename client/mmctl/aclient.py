"""``AsyncClient``: the asyncio client of ``mmd``, the twin of :class:`~.client.Client`.

Many requests may be in flight at once on its one DEALER socket: a reader
task matches replies to waiting requests by ``id``. Timeouts, the error types,
the resend and retry rules (one :class:`~._base.Attempt`) and ZeroMQ's own
reconnect behave as in the sync client, and the verbs are the same:
``aclose()`` for ``close()``, ``subscribe()`` on both. Use it from one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import Mapping
from typing import Any

import zmq
import zmq.asyncio

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

__all__ = ["AsyncClient", "AsyncSession", "AsyncSubscription"]


class AsyncClient(Methods):
    """An asyncio client for the daemon owning ``root``; every method returns a coroutine.

    Example::

        async with AsyncClient(root) as client:
            async with client.session() as s:
                await s.write("deploy", "us-east-1")
            async with client.subscribe(["memory/changed"]) as events:
                async for event in events:
                    print(event.seq, event.data["revision"])

    Args: as :class:`~.client.Client`.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, *, endpoint: str | None = None,
                 pub_endpoint: str | None = None, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                 env: Mapping[str, str] | None = None, curve: Curve | None = None,
                 project: str | None = None) -> None:
        self.target = Target.resolve(root, endpoint=endpoint, pub_endpoint=pub_endpoint, env=env)
        self.project = project
        self.timeout_ms = timeout_ms
        self.curve = curve
        self._ctx = zmq.asyncio.Context.instance()
        self._sock: zmq.asyncio.Socket | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._sizes: dict[int, int] = {}
        """``{request id: its frame's size in bytes}``, to match an ``id: null`` error to its request."""
        self._reader: asyncio.Task[None] | None = None
        self._check = EndpointCheck(self.target.rpc)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the reader and close the socket; waiting requests fail with DaemonUnavailable."""
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
            self._reader = None
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(DaemonUnavailable("the client was closed", self.target.rpc))
        self._waiting.clear()

    def _socket(self) -> zmq.asyncio.Socket:
        if self._sock is None:
            self._check()  # before connecting: not even ZeroMQ's greeting goes to another user's socket
            sock = connect(self._ctx.socket(zmq.DEALER), self.target.rpc, self.curve)
            self._sock = sock
            self._reader = asyncio.ensure_future(self._read(sock))
        return self._sock

    async def _read(self, sock: zmq.asyncio.Socket) -> None:
        while True:
            reply = decode_reply(await sock.recv())
            if reply is None:
                continue
            rid = reply.get("id")
            if rid is None:  # an error for a request the daemon could not read: find it by size
                sizes = self._sizes
                rid = next((r for r in self._waiting if answers(reply, r, sizes.get(r, -1))
                            and (len(self._waiting) == 1 or "bytes" in reply["error"].get("data", {}))), None)
            future = self._waiting.pop(rid, None) if isinstance(rid, int) else None
            if future is not None and not future.done():
                future.set_result(reply)

    async def call(self, method: str, params: Mapping[str, Any] | None = None, *,
                   timeout_ms: int | None = None) -> Any:
        """Send any method and return its result. Raises as :meth:`mmctl.Client.call`."""
        return await self._call(method, dict(params or {}), None, timeout_ms)

    async def _call(self, method: str, params: dict[str, Any], post: Post = None,
                    timeout_ms: int | None = None) -> Any:
        timeout = self.timeout_ms if timeout_ms is None else timeout_ms
        params = self._in_scope(method, params)
        loop = asyncio.get_running_loop()
        attempt = Attempt.start(method, timeout, loop.time())
        while True:
            try:
                reply = await self._roundtrip(method, params, timeout)
            except RequestTimeout:
                if attempt.resend_after_timeout():
                    continue
                raise
            pause_s = attempt.retry_pause_s(reply, loop.time())
            if pause_s is None:
                return attempt.result(reply, post)
            await asyncio.sleep(pause_s)

    async def _roundtrip(self, method: str, params: dict[str, Any], timeout_ms: int) -> dict[str, Any]:
        sock = self._socket()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        rid = next(self._ids)
        frame = encode_request(rid, method, params)
        listener, looked = listener_of(self._check.path, connect=False), loop.time()
        while True:  # IMMEDIATE: sending fails until a daemon is connected
            try:
                if int(sock.getsockopt(zmq.EVENTS)) & zmq.POLLOUT:
                    self._check()  # connected: check who listens before anything is sent
                    await sock.send(frame, zmq.NOBLOCK)
                    break
            except zmq.Again:
                pass
            if loop.time() >= deadline:
                raise DaemonUnavailable(start_hint(self.target), self.target.rpc) from None
            if loop.time() - looked >= LIVENESS_MS / 1000:
                looked = loop.time()
                if listener is not None and listener_of(self._check.path) != listener:
                    raise DaemonUnavailable(start_hint(self.target), self.target.rpc) from None
            await asyncio.sleep(0.02)
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._waiting[rid] = future
        self._sizes[rid] = len(frame)
        try:
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    raise RequestTimeout(f"{method}: no answer from the daemon within {timeout_ms} ms",
                                         self.target.rpc)
                try:
                    return await asyncio.wait_for(asyncio.shield(future), min(left, LIVENESS_MS / 1000))
                except TimeoutError:
                    if listener is not None and listener_of(self._check.path) != listener:
                        raise DaemonUnavailable(f"{method}: the daemon stopped before it answered, so whether the "
                                                f"call took effect is unknown; {start_hint(self.target)}",
                                                self.target.rpc) from None
        finally:
            self._waiting.pop(rid, None)
            self._sizes.pop(rid, None)

    def session(self) -> AsyncSession:
        """A frozen-snapshot session: ``async with client.session() as s:`` opens and closes it."""
        return AsyncSession(self)

    def subscribe(self, topics: tuple[str, ...] | list[str] = (), *,
                  timeout_ms: int | None = None) -> AsyncSubscription:
        """Subscribe to events (all topics when ``topics`` is empty); ``async for`` over the result.

        Args: as :meth:`mmctl.Client.subscribe`.
        """
        EndpointCheck(self.target.pub)()  # events from another user's socket would be forged
        return AsyncSubscription(self._ctx, self.target.pub, topics, timeout_ms, self.curve)


class AsyncSubscription:
    """Events from the daemon's PUB socket as an async iterator of :class:`~.events.Event` (``seq`` gaps
    counted); the twin of :class:`~.client.Subscription`, closed by ``aclose()`` or ``async with``."""

    def __init__(self, ctx: zmq.asyncio.Context, endpoint: str, topics: tuple[str, ...] | list[str],
                 timeout_ms: int | None, curve: Curve | None = None) -> None:
        self.sock = connect(ctx.socket(zmq.SUB), endpoint, curve)
        self.topics = tuple(topics)
        self.timeout_ms = timeout_ms
        self.tracker = SeqTracker()

    def __aiter__(self) -> AsyncSubscription:
        return self

    async def __anext__(self) -> Event:
        while True:
            try:
                frames = await asyncio.wait_for(self.sock.recv_multipart(),
                                                None if self.timeout_ms is None else self.timeout_ms / 1000)
            except TimeoutError:
                raise StopAsyncIteration from None
            event = decode_event(frames, self.tracker)
            if event is not None and (not self.topics or event.topic.startswith(self.topics)):
                return event

    async def __aenter__(self) -> AsyncSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Unsubscribe and close the socket."""
        self.sock.close(linger=0)


class AsyncSession(SessionMethods):
    """A frozen snapshot pinned in the daemon, opened by ``async with client.session()``."""

    def __init__(self, client: AsyncClient) -> None:
        self._parent = client
        self.session_id = ""
        self.revision = 0
        self.loaded_at = ""

    async def __aenter__(self) -> AsyncSession:
        return await self.reopen()

    async def __aexit__(self, *exc: object) -> None:
        await self.end()

    async def reopen(self) -> AsyncSession:
        """Pin a (new) snapshot: on entry, or after the session was lost in a daemon restart."""
        await self._parent._call(MEMORY_OPEN.name, {}, self._pinned)
        return self

    async def end(self) -> Any:
        """Close the session; one already gone is fine."""
        try:
            return await self._parent._call(MEMORY_CLOSE.name, {SESSION_PARAM: self.session_id})
        except (NoSessionError, DaemonUnavailable):
            return None

    async def close(self) -> Any:
        """Close the session, as :meth:`end` (``async with client.session() as s:`` does it on exit)."""
        return await self.end()

    async def aclose(self) -> Any:
        """Close the session, as :meth:`end` (the async verb of the clients)."""
        return await self.end()
