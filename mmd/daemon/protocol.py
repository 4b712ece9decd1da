"""The wire: JSON-RPC 2.0 request/response shapes, event payloads, and the one error mapping.

Every RPC message is one JSON object in the last frame of a ZeroMQ message.
Errors carry ``data.code``, an mm code (``E_INVALID``, ``E_PARSE``, …) or one
of the daemon's own (:class:`DaemonCode`); :func:`error_object` is the only
place an exception becomes a JSON-RPC error. Budget overruns are never errors:
they are ``{ok: false, …}`` results (mm v1 §6). This module never touches a
socket.

Errors raised inside the daemon::

    Exception
     ├── MMError        (mmd.core) mapped by its code; E_INVALID → -32602
     └── RpcError       a JSON-RPC error with an explicit JSON-RPC code and data.code
"""

from __future__ import annotations

import enum
import json
from typing import Any, NotRequired, TypedDict

from mmd.core.errors import ErrorCode, MMError

__all__ = [
    "CandidateJson",
    "CandidateSource",
    "ChangedEvent",
    "ChangedItem",
    "DaemonCode",
    "ErrorObject",
    "HeartbeatEvent",
    "JsonRpc",
    "NudgeEvent",
    "OpenResult",
    "QueueAcceptResult",
    "QueueAddedEvent",
    "QueueListResult",
    "Request",
    "Response",
    "RpcError",
    "encode",
    "error_object",
    "error_response",
    "parse_request",
    "result_response",
]


class JsonRpc(enum.IntEnum):
    """JSON-RPC 2.0 error codes."""

    PARSE_ERROR = -32700
    """The frame is not valid UTF-8 JSON."""
    INVALID_REQUEST = -32600
    """Valid JSON that is not a request object (or too large to be answered)."""
    METHOD_NOT_FOUND = -32601
    """No such method."""
    INVALID_PARAMS = -32602
    """Missing, unknown or mistyped params, or an mm ``E_INVALID``."""
    INTERNAL_ERROR = -32603
    """A bug in the daemon; the daemon serves on."""
    SERVER_ERROR = -32000
    """An mm or daemon error (see ``data.code``)."""


class DaemonCode(enum.StrEnum):
    """``data.code`` values the daemon adds to the mm codes."""

    E_CONFLICT = "E_CONFLICT"
    """``ifRevision`` did not match the current revision; ``data.revision`` is the current one."""
    E_UNAVAILABLE = "E_UNAVAILABLE"
    """The method exists in the contract but is not served by this daemon (ingestion turned off)."""
    E_NOT_FOUND = "E_NOT_FOUND"
    """No review-queue candidate has that id."""
    E_DECIDED = "E_DECIDED"
    """The candidate was already accepted or rejected; ``data.status`` says which."""
    E_EXISTS = "E_EXISTS"
    """Accepting would overwrite the note ``data.topic`` (``data.uri``); pass ``replace`` or another topic."""
    E_NO_SESSION = "E_NO_SESSION"
    """Unknown, closed or expired ``sessionId``."""
    E_TOO_LARGE = "E_TOO_LARGE"
    """The request frame exceeds ``daemon.maxRequestBytes``."""
    E_BUSY = "E_BUSY"
    """Too many requests are in flight; retry later."""
    E_SHUTTING_DOWN = "E_SHUTTING_DOWN"
    """The daemon is stopping and takes no new work."""
    E_INTERNAL = "E_INTERNAL"
    """An unexpected failure inside the daemon."""


class RpcError(Exception):
    """Raised by the daemon's method handlers for a JSON-RPC error that is not an mm error.

    Args:
        rpc_code: the JSON-RPC code.
        code: the ``data.code`` (a :class:`DaemonCode` or ``ErrorCode`` value).
        message: a sentence for people.
        extra: more ``data`` members (``revision`` for a conflict).
    """

    def __init__(self, rpc_code: JsonRpc, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.rpc_code, self.code, self.message, self.extra = rpc_code, str(code), message, extra

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ErrorObject(TypedDict):
    """A JSON-RPC error: ``data`` always holds ``code`` (mm or daemon code)."""

    code: int
    message: str
    data: dict[str, Any]


class Request(TypedDict):
    """A JSON-RPC request; without ``id`` it is a notification and gets no answer."""

    jsonrpc: str
    method: str
    params: NotRequired[dict[str, Any]]
    id: NotRequired[str | int | None]


class Response(TypedDict):
    """A JSON-RPC response: exactly one of ``result`` and ``error``."""

    jsonrpc: str
    id: str | int | None
    result: NotRequired[Any]
    error: NotRequired[ErrorObject]


class OpenResult(TypedDict):
    """``memory.open`` → the pinned revision; ``loadedAt`` is ISO-8601 UTC."""

    sessionId: str
    revision: int
    loadedAt: str


class ChangedItem(TypedDict):
    """A topic in ``memory/changed``; ``sha256`` (hex) of the note body, absent for removed topics."""

    topic: str
    sha256: NotRequired[str]


class ChangedEvent(TypedDict):
    """``memory/changed``: ``cause`` is ``write`` | ``delete`` | ``external`` | ``config``."""

    seq: int
    at: str
    revision: int
    cause: str
    added: list[ChangedItem]
    updated: list[ChangedItem]
    removed: list[ChangedItem]


class NudgeEvent(TypedDict):
    """``memory/nudge``: the mm nudge report plus the reason (``schedule`` | ``session-end``).

    A ``session-end`` nudge names the session: the daemon session of ``memory.close``, or the
    agent's DSH session whose log went quiet with its lock released (then ``source`` is the log's path).
    """

    seq: int
    at: str
    reason: str
    queuePending: int
    sessionId: NotRequired[str]
    source: NotRequired[str]
    pendingWrites: int
    noteCount: int
    indexOverBudget: bool
    needsCommit: bool
    suggestedActions: list[str]


class HeartbeatEvent(TypedDict):
    """``daemon/heartbeat``: every ``daemon.heartbeatMs``."""

    seq: int
    at: str
    revision: int
    queuePending: int


class CandidateSource(TypedDict):
    """Where a candidate came from: ``file`` is the log's absolute path; ``sessionId``, ``seq`` and
    ``messageId`` are null for logs that are not DSH; ``kind`` is ``user`` | ``assistant`` |
    ``compaction`` (DSH text) or ``text`` | ``session-log`` (other logs, as the mm digest classifies them)."""

    sessionId: str | None
    file: str
    seq: int | None
    messageId: str | None
    kind: str


class CandidateJson(TypedDict):
    """A review-queue candidate. ``kind``/``topic``/``summary``/``body``/``chars``/``overBudget`` are the mm
    digest candidate (mm v1 §9); ``status`` is ``pending`` | ``accepted`` | ``rejected``; times are
    ISO-8601 UTC; ``written`` is the note an acceptance wrote (``{topic, revision}``)."""

    id: int
    status: str
    kind: str
    topic: str
    summary: str
    body: str
    chars: int
    overBudget: bool
    source: CandidateSource
    createdAt: str
    decidedAt: NotRequired[str]
    reason: NotRequired[str]
    written: NotRequired[dict[str, Any]]


class QueueListResult(TypedDict):
    """``queue.list`` → one page (oldest first), how many match the status filter, and how many are pending."""

    candidates: list[CandidateJson]
    total: int
    pending: int
    offset: int
    limit: int


class QueueAcceptResult(TypedDict):
    """``queue.accept`` → ``ok`` is the write's; ``write`` is the ``memory.write`` outcome (a budget
    failure keeps the candidate pending and carries ``usage``)."""

    ok: bool
    candidate: CandidateJson
    write: dict[str, Any]


class QueueAddedEvent(TypedDict):
    """``queue/added``: after each ingestion batch that added candidates; ``source`` is the log's path."""

    seq: int
    at: str
    ids: list[int]
    sessionId: str | None
    source: str


_MM_TO_RPC = {ErrorCode.E_INVALID: JsonRpc.INVALID_PARAMS}


def error_object(exc: BaseException) -> ErrorObject:
    """The JSON-RPC error for any exception a handler raised (the one mapping).

    ``MMError`` keeps its code in ``data.code`` (and ``details`` in ``data.details``);
    ``E_INVALID`` maps to -32602, every other mm code to -32000. ``RpcError``
    maps as it says. Anything else is a daemon bug: -32603 with ``E_INTERNAL``.
    """
    if isinstance(exc, RpcError):
        return {"code": int(exc.rpc_code), "message": exc.message, "data": {"code": exc.code, **exc.extra}}
    if isinstance(exc, MMError):
        data: dict[str, Any] = {"code": exc.code.value}
        if exc.details is not None:
            data["details"] = exc.details
        return {"code": int(_MM_TO_RPC.get(exc.code, JsonRpc.SERVER_ERROR)), "message": exc.message, "data": data}
    return {"code": int(JsonRpc.INTERNAL_ERROR), "message": f"internal error: {type(exc).__name__}",
            "data": {"code": DaemonCode.E_INTERNAL.value}}


def parse_request(frame: bytes) -> tuple[Any, str, dict[str, Any], bool]:
    """Decode one request frame into ``(id, method, params, wants_reply)``.

    ``params`` may be omitted (``{}``); positional (array) params are refused.

    Raises:
        RpcError(-32700 / E_PARSE): if the frame is not UTF-8 JSON.
        RpcError(-32600 / E_INVALID): if it is not a JSON-RPC 2.0 request object;
            ``extra["id"]`` carries the id when one could be read.
    """
    try:
        message = json.loads(frame)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RpcError(JsonRpc.PARSE_ERROR, ErrorCode.E_PARSE, "request is not valid JSON") from None
    if not isinstance(message, dict):
        raise RpcError(JsonRpc.INVALID_REQUEST, ErrorCode.E_INVALID, "request must be a JSON object")
    rid = message.get("id")
    if not (rid is None or isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))):
        raise RpcError(JsonRpc.INVALID_REQUEST, ErrorCode.E_INVALID, "id must be a string, an integer or null")
    if message.get("jsonrpc") != "2.0":
        raise RpcError(JsonRpc.INVALID_REQUEST, ErrorCode.E_INVALID, 'jsonrpc must be "2.0"', id=rid)
    method = message.get("method")
    if not isinstance(method, str):
        raise RpcError(JsonRpc.INVALID_REQUEST, ErrorCode.E_INVALID, "method must be a string", id=rid)
    params = message.get("params", {})
    if not isinstance(params, dict):
        raise RpcError(JsonRpc.INVALID_PARAMS, ErrorCode.E_INVALID, "params must be an object", id=rid)
    return rid, method, params, "id" in message


def encode(message: Any) -> bytes:
    """Compact UTF-8 JSON; strings holding lone surrogates are sent as ``\\uXXXX`` escapes (ASCII JSON)."""
    try:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode()


def result_response(rid: Any, result: Any) -> bytes:
    """An encoded success response."""
    return encode({"jsonrpc": "2.0", "id": rid, "result": result})


def error_response(rid: Any, exc: BaseException) -> bytes:
    """An encoded error response for ``exc`` (see :func:`error_object`)."""
    return encode({"jsonrpc": "2.0", "id": rid, "error": error_object(exc)})
