"""JSON-RPC to the daemon over one ZMTP 3.0 connection to its ipc socket, without pyzmq: the hook's wire (issue 31).

The hook runs before every prompt, and importing pyzmq costs more (~36 ms) than everything else it does. It
makes two to four requests on one connection, so this module speaks the little of ZMTP 3.0 (RFC 23/ZMTP) a
DEALER needs: the greeting with the NULL mechanism, ``READY`` with ``Socket-Type`` ``DEALER``, and one-frame
messages; commands the peer sends after the handshake (``PING``) are skipped. The daemon's ROUTER sees it as
any DEALER (:class:`mmctl.Client` is one). A daemon speaking CURVE (``tcp://``, DESIGN.md) refuses the NULL
mechanism: :class:`Silent`, and the caller falls back as for a daemon that does not answer.

Trust, as :class:`mmctl._base.EndpointCheck` before anything is sent: the socket folder is private, and the
socket file and the process at the other end of *this* connection are ours or root's
(:func:`mmd.wire.endpoints.check_peer` with the connected socket: ``SO_PEERCRED``, no second connection).

Owns: the handshake, the framing, the deadlines of one connection. Never: retries, resends, or decides what to
ask. Standard library only, and ``_socket`` rather than :mod:`socket` (whose enum classes cost ~2 ms to build).
"""

from __future__ import annotations

import _socket
import json
import time

from mmd.wire.endpoints import check_peer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Absent", "Connection", "Refused", "Silent", "WireError"]

_GREETING = b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" + bytes(31)
"""Our ZMTP 3.0 greeting (64 bytes): signature, version 3.0, mechanism NULL, as-server 0, filler."""
_GREETING_BYTES = 64
_MORE, _LONG, _COMMAND = 0x01, 0x02, 0x04
"""The flag bits of a frame's first byte."""


def _property(name: bytes, value: bytes) -> bytes:
    return bytes([len(name)]) + name + len(value).to_bytes(4, "big") + value


_READY = b"\x05READY" + _property(b"Socket-Type", b"DEALER") + _property(b"Identity", b"")
"""The NULL mechanism's ``READY`` command body: we are a DEALER without an identity."""


class WireError(Exception):
    """The connection failed or the daemon's answer is not one: the caller treats the daemon as not answering."""


class Absent(WireError):
    """Nobody listens on the socket (no file, or a file a dead daemon left): the files answer, with their lock."""


class Silent(WireError):
    """A process accepts on the socket but did not answer in time, or refused us (CURVE, another user): it may
    hold the root's lock, so the files answer without it."""


class Refused(WireError):
    """The daemon answered the request with an error (``E_INVALID``, ``E_SHUTTING_DOWN``, …).

    Attributes:
        error: the JSON-RPC error object (``{code, message, data?}``; :func:`mmctl.errors.error_from_rpc` types it).
    """

    def __init__(self, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(str(message or error))
        self.error = error


def _frame(body: bytes, flags: int = 0) -> bytes:
    if len(body) < 256:
        return bytes([flags, len(body)]) + body
    return bytes([flags | _LONG]) + len(body).to_bytes(8, "big") + body


class Connection:
    """One DEALER connection to the daemon's ipc socket ``path``, opened and checked by :meth:`open`.

    Not thread-safe; one request at a time is the hook's use, though replies are matched by ``id``.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._sock: Any = None
        self._buffer = b""
        self._ids = 0

    def open(self, deadline: float) -> None:
        """Connect, check who listens, and finish the handshake by ``deadline`` (``time.monotonic()`` seconds).

        Raises:
            Absent: no socket, or nobody listens on it.
            Silent: the listener's backlog is full (a stopped daemon), no greeting came by the deadline, the
                daemon refused the handshake, or the socket fails the trust checks.
        """
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
        self._sock = sock
        sock.setblocking(False)
        try:
            sock.connect(self.path)
        except BlockingIOError:  # its backlog is full: a listener that does not accept (SIGSTOPped)
            self.close()
            raise Silent(f"{self.path}: the daemon accepts no connection") from None
        except OSError as error:
            self.close()
            raise Absent(f"{self.path}: {error.strerror or error}") from None
        try:
            check_peer(f"ipc://{self.path}", connected=sock)
        except OSError as error:  # PermissionError: another user's folder, socket or process; else it went away
            self.close()
            raise (Silent if isinstance(error, PermissionError) else Absent)(f"refusing {self.path}: {error}") from None
        self._send(_GREETING + _frame(_READY, _COMMAND), deadline)
        greeting = self._read(_GREETING_BYTES, deadline)
        if greeting[:1] != b"\xff" or greeting[9:10] != b"\x7f" or greeting[10] < 3:
            self.close()
            raise Silent(f"{self.path}: not a ZMTP 3 peer")
        flags, body = self._next_frame(deadline)
        if not flags & _COMMAND or not body.startswith(b"\x05READY"):  # an ERROR command: a mechanism we lack
            self.close()
            raise Silent(f"{self.path}: the daemon refused the NULL mechanism ({body[1:6]!r})")

    def call(self, method: str, params: dict[str, Any], deadline: float) -> Any:
        """Send one JSON-RPC 2.0 request (``params`` without its None values) and return the answer's ``result``.

        Raises:
            Refused: the daemon's error answer.
            WireError: the connection broke, or no answer by ``deadline`` (:class:`Silent`).
        """
        self._ids += 1
        rid = self._ids
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {k: v for k, v in params.items()
                                                                          if v is not None}}
        self._send(_frame(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()), deadline)
        while True:
            flags, frame = self._next_frame(deadline)
            if flags & (_COMMAND | _MORE):
                continue  # a PING, or a multi-part message no daemon reply is
            try:
                reply = json.loads(frame)
            except ValueError:
                continue
            if not isinstance(reply, dict) or reply.get("id") not in (rid, None):
                continue
            if "error" in reply:
                raise Refused(reply["error"])
            if "result" in reply:
                return reply["result"]

    def close(self) -> None:
        """Close the connection (nothing lingers: a reply still on its way is dropped)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _send(self, data: bytes, deadline: float) -> None:
        sock = self._sock
        if sock is None:
            raise WireError(f"{self.path}: the connection is closed")
        view = memoryview(data)
        while view:
            sock.settimeout(self._left(deadline))
            try:
                view = view[sock.send(view):]
            except OSError as error:
                self.close()
                raise (Silent if isinstance(error, TimeoutError) else WireError)(
                    f"{self.path}: {error.strerror or 'no answer in time'}") from None

    def _read(self, size: int, deadline: float) -> bytes:
        while len(self._buffer) < size:
            sock = self._sock
            if sock is None:
                raise WireError(f"{self.path}: the connection is closed")
            sock.settimeout(self._left(deadline))
            try:
                chunk = sock.recv(65536)
            except OSError as error:
                self.close()
                raise (Silent if isinstance(error, TimeoutError) else WireError)(
                    f"{self.path}: {error.strerror or 'no answer in time'}") from None
            if not chunk:
                self.close()
                raise WireError(f"{self.path}: the daemon closed the connection")
            self._buffer += chunk
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _next_frame(self, deadline: float) -> tuple[int, bytes]:
        flags = self._read(1, deadline)[0]
        size = int.from_bytes(self._read(8, deadline), "big") if flags & _LONG else self._read(1, deadline)[0]
        return flags, self._read(size, deadline)

    def _left(self, deadline: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            self.close()
            raise Silent(f"{self.path}: no answer in time")
        return left
