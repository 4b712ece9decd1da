"""The review queue's methods of the client library (a mixin of :class:`~._base.Methods`): ``queue.*`` and an agent's
``memory.propose``.

Each method sends one request through ``_call`` (the twin clients' I/O) and returns the daemon's JSON value.
This module never touches a socket.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmd.wire import methods as wire

__all__ = ["QueueMethods"]

Post = Any


class QueueMethods:
    """``queue.list|get|accept|reject|undo`` and ``memory.propose``; see :class:`~._base.Methods` for what every method
    raises."""

    def _call(self, method: str, params: dict[str, Any], post: Post = None) -> Any:
        raise NotImplementedError

    def queue_list(self, *, status: str | None = None, limit: int | None = None, offset: int | None = None,
                   all: bool = False, min_score: float | None = None, project: str | None = None,
                   agent: str | None = None, session: str | None = None, first: str | None = None) -> Any:
        """``queue.list`` → ``{candidates, total, pending, offset, limit, leftOut, expireDays}``; pending ones highest
        score first; ``leftOut`` (``{hidden, expired, heldBack}``) what the default view leaves out (docs/queue.md).

        Args:
            status: ``pending`` (default) | ``accepted`` | ``rejected`` | ``expired`` | ``all``.
            limit: page size, 1–1000 (default 100). offset: candidates to skip.
            all: include candidates hidden by their session's budget. min_score: only those scoring at least this.
            project: ``user`` or a project key: only the candidates proposed to that root; else only candidates
                seen in this project (its cwd, or its last folder's name).
            agent: only candidates from this agent.
            session: only candidates first seen in this agent session (its id).
            first: a project key whose candidates come first.

        Raises:
            RpcError(E_UNAVAILABLE): if the daemon runs without ingestion. RpcError(E_INVALID): bad status or range.
        """
        return self._call(wire.QUEUE_LIST.name, {"status": status, "limit": limit, "offset": offset,
                                                 "all": all or None, "minScore": min_score, "project": project,
                                                 "agent": agent, "session": session, "first": first})

    def queue_get(self, candidate_id: str | int) -> Any:
        """``queue.get`` → the candidate ``{id, status, kind, topic, summary, body, chars, overBudget, source, …}``.

        Raises:
            RpcError(E_NOT_FOUND): if there is no such candidate.
        """
        return self._call(wire.QUEUE_GET.name, {"id": candidate_id})

    def queue_accept(self, candidate_id: str | int | Sequence[str | int], *, topic: str | None = None,
                     content: str | None = None, summary: str | None = None, tags: str | Sequence[str] | None = None,
                     if_revision: int | None = None, replace: bool = False, into: str | None = None,
                     project: str | None = None, flagged: bool = False) -> Any:
        """``queue.accept`` → ``{ok, candidate, write}``: the candidate (fields overridden) goes through
        ``memory.write``, so budgets hold; a refused write is ``ok: false`` and the candidate stays pending.
        A topic that already has a note is overwritten only with ``replace``; ``into`` appends the body to
        that note instead (as does a candidate whose proposal is ``append``, when no topic is given).
        It is written to the root it is proposed to (its ``scope``), or the one ``project`` names (``user``, a
        project key, or a project folder's absolute path). A list of ids → ``{ok, results}``, each reported; a
        flagged one among them (an instruction aimed at an agent, a secret, hidden text) is reported not accepted
        (``E_INVALID``, ``data.flags``) unless ``flagged`` (issue 29): name it alone, or say so.

        Raises:
            RpcError(E_NOT_FOUND | E_DECIDED | E_EXISTS): no such candidate, already decided, or the topic
                has a note and ``replace`` is false. ConflictError: stale revision.
        """
        ids = list(candidate_id) if isinstance(candidate_id, (list, tuple)) else candidate_id
        return self._call(wire.QUEUE_ACCEPT.name, {"id": ids, "topic": topic, "content": content,
                                           "summary": summary, "tags": tags, "ifRevision": if_revision,
                                           "replace": replace or None, "into": into, "project": project,
                                           "flagged": flagged or None})

    def queue_reject(self, candidate_id: str | int, *, reason: str | None = None) -> Any:
        """``queue.reject`` → ``{ok, candidate}``; a rejected candidate never comes back.

        Raises:
            RpcError(E_NOT_FOUND | E_DECIDED): no such candidate, or already accepted.
        """
        return self._call(wire.QUEUE_REJECT.name, {"id": candidate_id, "reason": reason})

    def queue_reject_below(self, score: float, *, reason: str | None = None) -> Any:
        """``queue.reject {below}`` → ``{ok, results: [{id, ok, candidate?, error?}]}``: every pending candidate
        scoring below ``score`` rejected for good, each reported."""
        return self._call(wire.QUEUE_REJECT.name, {"below": score, "reason": reason})

    def queue_undo(self, candidate_id: str | int) -> Any:
        """``queue.undo`` → ``{ok, candidate, reverted, revision?}``: the decision undone, the candidate pending
        again; an acceptance's note is deleted (``reverted: "deleted"``) or its previous text restored.

        Raises:
            RpcError(E_NOT_FOUND | E_INVALID | E_CONFLICT): no such candidate, a pending one, or the note
                changed since it was accepted.
        """
        return self._call(wire.QUEUE_UNDO.name, {"id": candidate_id})

    def propose(self, content: str | None = None, *, topic: str | None = None, action: str | None = None,
                summary: str | None = None, reason: str | None = None, agent: str | None = None,
                session: str | None = None, session_id: str | None = None, project: str | None = None) -> Any:
        """``memory.propose`` → ``{ok, status, id, candidate?, topic, scope}``: an agent's proposal, a candidate of
        the review queue marked as the agent's; the note is untouched until a person accepts it.

        Args:
            content: the text (a new note's body, an append's addition, a replace's whole new text; none for delete).
            topic: the note it targets (None: a topic is proposed). action: ``create`` | ``append`` | ``replace`` |
                ``delete`` (default: append to a note that exists, else create).
            reason: the agent's one-line reason. agent: ``claude-code`` | ``codex`` | ``dsh`` | ``other``.
            session: the agent's session id (a hook's ``session_id``). session_id: a ``memory.open`` session.
            project: the scope (else this client's :attr:`project`).

        Returns:
            ``status`` ``queued`` (a new candidate ``id``), ``merged`` (joined the pending ``id``), ``accepted`` |
            ``rejected`` (decided before as ``id``), or ``held`` (a note already holds it).

        Raises:
            RpcError(E_UNAVAILABLE): the daemon runs without the review queue. RpcError(E_EXISTS | E_NOT_FOUND):
                ``create`` of a topic with a note, or another action on one without. RpcError(E_INVALID).
        """
        return self._call(wire.MEMORY_PROPOSE.name, {
            "content": content, "topic": topic, "action": action, "summary": summary, "reason": reason,
            "agent": agent, "session": session, "sessionId": session_id, "project": project})
