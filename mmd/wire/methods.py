"""The RPC method table: every method of DESIGN.md once, with its params and how it may be called.

Each method is one :class:`Method` constant (``MEMORY_WRITE``, ``QUEUE_ACCEPT``, …)
holding its name, its params (accepted types, required or not), whether a
resend is safe (``idempotent``), and whether the daemon answers it on the loop
(``inline``: a cheap read of an immutable snapshot). :data:`METHODS` indexes
them by name. The daemon binds one handler to each name and checks params with
:func:`check_params`; the client derives its resend and session rules from the
same rows. A method name is written once, here. ``schema/rpc.schema.json``
holds the same table (``tests/test_wire.py`` keeps them equal). This module
never touches a socket.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mmd.core.errors import ErrorCode
from mmd.core.record import Record

from .hooknames import MEMORY_INJECT_NAME, MEMORY_INJECTED_NAME
from .protocol import DaemonError, UnknownMethod

__all__ = [
    "DAEMON_STATUS",
    "MEMORY_ADOPT",
    "ID_DIGITS",
    "INT_LIMIT",
    "MEMORY_BUDGET",
    "MEMORY_CLOSE",
    "MEMORY_DELETE",
    "MEMORY_DIFF",
    "MEMORY_DIGEST",
    "MEMORY_DUE",
    "MEMORY_INDEX",
    "MEMORY_INJECT",
    "MEMORY_INJECTED",
    "MEMORY_LIST",
    "MEMORY_LOG",
    "MEMORY_MERGE",
    "MEMORY_NUDGE",
    "MEMORY_OPEN",
    "MEMORY_PROPOSE",
    "MEMORY_READ",
    "MEMORY_RELOAD",
    "MEMORY_RENAME",
    "MEMORY_RESTORE",
    "MEMORY_REVERT",
    "MEMORY_SEARCH",
    "MEMORY_SYNC",
    "MEMORY_WRITE",
    "METHODS",
    "QUEUE_ACCEPT",
    "QUEUE_GET",
    "QUEUE_LIST",
    "QUEUE_REJECT",
    "QUEUE_UNDO",
    "SCOPE_PARAM",
    "SESSION_PARAM",
    "Method",
    "Param",
    "check_params",
]

SESSION_PARAM = "sessionId"
"""The param naming a session opened by ``memory.open``."""

INT_LIMIT = 2**63
"""Integer params (and ids given as digit strings) lie in ``-INT_LIMIT .. INT_LIMIT - 1``, SQLite's
64-bit range; anything larger is ``E_INVALID`` at the door (a caller's mistake, never the daemon's)."""
ID_DIGITS = len(str(INT_LIMIT - 1))
"""Most decimal digits in an id given as a string (19)."""


class Param(Record):
    """One param: the Python types its JSON value may have, and whether it must be present.

    ``bool`` is accepted only where listed (JSON ``true`` is not an integer here); a null
    value counts as absent.
    """

    __slots__ = ("types", "required")

    def __init__(self, types: tuple[type, ...], required: bool = False) -> None:
        self.types, self.required = types, required


class Method(Record):
    """One RPC method (Records, not dataclasses: a one-shot ``mmctl`` write imports this module).

    Attributes:
        name: the JSON-RPC method name (``memory.write``).
        params: ``{param: Param}``, camelCase as on the wire.
        idempotent: a resend after a timeout is safe (a daemon restart may have eaten the request).
        inline: the daemon answers on the event loop (a cheap snapshot read or a session change);
            the others run as tasks.
    """

    __slots__ = ("name", "params", "idempotent", "inline")

    def __init__(self, name: str, params: Mapping[str, Param] | None = None, idempotent: bool = False,
                 inline: bool = False) -> None:
        self.name, self.idempotent, self.inline = name, idempotent, inline
        self.params: Mapping[str, Param] = {} if params is None else params

    @property
    def takes_session(self) -> bool:
        """The method takes a ``sessionId`` (reads see the session's pinned revision)."""
        return SESSION_PARAM in self.params


_STR, _INT, _BOOL, _TAGS, _ID, _NUM = (str,), (int,), (bool,), (str, list), (str, int), (float,)
_IDS = (str, int, list)
_SESSION = {SESSION_PARAM: Param(_STR)}
SCOPE_PARAM = "project"
"""The param naming a request's root (``docs/projects.md``): a project key, an absolute path (that folder's
project), or ``user``; absent, the user root (or the scope of the session named by ``sessionId``)."""
_SCOPE = {SCOPE_PARAM: Param(_STR)}
_IN_SCOPE = {**_SESSION, **_SCOPE}
_ALLOW = {"allowSecret": Param(_BOOL), "allowHidden": Param(_BOOL)}
"""A person's own write lets a secret or hidden text through (``mmctl --allow-secret``; an agent's never does)."""

MEMORY_OPEN = Method("memory.open", _SCOPE, inline=True)
MEMORY_CLOSE = Method("memory.close", {SESSION_PARAM: Param(_STR, True)}, inline=True)
MEMORY_RELOAD = Method("memory.reload", {SESSION_PARAM: Param(_STR, True)}, inline=True)
MEMORY_INDEX = Method("memory.index", _IN_SCOPE, idempotent=True, inline=True)
MEMORY_READ = Method("memory.read", {"topic": Param(_STR), **_IN_SCOPE}, idempotent=True, inline=True)
MEMORY_LIST = Method("memory.list", _IN_SCOPE, idempotent=True, inline=True)
MEMORY_SEARCH = Method("memory.search", {"query": Param(_STR, True), "mode": Param(_STR), "limit": Param(_INT),
                                         **_IN_SCOPE}, idempotent=True)
MEMORY_BUDGET = Method("memory.budget", _IN_SCOPE, idempotent=True)
MEMORY_WRITE = Method("memory.write", {
    "topic": Param(_STR, True), "content": Param(_STR, True), "summary": Param(_STR), "tags": Param(_TAGS),
    "budget": Param(_INT), "ifRevision": Param(_INT), "reviewAfter": Param(_STR), **_ALLOW,
    **_IN_SCOPE})
MEMORY_DELETE = Method("memory.delete", {"topic": Param(_STR, True), "ifRevision": Param(_INT), **_IN_SCOPE})
MEMORY_DIGEST = Method("memory.digest", {"text": Param(_STR), "file": Param(_STR), "maxItems": Param(_INT),
                                         "topicHint": Param(_STR)}, idempotent=True)
MEMORY_NUDGE = Method("memory.nudge", _IN_SCOPE, idempotent=True, inline=True)
MEMORY_MERGE = Method("memory.merge", {"topics": Param((list,), True), "into": Param(_STR, True),
                                       "summary": Param(_STR), "ifRevision": Param(_INT), **_ALLOW,
                                       **_IN_SCOPE})
MEMORY_RENAME = Method("memory.rename", {"topic": Param(_STR, True), "to": Param(_STR, True),
                                         "ifRevision": Param(_INT), **_IN_SCOPE})
QUEUE_LIST = Method("queue.list", {"status": Param(_STR), "limit": Param(_INT), "offset": Param(_INT),
                                   "all": Param(_BOOL), "minScore": Param(_NUM), "project": Param(_STR),
                                   "agent": Param(_STR), "session": Param(_STR), "first": Param(_STR)},
                    idempotent=True)
QUEUE_GET = Method("queue.get", {"id": Param(_ID, True)}, idempotent=True)
QUEUE_ACCEPT = Method("queue.accept", {
    "id": Param(_IDS, True), "topic": Param(_STR), "into": Param(_STR), "content": Param(_STR),
    "summary": Param(_STR), "tags": Param(_TAGS), "ifRevision": Param(_INT), "replace": Param(_BOOL),
    "flagged": Param(_BOOL), **_SCOPE})
QUEUE_REJECT = Method("queue.reject", {"id": Param(_IDS), "below": Param(_NUM), "reason": Param(_STR)})
QUEUE_UNDO = Method("queue.undo", {"id": Param(_ID, True)})
DAEMON_STATUS = Method("daemon.status", idempotent=True, inline=True)
MEMORY_INJECT = Method(MEMORY_INJECT_NAME, {"client": Param(_STR, True), "maxBytes": Param(_INT),
                                         "commit": Param(_BOOL), "reset": Param(_BOOL), "prompt": Param(_BOOL),
                                         **_SCOPE})
MEMORY_INJECTED = Method(MEMORY_INJECTED_NAME, {"client": Param(_STR, True), "token": Param(_STR, True), **_SCOPE},
                         idempotent=True)
MEMORY_DUE = Method("memory.due", {"withinDays": Param(_INT), **_SCOPE}, idempotent=True)
# The root's history and sync (issue 18): log and restore read the version history without --git (issue 29), the
# others answer E_UNAVAILABLE without it. REV: a commit, ``r42`` or (versions) ``v17``.
MEMORY_LOG = Method("memory.log", {"topic": Param(_STR), "limit": Param(_INT), **_SCOPE}, idempotent=True)
MEMORY_DIFF = Method("memory.diff", {"rev": Param(_STR, True), "other": Param(_STR), **_SCOPE}, idempotent=True)
MEMORY_REVERT = Method("memory.revert", {"rev": Param(_STR, True), **_SCOPE})
MEMORY_RESTORE = Method("memory.restore", {"topic": Param(_STR, True), "at": Param(_STR, True), **_SCOPE})
MEMORY_SYNC = Method("memory.sync", idempotent=True)
# The agent proposes, the person decides (issue 28): a candidate marked as the agent's, in the review queue.
MEMORY_PROPOSE = Method("memory.propose", {
    "content": Param(_STR), "topic": Param(_STR), "action": Param(_STR), "summary": Param(_STR),
    "reason": Param(_STR), "agent": Param(_STR), "session": Param(_STR), **_IN_SCOPE})
# The memory home (issue 27): notes of the user root moved into a project's root, one revision in each.
MEMORY_ADOPT = Method("memory.adopt", {"topics": Param((list,), True), SCOPE_PARAM: Param(_STR, True)})

METHODS: dict[str, Method] = {m.name: m for m in (
    MEMORY_OPEN, MEMORY_CLOSE, MEMORY_RELOAD, MEMORY_INDEX, MEMORY_READ, MEMORY_LIST, MEMORY_SEARCH, MEMORY_BUDGET,
    MEMORY_WRITE, MEMORY_DELETE, MEMORY_MERGE, MEMORY_RENAME, MEMORY_DIGEST, MEMORY_NUDGE, QUEUE_LIST, QUEUE_GET,
    QUEUE_ACCEPT, QUEUE_REJECT, QUEUE_UNDO, DAEMON_STATUS, MEMORY_INJECT, MEMORY_INJECTED, MEMORY_DUE, MEMORY_LOG,
    MEMORY_DIFF, MEMORY_REVERT, MEMORY_RESTORE, MEMORY_SYNC, MEMORY_ADOPT,
    MEMORY_PROPOSE)}
"""Every method, by name."""

_TYPE_NAMES = {str: "a string", int: "an integer", bool: "a boolean", list: "a list", float: "a number"}


def check_params(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` without nulls, after checking them against the method's row of :data:`METHODS`.

    Raises:
        UnknownMethod: for a method that is not in :data:`METHODS`.
        DaemonError(E_INVALID): for an unknown, missing or mistyped param, an integer outside
            :data:`INT_LIMIT` (or a digit string of more than :data:`ID_DIGITS` digits), or a string holding a
            lone surrogate (not Unicode text, so no file can hold it).
    """
    row = METHODS.get(method)
    if row is None:
        raise UnknownMethod(method)
    spec = row.params
    out = {k: v for k, v in params.items() if v is not None}
    for key, value in out.items():
        if key not in spec:
            raise _invalid(f"{method} takes no param {key!r} (accepted: {', '.join(spec) or 'none'})")
        types = spec[key].types
        if float in types and isinstance(value, int) and not isinstance(value, bool):
            value = out[key] = float(value)  # a JSON number may be written without a fraction
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            raise _invalid(f"{method}: {key} must be {' or '.join(_TYPE_NAMES[t] for t in types)}")
        if key == "tags" and isinstance(value, list) and not all(isinstance(t, str) for t in value):
            raise _invalid(f"{method}: tags must be a string or a list of strings")
        if not _in_range(value):
            raise _invalid(f"{method}: {key} is out of range (integers lie in -2**63 .. 2**63-1, numbers are finite)")
        if key == "topics" and isinstance(value, list) and not all(isinstance(t, str) for t in value):
            raise _invalid(f"{method}: topics must be a list of strings")
        if key == "id" and isinstance(value, list) and not all(
                isinstance(i, (str, int)) and not isinstance(i, bool) for i in value):
            raise _invalid(f"{method}: id must be a candidate id or a list of them")
        if not all(_is_unicode(v) for v in (value if isinstance(value, list) else [value])):
            raise _invalid(f"{method}: {key} holds a lone surrogate (not Unicode text)")
    for key, param in spec.items():
        if param.required and key not in out:
            raise _invalid(f"{method} needs param {key!r}")
    return out


def _in_range(value: Any) -> bool:
    """False for an integer outside SQLite's 64-bit range, a number too large to be finite (``1e400``), or a digit
    string longer than :data:`ID_DIGITS`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return -INT_LIMIT <= value < INT_LIMIT
    if isinstance(value, float):
        return math.isfinite(value)
    return not (isinstance(value, str) and value.isdigit() and len(value) > ID_DIGITS)


def _is_unicode(value: Any) -> bool:
    """False for a string that cannot be UTF-8 (JSON allows ``"\\ud800"``; files cannot hold it)."""
    if not isinstance(value, str):
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _invalid(message: str) -> DaemonError:
    return DaemonError(ErrorCode.E_INVALID, message)
