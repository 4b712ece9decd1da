"""The wire: JSON-RPC 2.0 framing, the daemon's error codes and error, and the messages' shapes.

Every RPC message is one JSON object in the last frame of a ZeroMQ message.
Errors carry ``data.code``, an mm code (``E_INVALID``, ``E_PARSE``, …) or one
of the daemon's own (:class:`DaemonCode`). Budget overruns are never errors:
they are ``{ok: false, …}`` results (mm v1 §6). The daemon's domain raises the
transport-neutral :class:`DaemonError`; the one mapping to a JSON-RPC error
object is ``mmd.daemon.rpc.error_object`` (a later HTTP surface maps to a
status). This module never touches a socket and imports only the standard
library and :mod:`mmd.core.errors`.

Errors raised inside the daemon::

    Exception
     ├── MMError          (mmd.core) an mm error: code (ErrorCode), message, details
     ├── DaemonError      code (DaemonCode or ErrorCode.E_INVALID), message, data
     │    └── UnknownMethod  no such method (JSON-RPC -32601)
     └── FrameError       the frame is not a JSON-RPC 2.0 request (JSON-RPC only: rpc_code, request_id)
"""

from __future__ import annotations

import enum
import json
from typing import Any, NotRequired, TypedDict

from mmd.core.errors import ErrorCode

__all__ = [
    "CandidateJson",
    "CandidateSource",
    "DaemonCode",
    "DaemonError",
    "ErrorObject",
    "FrameError",
    "IngestSourceBackfill",
    "IngestSourceStatus",
    "JsonRpc",
    "OpenResult",
    "QueueAcceptResult",
    "QueueListResult",
    "Request",
    "Response",
    "UnknownMethod",
    "encode",
    "parse_request",
    "reply",
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
    """Missing, unknown or mistyped params, or an mm ``E_INVALID`` or ``E_SECRET`` (a param holds a secret)."""
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


class DaemonError(Exception):
    """Raised by the daemon's domain (state, review, methods) for a failure that is not an mm error.

    Transport-neutral: it names what went wrong, never how a transport says it.

    Args:
        code: the ``data.code`` (a :class:`DaemonCode`, or ``ErrorCode.E_INVALID`` for bad params).
        message: a sentence for people.
        data: more ``data`` members (``revision`` for ``E_CONFLICT``, ``status`` for ``E_DECIDED``,
            ``topic`` and ``uri`` for ``E_EXISTS``).
    """

    def __init__(self, code: DaemonCode | ErrorCode, message: str, **data: Any) -> None:
        super().__init__(message)
        self.code, self.message, self.data = str(code.value), message, data

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class UnknownMethod(DaemonError):
    """Raised by ``check_params`` for a method name that is not in ``METHODS`` (code ``E_INVALID``)."""

    def __init__(self, method: str) -> None:
        super().__init__(ErrorCode.E_INVALID, f"unknown method {method!r}")


class FrameError(Exception):
    """Raised when a frame is not a JSON-RPC 2.0 request the daemon can serve (JSON-RPC framing only).

    Args:
        rpc_code: the JSON-RPC code (-32700, -32600 or -32602).
        code: the ``data.code`` (``E_PARSE``, ``E_INVALID`` or ``E_TOO_LARGE``).
        message: a sentence for people.
        request_id: the request's id when one could be read, else None.
    """

    def __init__(self, rpc_code: JsonRpc, code: DaemonCode | ErrorCode, message: str,
                 request_id: str | int | None = None) -> None:
        super().__init__(message)
        self.rpc_code, self.code, self.message, self.request_id = rpc_code, str(code.value), message, request_id

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
    scope: NotRequired[str]
    """``user`` or the project key the session reads first (``docs/projects.md``)."""


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
    """A review-queue candidate (DESIGN "Sources and utterances"): ``kind`` the rule family, ``rule`` the
    rule's name, ``score`` (higher first), ``seen`` (places it was seen), ``visible`` (within its
    session's budget, or ``pinned``: marked on purpose), ``topic`` and ``proposal`` (``{action: create |
    append, topic}``; an agent's proposal, rule ``agent.propose``, also ``{action: replace | delete, by: the agent,
    reason: its one line or null}`` and, from ``queue.get`` and ``queue.list``, ``current``: the note's text now, or
    null), ``summary`` (≤ 120 code points), ``body`` (≤ 500 for agent logs), ``evidence`` (every
    place: ``{agent, sessionId, project, file, position, at, who, quote, reason?}``), ``source`` (the first place, the
    older shape); ``status`` is ``pending`` | ``accepted`` | ``rejected`` | ``expired`` (``reason``: ``age`` or
    ``backfill``); times are ISO-8601 UTC;
    ``written`` is the note an acceptance wrote (``{topic, revision}``)."""

    id: int
    status: str
    kind: str
    rule: str
    score: float
    seen: int
    visible: bool
    pinned: bool
    topic: str
    proposal: dict[str, Any]
    summary: str
    body: str
    chars: int
    overBudget: bool
    evidence: list[dict[str, Any]]
    source: CandidateSource
    createdAt: str
    decidedAt: NotRequired[str]
    reason: NotRequired[str]
    written: NotRequired[dict[str, Any]]
    scope: NotRequired[str]
    """The root the candidate is proposed to: ``user`` or a project key (``docs/projects.md``)."""
    speaker: str
    """Who said it (issue 29): ``person`` | ``agent`` | ``summary`` | ``remote`` | ``outside-edit``."""
    flags: list[dict[str, str]]
    """What the queue's door found, ``[{kind, why}]`` (an instruction aimed at an agent, ``secret``, ``hidden
    text``); empty when none. A flagged pending candidate is listed last and never accepted in bulk unnamed."""
    redacted: bool
    """A secret's value was replaced by ``‹secret: <kind>›`` in its text."""
    diff: NotRequired[str]
    """A held topic's change (kind ``held``: a sync's or an outside edit's), unified, as the door shows it."""


class QueueListResult(TypedDict):
    """``queue.list`` → one page (oldest first), how many match the status filter, how many are pending, what the
    default view leaves out (``leftOut``: ``{hidden, expired, heldBack}``) and after how many days pending a rule
    draft expires (``expireDays``)."""

    candidates: list[CandidateJson]
    total: int
    pending: int
    offset: int
    limit: int
    leftOut: dict[str, int]
    expireDays: int


class QueueAcceptResult(TypedDict):
    """``queue.accept`` → ``ok`` is the write's; ``write`` is the ``memory.write`` outcome (a budget
    failure keeps the candidate pending and carries ``usage``)."""

    ok: bool
    candidate: CandidateJson
    write: dict[str, Any]


class IngestSourceBackfill(TypedDict):
    """A source folder's last backfill: files and bytes read so far of ``filesTotal`` / ``bytesTotal``."""

    done: bool
    files: int
    bytes: int
    candidates: int
    seconds: float | None
    filesTotal: int
    bytesTotal: int


class IngestSourceStatus(TypedDict):
    """One of ``daemon.status`` ``ingest.sources``: a source of agent session logs (``kind`` ``dsh`` |
    ``claude-code`` | ``codex``), its folder, whether it is read (``phase`` ``off`` | ``stopped`` | ``waiting`` |
    ``backfill`` | ``following``), and its figures since start (bytes in bytes)."""

    kind: str
    folder: str
    enabled: bool
    phase: str
    folderPresent: bool
    files: int
    bytesRead: int
    candidatesAdded: int
    lastEventAt: str | None
    errors: int
    lastError: str | None
    backfill: IngestSourceBackfill


def _not_json(name: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity``, which Python's json reads and JSON (RFC 8259) does not have."""
    raise ValueError(f"{name} is not JSON")


def parse_request(frame: bytes) -> tuple[Any, str, dict[str, Any], bool]:
    """Decode one request frame into ``(id, method, params, wants_reply)``.

    ``params`` may be omitted (``{}``); positional (array) params are refused.

    Raises:
        FrameError(-32700 / E_PARSE): if the frame is not UTF-8 JSON.
        FrameError(-32600 or -32602 / E_INVALID): if it is not a JSON-RPC 2.0 request object;
            ``request_id`` carries the id when one could be read.
    """
    try:
        message = json.loads(frame, parse_constant=_not_json)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise FrameError(JsonRpc.PARSE_ERROR, ErrorCode.E_PARSE, "request is not valid JSON") from None
    if not isinstance(message, dict):
        raise FrameError(JsonRpc.INVALID_REQUEST, ErrorCode.E_INVALID, "request must be a JSON object")
    rid = message.get("id")
    if not (rid is None or isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))):
        raise FrameError(JsonRpc.INVALID_REQUEST, ErrorCode.E_INVALID, "id must be a string, an integer or null")
    if message.get("jsonrpc") != "2.0":
        raise FrameError(JsonRpc.INVALID_REQUEST, ErrorCode.E_INVALID, 'jsonrpc must be "2.0"', rid)
    method = message.get("method")
    if not isinstance(method, str):
        raise FrameError(JsonRpc.INVALID_REQUEST, ErrorCode.E_INVALID, "method must be a string", rid)
    params = message.get("params", {})
    if not isinstance(params, dict):
        raise FrameError(JsonRpc.INVALID_PARAMS, ErrorCode.E_INVALID, "params must be an object", rid)
    return rid, method, params, "id" in message


def encode(message: Any) -> bytes:
    """Compact UTF-8 JSON; strings holding lone surrogates are sent as ``\\uXXXX`` escapes (ASCII JSON)."""
    try:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode()


def reply(rid: Any, *, result: Any = None, error: ErrorObject | None = None) -> bytes:
    """An encoded response: the ``error`` object when given, else the ``result``."""
    if error is not None:
        return encode({"jsonrpc": "2.0", "id": rid, "error": error})
    return encode({"jsonrpc": "2.0", "id": rid, "result": result})
