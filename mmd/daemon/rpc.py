"""The RPC server: a ZeroMQ ROUTER socket answering JSON-RPC 2.0 on the asyncio loop.

Frames are ``[identity, …envelope, request]`` (DEALER or REQ clients); the
reply goes back with the same envelope. The socket is read without blocking
whenever its file descriptor signals, in batches, so many clients are served
at once: cheap snapshot reads are answered inline, everything else runs as its
own task, so one slow request (a write waiting for fsync, a first search) never
stalls the others. A client that stops reading loses its replies once its pipe
is full (ROUTER drops, never blocks). Every request gets an answer: malformed
JSON, a non-request, an unknown method, wrong params or a message (any frame,
or all of them together) over ``max_request_bytes`` get a JSON-RPC error; no
request can stop the loop. Memory stays bounded under a flood: the requests
held by running tasks may hold at most ``max_queued_bytes`` request bytes and
``max_in_flight`` requests; one client at most a quarter of those bytes and
three quarters of those requests, so a flooding client gets ``E_BUSY`` while
another client's requests are still served. Frames stay in ZeroMQ's buffers
until needed: a request refused for its size (or, when large, for want of
room) is answered before it is copied or parsed, with its id when the id
leads the frame (:func:`peek_id`), else ``id: null`` and ``data.bytes``.
:func:`error_object` is the one place an exception becomes a JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
from typing import Any

import zmq

from mmd.core.errors import ErrorCode, MMError
from mmd.wire.methods import check_params
from mmd.wire.protocol import (
    DaemonCode,
    DaemonError,
    ErrorObject,
    FrameError,
    JsonRpc,
    UnknownMethod,
    parse_request,
    reply,
)

from .methods import Methods

__all__ = ["RpcServer", "error_object", "peek_id"]

BATCH = 128
"""Most requests read per wake-up before yielding to other tasks."""
BATCH_BYTES = 4 * 1024 * 1024
"""Most request bytes read per wake-up before yielding (large requests cost time to parse), bytes."""
PRECHECK_BYTES = 64 * 1024
"""Requests at least this large are checked against the queued-bytes limits before they are parsed, so a
flood of large requests is refused without the parsing cost (``E_BUSY`` with ``id: null`` and ``data.bytes``)."""
MAX_IN_FLIGHT = 4096
"""Most requests waiting on a task at once; more get ``E_BUSY`` at once (memory stays bounded)."""
MAX_QUEUED_BYTES = 64 * 1024 * 1024
"""Default of ``daemon.maxQueuedBytes``: most request bytes held by in-flight requests."""
PEER_SHARE = 4
"""One client may hold at most 1/PEER_SHARE of the queued bytes, and leaves 1/PEER_SHARE of the in-flight
requests to the others."""
ENVELOPE_MAX_BYTES = 1024
"""An E_TOO_LARGE answer goes back through the envelope only when it is this small (bytes); else to
the peer's identity alone, so an oversized envelope is never echoed."""

log = logging.getLogger("mmd.rpc")

_LEADING_ID = re.compile(rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,64}")\s*[,}]')
"""A request whose first top-level key (after ``jsonrpc``) is ``id``, as the clients write them."""


def peek_id(head: bytes) -> int | str | None:
    """The request id from the first bytes of a frame that is refused unparsed (too large, or no room),
    when it leads the object as the clients write it (``{"jsonrpc":"2.0","id":7,…``); else None.

    Nothing can nest before the first key, so a match is the top-level id.
    """
    found = _LEADING_ID.match(head)
    if found is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, int | str) else None

_RPC_CODES = {ErrorCode.E_INVALID.value: JsonRpc.INVALID_PARAMS, ErrorCode.E_SECRET.value: JsonRpc.INVALID_PARAMS}
"""``data.code`` → JSON-RPC code where it is not -32000 (bad params, mm's or the daemon's)."""


def error_object(exc: BaseException) -> ErrorObject:
    """The JSON-RPC error for any exception a request raised (the one mapping).

    ``FrameError`` keeps its own JSON-RPC code; ``UnknownMethod`` is -32601; ``DaemonError``
    and ``MMError`` keep their code in ``data.code`` (an ``MMError``'s ``details`` in
    ``data.details``), ``E_INVALID`` is -32602 and every other code -32000. Anything else is
    a daemon bug: -32603 with ``E_INTERNAL``.
    """
    if isinstance(exc, FrameError):
        return {"code": int(exc.rpc_code), "message": exc.message, "data": {"code": exc.code}}
    if isinstance(exc, DaemonError):
        rpc_code = JsonRpc.METHOD_NOT_FOUND if isinstance(exc, UnknownMethod) else \
            _RPC_CODES.get(exc.code, JsonRpc.SERVER_ERROR)
        return {"code": int(rpc_code), "message": exc.message, "data": {"code": exc.code, **exc.data}}
    if isinstance(exc, MMError):
        data: dict[str, Any] = {"code": exc.code.value}
        if exc.details is not None:
            data["details"] = exc.details
        return {"code": int(_RPC_CODES.get(exc.code.value, JsonRpc.SERVER_ERROR)), "message": exc.message,
                "data": data}
    return {"code": int(JsonRpc.INTERNAL_ERROR), "message": f"internal error: {type(exc).__name__}",
            "data": {"code": DaemonCode.E_INTERNAL.value}}


class RpcServer:
    """Serves :class:`Methods` on a bound ROUTER socket.

    Args:
        socket: a bound ``zmq.ROUTER`` socket (plain, not asyncio).
        methods: the method table.
        max_request_bytes: a larger request (any one frame, or all frames together) gets
            ``E_TOO_LARGE`` (bytes); its ``data`` says ``bytes`` and ``limit``.
        max_in_flight: most task-run requests at once; the rest get ``E_BUSY`` (reads answered
            inline are never refused).
        max_queued_bytes: most request bytes held by task-run requests at once (bytes); the rest
            get ``E_BUSY``. One client (ROUTER identity) holds at most 1/:data:`PEER_SHARE` of the
            bytes and leaves 1/:data:`PEER_SHARE` of the requests to the others.
    """

    def __init__(self, socket: zmq.Socket[bytes], methods: Methods, max_request_bytes: int,
                 max_in_flight: int = MAX_IN_FLIGHT, max_queued_bytes: int = MAX_QUEUED_BYTES) -> None:
        self.socket = socket
        self.methods = methods
        self.max_request_bytes = max_request_bytes
        self.max_in_flight = max_in_flight
        self.max_queued_bytes = max_queued_bytes
        self.queued_bytes = 0
        """Request bytes held by the running tasks."""
        self._peers: dict[bytes, list[int]] = {}
        """``{identity: [requests, bytes]}`` held by each client's running tasks."""
        self.tasks: set[asyncio.Task[None]] = set()
        self.requests = 0
        self.stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drain_pending = False
        self._fd = -1

    def start(self) -> None:
        """Begin serving on the running loop."""
        self._loop = asyncio.get_running_loop()
        self._fd = int(self.socket.getsockopt(zmq.FD))
        self._loop.add_reader(self._fd, self._drain)
        self._wake()

    async def stop(self, timeout_s: float) -> int:
        """Refuse new requests (``E_SHUTTING_DOWN``) and wait for the in-flight ones.

        Args:
            timeout_s: longest wait for in-flight requests, seconds; the rest are cancelled.

        Returns:
            How many in-flight requests were cancelled (0 when all finished).
        """
        self.stopping = True
        if not self.tasks:
            return 0
        _, pending = await asyncio.wait(set(self.tasks), timeout=timeout_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=1.0)
        return len(pending)

    def close(self, linger_ms: int = 1000) -> None:
        """Stop reading and close the socket, flushing queued replies for at most ``linger_ms`` ms."""
        if self._loop is not None and not self.socket.closed:
            self._loop.remove_reader(self._fd)
        if not self.socket.closed:
            self.socket.close(linger=linger_ms)

    # --- reading --------------------------------------------------------------------------------

    def _wake(self) -> None:
        """Schedule one drain (the FD is edge-triggered: any send or recv may consume its signal)."""
        if not self._drain_pending and self._loop is not None:
            self._drain_pending = True
            self._loop.call_soon(self._drain)

    def _drain(self) -> None:
        self._drain_pending = False
        if self.socket.closed:
            return
        read = 0
        for _ in range(BATCH):
            if read >= BATCH_BYTES:
                break
            try:  # frames stay in ZeroMQ's buffers until needed: a refused large request is never copied
                frames = self.socket.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            except zmq.ZMQError as error:
                log.error("rpc.recv_failed error=%s", error)
                return
            read += sum(len(f) for f in frames)
            try:
                self._handle(frames)
            except Exception:  # noqa: BLE001 - a bug in one request must not stop the loop
                log.exception("rpc.handle_failed")
        self._wake()  # more may be waiting: yield to the other tasks, then come back

    def _handle(self, frames: list[zmq.Frame]) -> None:
        if len(frames) < 2:
            return  # ROUTER always prefixes the peer's identity; anything else is not a client
        self.requests += 1
        peer = frames[0].bytes
        size = sum(len(f) for f in frames[1:])
        small = sum(len(f) for f in frames[:-1]) <= ENVELOPE_MAX_BYTES
        envelope = [f.bytes for f in frames[:-1]] if small else [peer]  # an oversized envelope is never echoed
        if size > self.max_request_bytes:
            self._too_large(envelope, size, peek_id(bytes(frames[-1].buffer[:128])))
            return
        if size >= PRECHECK_BYTES and not self.stopping:
            try:
                self._room(peer, size)
            except DaemonError as busy:
                error = error_object(busy)
                error["data"]["bytes"] = size
                self._send(envelope, reply(peek_id(bytes(frames[-1].buffer[:128])), error=error))
                return
        try:
            rid, method, raw_params, wants_reply = parse_request(frames[-1].bytes)
        except FrameError as error:
            self._send(envelope, reply(error.request_id, error=error_object(error)))
            return
        if self.stopping:
            self._send(envelope, reply(rid, error=error_object(DaemonError(
                DaemonCode.E_SHUTTING_DOWN, "the daemon is shutting down"))))
            return
        to = envelope if wants_reply else None
        try:
            params = check_params(method, raw_params)
            inline = self.methods.inline.get(method)
            if inline is None:
                self._admit(peer, size)
                task = asyncio.ensure_future(self._run(to, rid, method, params))
                self.tasks.add(task)
                task.add_done_callback(functools.partial(self._release, peer=peer, size=size))
                return
            result = inline(params)
        except Exception as error:  # noqa: BLE001 - every failure becomes an answer
            self._fail(to, rid, method, error)
            return
        self._send(to, reply(rid, result=result))

    def _too_large(self, envelope: list[bytes], size: int, rid: int | str | None) -> None:
        """Answer an oversized message (never parsed: its id only when it leads, see :func:`peek_id`)
        with its size and the limit."""
        error = error_object(FrameError(JsonRpc.INVALID_REQUEST, DaemonCode.E_TOO_LARGE,
                                        f"request of {size} bytes exceeds the {self.max_request_bytes}-byte limit"))
        error["data"].update(bytes=size, limit=self.max_request_bytes)
        self._send(envelope, reply(rid, error=error))

    def _admit(self, peer: bytes, size: int) -> None:
        """Count a task-run request of ``size`` bytes from ``peer``.

        Raises:
            DaemonError(E_BUSY): if it would pass the in-flight or queued-bytes limit, overall or
                the client's share.
        """
        held = self._room(peer, size)
        held[0] += 1
        held[1] += size
        self._peers[peer] = held
        self.queued_bytes += size

    def _room(self, peer: bytes, size: int) -> list[int]:
        """``[requests, bytes]`` ``peer`` holds now, when one more request of ``size`` bytes fits.

        Raises:
            DaemonError(E_BUSY): if it would pass a limit, overall or the client's share.
        """
        held = self._peers.get(peer, [0, 0])
        if len(self.tasks) >= self.max_in_flight or held[0] >= self.max_in_flight - self.max_in_flight // PEER_SHARE:
            raise DaemonError(DaemonCode.E_BUSY, f"{len(self.tasks)} requests already in flight "
                                                 f"({held[0]} of yours); retry later")
        if self.queued_bytes + size > self.max_queued_bytes or (
                held[1] and held[1] + size > self.max_queued_bytes // PEER_SHARE):
            raise DaemonError(DaemonCode.E_BUSY, f"{self.queued_bytes} request bytes already queued "
                                                 f"({held[1]} of yours); retry later")
        return held

    def _release(self, task: asyncio.Task[None], peer: bytes, size: int) -> None:
        self.tasks.discard(task)
        self.queued_bytes -= size
        held = self._peers.get(peer)
        if held is not None:
            held[0] -= 1
            held[1] -= size
            if held[0] <= 0:
                del self._peers[peer]

    async def _run(self, to: list[bytes] | None, rid: Any, method: str, params: dict[str, Any]) -> None:
        try:
            self._send(to, reply(rid, result=await self.methods.awaited[method](params)))
        except Exception as error:  # noqa: BLE001
            self._fail(to, rid, method, error)
        self._wake()

    def _fail(self, to: list[bytes] | None, rid: Any, method: str, error: Exception) -> None:
        if not isinstance(error, (DaemonError, MMError)):
            log.exception("rpc.internal_error method=%s", method)
        self._send(to, reply(rid, error=error_object(error)))

    def _send(self, envelope: list[bytes] | None, data: bytes) -> None:
        if envelope is None or self.socket.closed:
            return
        try:
            self.socket.send_multipart([*envelope, data], flags=zmq.NOBLOCK)
        except zmq.ZMQError as error:  # Again: the peer's pipe is full; EHOSTUNREACH: it left
            log.debug("rpc.reply_dropped error=%s", error)
