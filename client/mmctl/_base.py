"""What the sync and async clients share: the typed methods, framing, the resend decision, endpoints.

:class:`Methods` maps every method of the wire's table (:data:`mmd.wire.methods.METHODS`)
to a Python method that builds the params (None means "leave it out") and calls
``self._call``. :class:`~.client.Client` implements ``_call`` with blocking sockets
and returns the result; :class:`~.aclient.AsyncClient` returns a coroutine of it.
Both ask one :class:`Attempt` whether to send again, so the resend and retry rules
are written once, here; the twins add only I/O. Which methods are safe to resend
and which take a session comes from the wire. This module never touches a socket.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mmd.core.config_file import configured_root
from mmd.core.record import Record
from mmd.wire import methods as wire
from mmd.wire.endpoints import check_peer, check_socket_folder, discover, ipc_path
from mmd.wire.methods import METHODS, QUEUE_ACCEPT, QUEUE_LIST, SCOPE_PARAM, SESSION_PARAM
from mmd.wire.protocol import DaemonCode

from ._queue import QueueMethods
from .errors import BudgetError, UnsafeEndpoint, error_from_rpc

__all__ = ["DEFAULT_TIMEOUT_MS", "IDEMPOTENT", "RESTART_RETRY_S", "SCOPED_METHODS", "SESSION_METHODS", "Attempt",
           "EndpointCheck", "Methods", "SessionMethods", "Target", "answers", "decode_reply", "encode_request",
           "refused_while_stopping", "start_hint"]

DEFAULT_TIMEOUT_MS = 5000
"""How long a request waits for its answer, in milliseconds."""

IDEMPOTENT = frozenset(name for name, method in METHODS.items() if method.idempotent)
"""Methods safely sent again after a timeout (a daemon restart may have eaten the first request)."""

SESSION_METHODS = frozenset(name for name, method in METHODS.items() if method.takes_session)
"""Methods that take a ``sessionId``."""
SCOPED_METHODS = frozenset(name for name, method in METHODS.items()
                           if SCOPE_PARAM in method.params and name not in (QUEUE_LIST.name, QUEUE_ACCEPT.name))
"""Methods a client's :attr:`Methods.project` goes with: the memory methods (the queue's ``project`` filters a
list, or moves an accepted candidate: only when asked for)."""

Post = Callable[[Any], Any] | None


class Target(Record):
    """Where a daemon listens: its ``rpc`` and ``pub`` endpoints and the ``root`` they derive from (or None).

    The classes here are :class:`~mmd.core.record.Record` and plain slotted classes, not dataclasses:
    every one-shot ``mmctl`` call through the daemon imports this module, :mod:`dataclasses` ~5 ms.
    """

    __slots__ = ("rpc", "pub", "root")

    def __init__(self, rpc: str, pub: str, root: str | None) -> None:
        self.rpc, self.pub, self.root = rpc, pub, root

    @classmethod
    def resolve(cls, root: str | os.PathLike[str] | None = None, *, endpoint: str | None = None,
                pub_endpoint: str | None = None, env: Mapping[str, str] | None = None) -> Target:
        """Endpoints given explicitly, else found from the root (``--root``, config, mm v1 §2; ``discover``)."""
        environ = os.environ if env is None else env
        if endpoint is not None:
            return cls(endpoint, pub_endpoint or "", None if root is None else os.fspath(root))
        resolved = configured_root(None if root is None else os.fspath(root), environ)
        derived = discover(resolved, environ)
        return cls(derived.rpc, pub_endpoint or derived.pub, str(resolved))


class EndpointCheck:
    """Checks an ``ipc://`` endpoint before a request goes out (issue 11): its folder is private, the
    socket and the listening process are ours (:func:`mmd.wire.endpoints.check_peer`). A socket
    already checked is checked again only when its folder or file changed (one ``lstat`` each).

    Args:
        endpoint: the daemon's RPC endpoint (other transports are never checked: CURVE guards them).
    """

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.path = ipc_path(endpoint)
        self._checked: tuple[Any, ...] | None = None

    def __call__(self) -> None:
        """Pass, or raise.

        Raises:
            UnsafeEndpoint: if another user owns or can change the folder, the socket or the listener.
        """
        if self.path is None:
            return
        try:
            folder = os.stat(self.path.parent)
        except OSError:
            return  # no folder, no socket: nothing can be connected, so nothing is sent
        try:
            sock: os.stat_result | None = os.lstat(self.path)
        except OSError:
            sock = None
        key = tuple((st.st_dev, st.st_ino, st.st_uid, st.st_mode) for st in (folder, sock) if st is not None)
        if key == self._checked:
            return
        try:
            if sock is None:
                check_socket_folder(self.path.parent)
            else:
                check_peer(self.endpoint)
        except PermissionError as error:
            raise UnsafeEndpoint(f"refusing to talk to {self.endpoint}: {error}", self.endpoint) from None
        except OSError:
            return  # nobody listens (any more): nothing is sent either
        self._checked = key


def start_hint(target: Target) -> str:
    """The sentence telling a person how to start the daemon for this target."""
    where = f" --root {target.root}" if target.root else ""
    return f"no mmd daemon answers at {target.rpc}; start one with `mmd{where}` (or its systemd unit)"


def encode_request(rid: int, method: str, params: Mapping[str, Any]) -> bytes:
    """One JSON-RPC 2.0 request frame (compact UTF-8 JSON), nulls left out of ``params``."""
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {k: v for k, v in params.items()
                                                                       if v is not None}}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


RESTART_RETRY_S = 0.1
"""Pause before sending again a request a stopping daemon refused (``E_SHUTTING_DOWN``), in seconds."""


def refused_while_stopping(reply: dict[str, Any]) -> bool:
    """Whether the daemon refused the request, unexecuted, because it is stopping: safe to send again."""
    error = reply.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    return isinstance(data, dict) and data.get("code") == DaemonCode.E_SHUTTING_DOWN.value


class Attempt:
    """The resend and retry decisions of one call, without I/O (httpx's split): the twins ask it after each try.

    Two rules: a request that got no answer is sent once more only when its method is idempotent
    (a daemon restart may have eaten it); a request a stopping daemon refused unexecuted
    (``E_SHUTTING_DOWN``) may go again, whatever the method, to the next daemon, until the deadline.

    Attributes:
        deadline_s: the clock value (``time.monotonic()`` or the loop's time, seconds) after which
            refused requests are no longer retried.
        resends: resends left after a timeout (1 for idempotent methods, else 0).
    """

    __slots__ = ("deadline_s", "resends")

    def __init__(self, deadline_s: float, resends: int) -> None:
        self.deadline_s, self.resends = deadline_s, resends

    @classmethod
    def start(cls, method: str, timeout_ms: int, now_s: float) -> Attempt:
        """The decisions of a call of ``method`` starting at ``now_s`` with ``timeout_ms`` (milliseconds)."""
        return cls(now_s + timeout_ms / 1000, 1 if method in IDEMPOTENT else 0)

    def resend_after_timeout(self) -> bool:
        """After a try got no answer: True to send again (and count it), False to raise the timeout."""
        if self.resends == 0:
            return False
        self.resends -= 1
        return True

    def retry_pause_s(self, reply: dict[str, Any], now_s: float) -> float | None:
        """After a reply: seconds to wait before sending again, or None when ``reply`` is the answer."""
        return RESTART_RETRY_S if refused_while_stopping(reply) and now_s < self.deadline_s else None

    @staticmethod
    def result(reply: dict[str, Any], post: Post = None) -> Any:
        """The answer's result (through ``post`` when given).

        Raises:
            RpcError (typed by ``data.code``): if the answer is an error.
        """
        if "error" in reply:
            raise error_from_rpc(reply["error"])
        result = reply.get("result")
        return post(result) if post is not None else result


def answers(reply: dict[str, Any], rid: int, size: int) -> bool:
    """Whether ``reply`` answers request ``rid`` whose frame was ``size`` bytes.

    A reply carries its request's id, except an error for a request the daemon could not read
    (``id: null``): a message over ``maxRequestBytes`` (``E_TOO_LARGE``, whose ``data.bytes`` is the
    size it received) or an unparsable one. Such an error answers the request it names by size, or
    the one request in flight; it is surfaced, never dropped and resent.
    """
    if reply.get("id") == rid:
        return True
    if reply.get("id") is not None or "error" not in reply:
        return False
    data = reply["error"].get("data") if isinstance(reply["error"], dict) else None
    received = data.get("bytes") if isinstance(data, dict) else None
    return not isinstance(received, int) or received == size


def decode_reply(frame: bytes) -> dict[str, Any] | None:
    """A reply object, or None for a frame that is not one (ignored by the callers)."""
    try:
        reply = json.loads(frame)
    except ValueError:
        return None
    return reply if isinstance(reply, dict) and ("result" in reply or "error" in reply) else None


def _check_write(outcome: Any) -> Any:
    if isinstance(outcome, dict) and outcome.get("ok") is False:
        raise BudgetError(str(outcome.get("code")), str(outcome.get("message")), outcome)
    return outcome


class Methods(QueueMethods):
    """Every daemon RPC method as a Python method (DESIGN.md's table); ``_call`` does the I/O.

    Results are the daemon's JSON values (dicts with camelCase keys, as the core's JSON).
    Every method raises what ``_call`` raises: :class:`~.errors.RpcError` (and its
    subclasses) for an error answer, :class:`~.errors.DaemonUnavailable` /
    :class:`~.errors.RequestTimeout` when nobody answers.
    """

    project: str | None = None
    """The scope every memory method goes with (``docs/projects.md``): a project key or an absolute path (that
    folder's project); None: the user root (a session opened in a scope keeps it)."""

    def _call(self, method: str, params: dict[str, Any], post: Post = None) -> Any:
        raise NotImplementedError

    def _in_scope(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with this client's :attr:`project` added for a memory method that names none."""
        if self.project is not None and method in SCOPED_METHODS and params.get(SCOPE_PARAM) is None:
            return {**params, SCOPE_PARAM: self.project}
        return params

    def status(self) -> Any:
        """``daemon.status`` → ``{version, pid, root, revision, sessions, …}``."""
        return self._call(wire.DAEMON_STATUS.name, {})

    def open(self) -> Any:
        """``memory.open`` → ``{sessionId, revision, loadedAt}``: pin a frozen snapshot (prefer :meth:`session`)."""
        return self._call(wire.MEMORY_OPEN.name, {})

    def close_session(self, session_id: str) -> Any:
        """``memory.close`` → ``{ok, sessionId, pendingWrites}``. Raises NoSessionError if it is not open.

        (``close()`` / ``aclose()`` on a client release the client itself.)
        """
        return self._call(wire.MEMORY_CLOSE.name, {"sessionId": session_id})

    def reload(self, session_id: str) -> Any:
        """``memory.reload`` → ``{sessionId, revision, loadedAt}``: re-pin the session on the newest revision."""
        return self._call(wire.MEMORY_RELOAD.name, {"sessionId": session_id})

    def index(self, *, session_id: str | None = None) -> Any:
        """``memory.index`` → the index view ``{memoryId, root, loadedAt, lineCount, …, entries, revision}``."""
        return self._call(wire.MEMORY_INDEX.name, {"sessionId": session_id})

    def read(self, topic: str | None = None, *, session_id: str | None = None) -> Any:
        """``memory.read`` → the note JSON, None when absent, or the index view without a topic.

        Raises:
            RpcError(E_INVALID): for a bad topic slug.
        """
        return self._call(wire.MEMORY_READ.name, {"topic": topic, "sessionId": session_id})

    def list(self, *, session_id: str | None = None, project: str | None = None) -> Any:
        """``memory.list`` → ``{notes: [note JSON with scope, …]}`` sorted by topic, the scope's root first
        (``project``: a key, a folder's absolute path or ``user``; else this client's :attr:`project`)."""
        return self._call(wire.MEMORY_LIST.name, {"sessionId": session_id, "project": project})

    def search(self, query: str, *, mode: str | None = None, limit: int | None = None,
               session_id: str | None = None) -> Any:
        """``memory.search`` → ``{query, engine, total, truncated, matches, note?}`` (mm v1 §8).

        Raises:
            RpcError(E_INVALID): for a blank query or a limit below 1.
        """
        return self._call(wire.MEMORY_SEARCH.name, {"query": query, "mode": mode, "limit": limit,
                                                     "sessionId": session_id})

    def budget(self, *, session_id: str | None = None) -> Any:
        """``memory.budget`` → the live budget report (mm v1 §6)."""
        return self._call(wire.MEMORY_BUDGET.name, {"sessionId": session_id})

    def write(self, topic: str, content: str, *, summary: str | None = None, tags: str | Sequence[str] | None = None,
              budget: int | None = None, if_revision: int | None = None, session_id: str | None = None,
              check: bool = False, review_after: str | None = None, allow_secret: bool = False,
              allow_hidden: bool = False) -> Any:
        """``memory.write`` → the write outcome plus ``revision``; an over-budget write is ``{ok: false, …}``.

        Args:
            budget: per-write budget in code points (default: the root's ``defaultWriteBudget``).
            review_after: the topic's review date, ``YYYY-MM-DD`` or ``10d``/``2w``/``3m``/``1y`` from today
                (``""`` removes it); prose is an ``E_INVALID`` error.
            if_revision: write only if this is still the current revision.
            check: raise :class:`~.errors.BudgetError` instead of returning an ``ok: false`` outcome.
            allow_secret, allow_hidden: a person's own write lets a secret / hidden text in the body through.

        Raises:
            ConflictError: if ``if_revision`` is stale. RpcError(E_INVALID): for a bad topic or hidden text.
            SecretRefused: for a secret (its kinds and lines in ``findings``). BudgetError: with ``check``.
        """
        params = {"topic": topic, "content": content, "summary": summary, "tags": tags, "budget": budget,
                  "ifRevision": if_revision, "sessionId": session_id, "reviewAfter": review_after,
                  "allowSecret": allow_secret or None, "allowHidden": allow_hidden or None}
        return self._call(wire.MEMORY_WRITE.name, params, _check_write if check else None)

    def delete(self, topic: str, *, if_revision: int | None = None, session_id: str | None = None) -> Any:
        """``memory.delete`` → ``{ok, removed, topic, usage, revision}``; always allowed, even over budget."""
        return self._call(wire.MEMORY_DELETE.name, {"topic": topic, "ifRevision": if_revision, "sessionId": session_id})

    def digest(self, *, text: str | None = None, file: str | None = None, max_items: int | None = None,
               topic_hint: str | None = None) -> Any:
        """``memory.digest`` → candidates ``{source, sourceKind, candidates, usage, note}``; never writes."""
        return self._call(wire.MEMORY_DIGEST.name, {"text": text, "file": file, "maxItems": max_items,
                                                    "topicHint": topic_hint})

    def nudge(self, *, session_id: str | None = None) -> Any:
        """``memory.nudge`` → ``{at, pendingWrites, noteCount, indexOverBudget, needsCommit, suggestedActions}``."""
        return self._call(wire.MEMORY_NUDGE.name, {"sessionId": session_id})

    def inject(self, client: str, *, max_bytes: int | None = None, commit: bool = False,
               reset: bool = False, project: str | None = None, prompt: bool = False) -> Any:
        """``memory.inject`` → ``{mode, text, added, updated, removed, unchanged, reminded, bytes, token,
        revision, committed}``: what to give the agent ``client`` (``baseline`` | ``delta`` | ``reminder`` |
        ``none``). Without ``commit`` the client's view moves only on :meth:`injected` with the token.

        ``project`` names the root (else this client's :attr:`project`); each root keeps its own view.
        ``prompt``: a hook before an agent's prompt; the result may carry the session's one ``distill`` line.

        Raises:
            RpcError(E_INVALID): for a bad client key or a ``max_bytes`` too small for the heading.
        """
        return self._call(wire.MEMORY_INJECT.name, {"client": client, "maxBytes": max_bytes,
                                                     "commit": commit or None, "reset": reset or None,
                                                     "project": project, "prompt": prompt or None})

    def injected(self, client: str, token: str, *, project: str | None = None) -> Any:
        """``memory.injected`` → ``{ok: true, client, token}``: the text of ``token`` reached the agent (in the
        root ``project`` names, else this client's :attr:`project`).

        Raises:
            RpcError(E_NOT_FOUND): if ``token`` is not a pending injection of ``client``.
        """
        return self._call(wire.MEMORY_INJECTED.name, {"client": client, "token": token, "project": project})

    def due(self, *, within_days: int | None = None) -> Any:
        """``memory.due`` → ``{today, due: [{topic, reviewAfter, daysLeft}], invalid: [{topic, value}]}``."""
        return self._call(wire.MEMORY_DUE.name, {"withinDays": within_days})

    def adopt(self, topics: Sequence[str], *, project: str) -> Any:
        """``memory.adopt`` → ``{ok, moved, refused, revisions}``: the user root's notes ``topics`` moved into the
        root of ``project`` (a key or a folder's absolute path), one revision in each (``mmctl project adopt``).

        Raises:
            RpcError(E_INVALID | E_CONFLICT): a topic the user root lacks, or one the project holds otherwise.
        """
        return self._call(wire.MEMORY_ADOPT.name, {"topics": list(topics), "project": project})

    def merge(self, topics: Sequence[str], into: str, *, summary: str | None = None, if_revision: int | None = None,
              session_id: str | None = None, allow_secret: bool = False, allow_hidden: bool = False) -> Any:
        """``memory.merge`` → ``{ok, topic, uri, action, merged, usage, revision}``: the notes joined into ``into``
        (bodies joined under ``summary`` when given, the others deleted, one revision); allowed over the index
        caps when it shrinks the index. A budget refusal is ``{ok: false, code, …}``.

        Raises:
            RpcError(E_INVALID): a bad topic, nothing to merge, a topic without a note. ConflictError. SecretRefused.
        """
        return self._call(wire.MEMORY_MERGE.name, {"topics": list(topics), "into": into, "summary": summary,
                                                   "ifRevision": if_revision, "sessionId": session_id,
                                                   "allowSecret": allow_secret or None,
                                                   "allowHidden": allow_hidden or None})

    def rename(self, topic: str, to: str, *, if_revision: int | None = None, session_id: str | None = None) -> Any:
        """``memory.rename`` → ``{ok, topic, uri, from, linked, proposals, usage, revision}``: ``topic`` renamed
        ``to`` in one revision, the links to it in other notes and the queue's proposals following; a budget
        refusal (a note past its byte cap, the index past its caps) is ``{ok: false, code, …}``.

        Raises:
            RpcError(E_INVALID): ``to`` has a note or is not a slug, ``topic`` has none (nothing changed).
            ConflictError: ``to`` differs from a topic only by case, or ``if_revision`` is not current.
        """
        return self._call(wire.MEMORY_RENAME.name, {"topic": topic, "to": to, "ifRevision": if_revision,
                                                    "sessionId": session_id})


class SessionMethods(Methods):
    """A frozen-snapshot session: the same methods, each sent with this ``session_id``.

    ``reload()`` and ``close_session()`` need no argument here: they act on this session.
    """

    def __init__(self, parent: Methods, opened: dict[str, Any]) -> None:
        self._parent = parent
        self.session_id: str = opened["sessionId"]
        self.revision: int = opened.get("revision", 0)
        self.loaded_at: str = opened.get("loadedAt", "")

    def _call(self, method: str, params: dict[str, Any], post: Post = None) -> Any:
        if method in SESSION_METHODS:
            params = {**params, SESSION_PARAM: self.session_id}
        return self._parent._call(method, params, post)

    def _pinned(self, opened: Any) -> Any:
        """Take the ``{sessionId, revision, loadedAt}`` of ``memory.open``/``memory.reload``; return it."""
        self.session_id, self.revision, self.loaded_at = opened["sessionId"], opened["revision"], opened["loadedAt"]
        return opened

    def reload(self, session_id: str | None = None) -> Any:
        """``memory.reload`` of this session → ``{sessionId, revision, loadedAt}`` (also kept as attributes)."""
        return self._call(wire.MEMORY_RELOAD.name, {SESSION_PARAM: session_id or self.session_id}, self._pinned)

    def close_session(self, session_id: str | None = None) -> Any:
        """``memory.close`` of this session → ``{ok, sessionId, pendingWrites}``. Raises NoSessionError if gone."""
        return self._call(wire.MEMORY_CLOSE.name, {SESSION_PARAM: session_id or self.session_id})
