"""Errors raised by the mmctl client library.

Which base to catch::

    Exception
     └── MmctlError              code (mm or daemon code), message, data, usage
          ├── DaemonUnavailable  no daemon answers at the root's endpoint (not running, or gone)
          │    ├── RequestTimeout  a request got no answer within its timeout
          │    └── UnsafeEndpoint  another user could own the endpoint: nothing was sent
          ├── RpcError           the daemon answered with a JSON-RPC error (``rpc_code``, ``data.code``)
          │    ├── ConflictError   E_CONFLICT: ``ifRevision`` was stale; ``revision`` is the current one
          │    ├── NoSessionError  E_NO_SESSION: the session was closed, expired or lost in a restart
          │    └── SecretRefused   E_SECRET: a write carried a secret; ``findings`` name kind and line
          └── BudgetError        an ``ok: false`` write outcome, raised only when asked (``check=True``)

``code`` is always a string: an mm code (``E_INVALID``, ``E_PARSE``, …), a
budget code (``E_WRITE_BUDGET_EXCEEDED``, …) or a daemon code (``E_CONFLICT``,
``E_UNAVAILABLE``, …; :class:`mmd.wire.protocol.DaemonCode`). Nothing here touches a socket.
"""

from __future__ import annotations

from typing import Any

from mmd.core.errors import ErrorCode
from mmd.wire.protocol import DaemonCode

__all__ = [
    "BudgetError",
    "ConflictError",
    "DaemonUnavailable",
    "MmctlError",
    "NoSessionError",
    "RequestTimeout",
    "RpcError",
    "SecretRefused",
    "UnsafeEndpoint",
    "error_from_rpc",
]


class MmctlError(Exception):
    """Base of every client error.

    Args:
        code: the mm, budget or daemon code.
        message: a sentence for people.
        data: the JSON-RPC ``data`` (or the write outcome), if any.
    """

    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data or {}

    @property
    def usage(self) -> dict[str, Any] | None:
        """The usage figures a budget failure carries (mm v1 §6), else None."""
        usage = self.data.get("usage")
        return usage if isinstance(usage, dict) else None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class DaemonUnavailable(MmctlError):
    """Raised when no daemon answers at the endpoint: none runs for this root, or it stopped."""

    def __init__(self, message: str, endpoint: str = "") -> None:
        super().__init__(DaemonCode.E_UNAVAILABLE.value, message, {"endpoint": endpoint} if endpoint else None)
        self.endpoint = endpoint


class RequestTimeout(DaemonUnavailable):
    """Raised when a request got no answer within its timeout (``timeout_ms``)."""


class UnsafeEndpoint(DaemonUnavailable):
    """Raised before anything is sent when the socket folder, the socket file or the listening process
    belongs to another user (or the folder is open to others): whoever listens there is not our daemon."""


class RpcError(MmctlError):
    """Raised when the daemon answers a request with a JSON-RPC error.

    Attributes:
        rpc_code: the JSON-RPC error code (-32602 for ``E_INVALID``, -32000 for other mm errors, …).
    """

    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None, rpc_code: int = -32000) -> None:
        super().__init__(code, message, data)
        self.rpc_code = rpc_code


class ConflictError(RpcError):
    """Raised by a write or delete whose ``ifRevision`` is not the current revision."""

    @property
    def revision(self) -> int | None:
        """The daemon's current revision."""
        value = self.data.get("revision")
        return value if isinstance(value, int) else None


class NoSessionError(RpcError):
    """Raised when a ``sessionId`` is unknown: closed, expired, or lost when the daemon restarted."""


class SecretRefused(RpcError):
    """Raised when a write, merge or accept carried a secret (``E_SECRET``): nothing was written. A person's own write
    may pass ``allow_secret=True`` (``mmctl write --allow-secret``)."""

    @property
    def findings(self) -> list[dict[str, Any]]:
        """``[{field, kind, line}]``: where the secrets are, never their values."""
        details = self.data.get("details")
        found = details.get("secrets") if isinstance(details, dict) else None
        return found if isinstance(found, list) else []


class BudgetError(MmctlError):
    """Raised by ``write(..., check=True)`` when the outcome is ``ok: false``; ``usage`` says by how much."""


_BY_CODE: dict[str, type[RpcError]] = {DaemonCode.E_CONFLICT.value: ConflictError,
                                       DaemonCode.E_NO_SESSION.value: NoSessionError,
                                       ErrorCode.E_SECRET.value: SecretRefused}
"""The typed errors by ``data.code`` (the wire's :class:`~mmd.wire.protocol.DaemonCode`, or the mm code
``E_SECRET``); others are RpcError."""


def error_from_rpc(error: dict[str, Any]) -> RpcError:
    """The typed exception for a JSON-RPC error object ``{code, message, data: {code, …}}``."""
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    assert isinstance(data, dict)
    code = str(data.get("code") or DaemonCode.E_INTERNAL.value)
    cls = _BY_CODE.get(code, RpcError)
    rpc_code = error.get("code")
    return cls(code, str(error.get("message", "")), data, rpc_code if isinstance(rpc_code, int) else -32000)
