"""The review use-cases: list, show, accept, reject and undo review-queue candidates.

Owns: the decisions on candidates (a ``held`` topic's are :mod:`.holds`') — an acceptance writes through the memory
state (so budgets and ``ifRevision`` hold) and only then marks the candidate
accepted (a new note, or appended to a note: ``into``, or the candidate's
``append`` proposal; an agent's proposal may also replace a note's text or
delete it, and a page or a candidate shows the note's current text beside it: :mod:`.proposed`);
a rejection is for good; many ids at once, each
reported (:meth:`Review.decide_many`); ``reject --below``. Decisions are serialized by one lock, so two
callers never decide the same candidate twice. Every surface (the RPC method
table today, a web page later) calls this module with plain Python values;
it raises :class:`~mmd.wire.protocol.DaemonError` or ``MMError`` and never
speaks JSON-RPC. Never touches a socket; the queue's SQLite work runs in a
worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from mmd.core.errors import ErrorCode, MMError
from mmd.core.projects import is_key, project_for
from mmd.wire.methods import ID_DIGITS, INT_LIMIT
from mmd.wire.protocol import CandidateJson, DaemonCode, DaemonError, QueueAcceptResult, QueueListResult

from .home import USER, Home
from .previous import kept as _kept
from .previous import previous as _previous
from .proposed import only_a_delete, replace_summary, with_current
from .queue import HELD, ReviewQueue
from .state import MemoryState

if TYPE_CHECKING:
    from .holds import Holds

__all__ = ["QUEUE_LIST_MAX", "QUEUE_STATUSES", "Review", "candidate_id"]

QUEUE_LIST_MAX = 1000
"""Largest ``queue.list`` page."""
QUEUE_STATUSES = ("pending", "accepted", "rejected", "expired", "all")
"""The status filters of a page."""
_OPEN = ("pending", "expired")
"""Statuses a candidate may be accepted or rejected from (an expired one left the view, not the queue)."""


def candidate_id(raw: int | str) -> int:
    """A candidate id from a caller: an integer, or a string of its decimal digits.

    Raises:
        DaemonError(E_INVALID): for anything that is not a positive integer below 2**63.
    """
    if isinstance(raw, int):
        cid = raw
    else:
        digits = isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) <= ID_DIGITS
        cid = int(raw) if digits else -1
    if not 1 <= cid < INT_LIMIT:
        raise DaemonError(ErrorCode.E_INVALID, f"id must be a positive integer, not {raw!r}")
    return cid


class Review:
    """The review queue's use-cases over one memory state.

    Args:
        home: the roots served: a candidate is written to the root it is proposed to (its ``scope``: ``user`` or
            a project key), or the one the caller names (``project``).
        queue: the review queue, or None when ingestion is off (every use-case then raises
            ``E_UNAVAILABLE``).
    """

    def __init__(self, home: Home, queue: ReviewQueue | None) -> None:
        self.home = home
        self.state = home.user.state
        self.queue = queue
        self._deciding = asyncio.Lock()
        self.holds: Holds | None = None
        """The held topics' decisions (:mod:`.holds`): a ``held`` candidate is accepted, rejected and undone there."""

    @property
    def pending(self) -> int:
        """Pending candidates (0 when ingestion is off)."""
        return self.queue.pending if self.queue is not None else 0

    @property
    def shown(self) -> int:
        """Pending candidates on show in the default view, the review left to do (0 when ingestion is off)."""
        return self.queue.shown if self.queue is not None else 0

    def _queue(self) -> ReviewQueue:
        if self.queue is None:
            raise DaemonError(DaemonCode.E_UNAVAILABLE,
                              "the review queue is off in this daemon (started with --no-ingest)")
        return self.queue

    async def page(self, status: str = "pending", *, limit: int = 100, offset: int = 0, hidden: bool = False,
                   min_score: float | None = None, project: str | None = None,
                   agent: str | None = None, session: str | None = None,
                   first: str | None = None) -> QueueListResult:
        """One page of candidates with ``status`` (``pending`` | ``accepted`` | ``rejected`` | ``expired`` |
        ``all``), once the rule drafts pending too long have expired (:meth:`.queue.ReviewQueue.expire`).

        Pending candidates come highest score first; others oldest first. Candidates hidden by
        their session's budget are left out unless ``hidden`` or ``min_score`` asks for them.

        Args:
            limit: page size, 1–:data:`QUEUE_LIST_MAX`. offset: candidates to skip (≥ 0).
            hidden: include hidden candidates. min_score: only candidates scoring at least this.
            project: ``user`` or a project key: only the candidates proposed to that root; else only candidates
                with evidence from this project (its working directory: a full path, or a name without ``/``
                matching its last folder).
            agent: only candidates with evidence from this agent.
            session: only candidates first seen in this agent session (its id).
            first: a project key, or a folder (its project, an agent session's folder counting as one): pending
                candidates proposed to that root come first.

        Returns:
            ``{candidates, total, pending, offset, limit, leftOut, expireDays}``; ``total`` counts every candidate
            with that status; ``leftOut`` what the default view leaves out among the candidates the filters
            select (``{hidden, expired, heldBack}``, :meth:`.queue.ReviewQueue.left_out`).

        Raises:
            DaemonError(E_INVALID): for another status, a limit out of range or a negative offset.
            DaemonError(E_UNAVAILABLE): without ingestion.
        """
        q = self._queue()
        if status not in QUEUE_STATUSES:
            raise DaemonError(ErrorCode.E_INVALID, f"queue.list: status must be one of {', '.join(QUEUE_STATUSES)}")
        if not 1 <= limit <= QUEUE_LIST_MAX or offset < 0:
            raise DaemonError(ErrorCode.E_INVALID,
                              f"queue.list: limit must be 1..{QUEUE_LIST_MAX} and offset at least 0")
        scope = project if project is not None and (project == USER or is_key(project)) else None
        if first is not None and not is_key(first) and os.path.isabs(first):  # a folder: the project it is in
            folder = await asyncio.to_thread(project_for, first, self.home.home, session=True)
            first = folder.key if folder is not None else None
        filters: dict[str, Any] = {"project": None if scope else project, "agent": agent, "session": session,
                                   "scope": scope}

        def read() -> tuple[list[CandidateJson], int, dict[str, int]]:
            q.expire()
            found, total = q.list(status, limit=limit, offset=offset, hidden=hidden, min_score=min_score,
                                  first=first, **filters)
            return found, total, q.left_out(**filters)

        found, total, left = await asyncio.to_thread(read)
        return {"candidates": [with_current(self.home, c) for c in found], "total": total, "pending": q.pending,
                "offset": offset, "limit": limit, "leftOut": left, "expireDays": q.expire_days()}

    async def get(self, raw_id: int | str) -> CandidateJson:
        """The candidate ``raw_id`` (see :func:`candidate_id`).

        Raises:
            DaemonError(E_UNAVAILABLE): without ingestion. DaemonError(E_INVALID): for a bad id.
            DaemonError(E_NOT_FOUND): if no candidate has that id.
        """
        q = self._queue()
        cid = candidate_id(raw_id)
        found = await asyncio.to_thread(q.get, cid)
        if found is None:
            raise DaemonError(DaemonCode.E_NOT_FOUND, f"no candidate {cid} in the review queue")
        return with_current(self.home, found)

    async def target(self, cand: CandidateJson, project: str | None = None) -> MemoryState:
        """The state of the root ``cand`` is written to: the one ``project`` names (a key, an absolute path, or
        ``user``), else the one it is proposed to (its ``scope``); a project root is created by its first write.

        Raises:
            DaemonError(E_INVALID): for a bad ``project``. MMError: if a project root cannot be created.
        """
        if project is not None:
            return (await self.home.writable({"project": project})).state
        scope = str(cand.get("scope") or USER)
        if scope == USER:
            return self.state
        served = self.home.get(scope)
        if served is not None:
            return served.state
        return (await self.home.ensure_key(scope, _folders(cand))).state

    async def accept(self, raw_id: int | str, *, topic: str | None = None, content: str | None = None,
                     summary: str | None = None, tags: str | Sequence[str] | None = None,
                     if_revision: int | None = None, replace: bool = False,
                     into: str | None = None, project: str | None = None) -> QueueAcceptResult:
        """Write the candidate (``topic``, ``summary``, ``tags`` and ``content`` override its own) and accept it,
        in the root it is proposed to or the one ``project`` names (:meth:`target`).

        With ``into`` (or, when no ``topic`` is given, a candidate whose proposal is ``append``) the
        body is appended to that note (a blank line between) through the same budgeted write. An
        ``into`` the caller names must be a note (a typo never creates a topic); a proposed one that
        is gone meanwhile is created.

        A sync conflict (``kind: conflict``) is a resolution: with no ``into`` (nor another ``topic``), accepting it
        replaces the note without ``replace`` (proposal ``replace``), or deletes it (proposal ``delete``: the version
        that lost was the topic's deletion), and the next sync carries the result to the other machine. An agent's
        ``delete`` proposal deletes the note, edited or not (an edit that changes nothing is the deletion; another
        text, summary, tags, topic or ``into`` is refused); an agent's ``replace`` keeps the note's summary unless
        ``summary`` differs from the candidate's own or the agent gave one.

        The write goes through the memory state, so budgets hold: an over-budget write is
        ``{ok: false, candidate, write}`` with the usage in ``write``, and the candidate stays
        pending. On success it becomes ``accepted`` with ``written = {topic, revision}``. A topic
        that already has a note is only overwritten with ``replace``; the check and the write are
        one compare-and-set on the revision, so a note created meanwhile is never overwritten either.

        Raises:
            DaemonError(E_UNAVAILABLE | E_INVALID | E_NOT_FOUND): as :meth:`get`; E_NOT_FOUND also when
                ``into`` names no note (``data.topic``).
            DaemonError(E_DECIDED): if the candidate was already accepted or rejected (``data.status``).
            DaemonError(E_EXISTS): if the topic has a note and ``replace`` is false; the candidate stays pending.
            DaemonError(E_INVALID): an agent's delete proposal given a text, summary, tags, topic or ``into`` of its
                own; the candidate stays pending.
            DaemonError(E_CONFLICT), MMError(E_INVALID | E_IO): as the state's write; the candidate stays pending.
        """
        self._queue()
        async with self._deciding:
            cand = await self.get(raw_id)
            if cand["status"] not in _OPEN:
                raise _decided(cand)
            if cand["kind"] == HELD and self.holds is not None:
                return await self.holds.accept(self, cand, topic=topic, content=content, summary=summary, tags=tags)
            state = await self.target(cand, project)
            if into is not None and state.current.note(into) is None:
                raise DaemonError(DaemonCode.E_NOT_FOUND, f"there is no note {into} to append to", topic=into)
            action = cand.get("proposal", {}).get("action")
            from mmd.candidates.proposals import is_proposal

            agents = is_proposal(cand.get("rule"))
            if agents and action == "delete":  # an agent's proposal to delete: accepted as it is, or not at all
                only_a_delete(cand, topic=topic, into=into, content=content, summary=summary, tags=tags)
                return await self._delete(state, cand, if_revision)
            if into is None and topic is None and action == "append":
                into = cand["topic"]
            if into is None and topic in (None, cand["topic"]) and action in ("replace", "delete"):
                # a sync conflict's resolution, or an agent's proposal of the note's new text
                if action == "delete" and content is None:
                    return await self._delete(state, cand, if_revision)
                replace = True
                if agents:  # the note keeps its index line unless the person or the agent gives another
                    summary = replace_summary(state, cand, summary)
            if into is not None:
                return await self._append(state, cand, into, content=content, summary=summary, tags=tags,
                                          if_revision=if_revision)
            topic = cand["topic"] if topic is None else topic
            previous = _previous(state, topic)
            if not replace:
                latest = state.current
                existing = latest.note(topic)
                if existing is not None:
                    raise DaemonError(DaemonCode.E_EXISTS,
                                      f"{existing.uri} already has a note; accept with into: {topic!r} to append to "
                                      f"it, replace: true to overwrite it, or give another topic", topic=topic,
                                      uri=existing.uri)
                if if_revision is None:
                    if_revision = latest.revision
            outcome = await state.write(
                topic, cand["body"] if content is None else content, if_revision=if_revision,
                summary=cand["summary"] if summary is None else summary, tags=tags, cause="accept")
            return await self.accepted(state, cand, outcome, previous)

    async def _append(self, state: MemoryState, cand: CandidateJson, into: str, *, content: str | None,
                      summary: str | None, tags: str | Sequence[str] | None,
                      if_revision: int | None) -> QueueAcceptResult:
        """Append the candidate's body (or ``content``) to the note ``into`` of ``state``'s root and accept it (the
        lock is held).

        The note keeps its summary unless ``summary`` is given; a new note takes the candidate's, or a category
        note's (``rules``, ``pitfalls`` …: :data:`mmd.candidates.topics.CATEGORY_SUMMARIES`) what it holds."""
        from mmd.candidates.topics import CATEGORY_SUMMARIES  # loaded with the first candidate, not at the start

        latest = state.current
        existing = latest.note(into)
        previous = _previous(state, into)
        addition = cand["body"] if content is None else content
        body = f"{existing.body.rstrip()}\n\n{addition}" if existing is not None and existing.body.strip() \
            else addition
        outcome = await state.write(
            into, body, if_revision=latest.revision if if_revision is None else if_revision,
            summary=summary if summary is not None else None if existing is not None else
            CATEGORY_SUMMARIES.get(into, cand["summary"]), tags=tags,
            budget=max(len(body), existing.entry.write_budget) if existing else None, cause="accept")
        return await self.accepted(state, cand, outcome, previous)

    async def _delete(self, state: MemoryState, cand: CandidateJson, if_revision: int | None) -> QueueAcceptResult:
        """Accept a deletion (a conflict whose lost version is the topic's deletion, or an agent's proposal to delete
        the note): delete the note (the lock is held); undo writes it back."""
        latest = state.current
        topic = cand["topic"]
        previous = _previous(state, topic)
        outcome = await state.delete(topic, if_revision=latest.revision if if_revision is None else if_revision)
        return await self.accepted(state, cand, outcome, previous, deleted=True)

    async def accepted(self, state: MemoryState, cand: CandidateJson, outcome: dict[str, Any],
                       previous: dict[str, Any] | None, deleted: bool = False) -> QueueAcceptResult:
        """Mark the candidate accepted after ``outcome`` (a write to ``state``'s root, or a delete), journaling what
        :meth:`undo` needs: the root's scope, the note's text before (``previous``) and the sha256 of the text
        written (``deleted``: the note was deleted); a refused write leaves it pending."""
        q = self._queue()
        if not outcome.get("ok"):
            return {"ok": False, "candidate": cand, "write": outcome}
        written = {"topic": outcome["topic"], "revision": outcome["revision"], "previous": previous,
                   "sha256": _body_hash(state.current.note(outcome["topic"])), "scope": self._scope_of(state)}
        if deleted:
            written["deleted"] = True
        decided = await asyncio.to_thread(q.decide, cand["id"], "accepted", written=written)
        return {"ok": True, "candidate": decided or cand, "write": outcome}

    async def refuse_flagged(self, raw_id: int | str) -> None:
        """Refuse a flagged candidate in a bulk accept (issue 29): a person names it alone, or says so (``flagged``).

        Raises:
            DaemonError(E_INVALID): when ``raw_id`` is flagged, its message naming the id and why (``data.flags``).
            DaemonError(E_UNAVAILABLE | E_INVALID | E_NOT_FOUND): as :meth:`get`.
        """
        cand = await self.get(raw_id)
        if cand.get("flags") and cand["status"] == "pending":
            why = "; ".join(f"{f['kind']}: {f['why']}" for f in cand["flags"])
            raise DaemonError(ErrorCode.E_INVALID, f"candidate {cand['id']} is flagged ({why}); a bulk accept takes "
                              f"no flagged candidate: accept it alone, or with --flagged", id=cand["id"],
                              flags=cand["flags"])

    async def decide_many(self, raw_ids: Sequence[int | str],
                          one: Callable[[int | str], Awaitable[Any]]) -> dict[str, Any]:
        """``one(id)`` for each id in order, each reported: ``{ok, results: [{id, ok, …}]}``.

        A result is ``{id, ok: true, candidate, write?}`` or ``{id, ok: false, error: {code, message}}``
        (``ok: false`` with ``write`` when a budget refused an acceptance). ``ok`` is true when every one is.

        Raises:
            DaemonError(E_UNAVAILABLE): without ingestion. DaemonError(E_INVALID): for an empty list.
        """
        self._queue()
        if not raw_ids:
            raise DaemonError(ErrorCode.E_INVALID, "no candidate ids given")
        results: list[dict[str, Any]] = []
        for raw in raw_ids:
            try:
                got = await one(raw)
            except (DaemonError, MMError) as error:
                message = str(getattr(error, "message", None) or error)
                results.append({"id": raw, "ok": False, "error": {"code": str(error.code), "message": message}})
                continue
            if isinstance(got, dict) and "write" in got:
                results.append({"id": raw, **got})
            else:
                results.append({"id": raw, "ok": True, "candidate": got})
        return {"ok": all(r["ok"] for r in results), "results": results}

    async def rename(self, old: str, new: str, *, if_revision: int | None = None,
                     session_id: str | None = None, state: MemoryState | None = None) -> dict[str, Any]:
        """Rename the note ``old`` to ``new`` (:meth:`.state.MemoryState.rename`: links follow), then the pending
        candidates proposing ``old`` propose ``new``: the outcome plus, once renamed, ``proposals`` (how many
        followed; 0 without ingestion). Under the deciding lock, so no accept writes to the name being left meanwhile.

        Raises:
            DaemonError, MMError: as the state's rename (refused: nothing changed, the queue neither).
        """
        state = state or self.state  # the root the note is in (``project`` of the request)
        async with self._deciding:
            outcome = await state.rename(old, new, if_revision=if_revision, session_id=session_id)
            if not outcome.get("ok"):
                return outcome
            moved = 0 if self.queue is None else await asyncio.to_thread(
                self.queue.rename_topic, outcome["from"], outcome["topic"], self._scope_of(state))
            return {**outcome, "proposals": moved}

    async def below(self, score: float) -> list[int]:
        """Ids of the pending candidates scoring below ``score`` (for ``queue.reject {below}``)."""
        return await asyncio.to_thread(self._queue().below, score)

    async def reject(self, raw_id: int | str, *, reason: str | None = None) -> CandidateJson:
        """Reject the candidate for good (ingestion drops it by identity); rejecting it again is a no-op.

        Returns:
            The candidate, now ``rejected``.

        Raises:
            DaemonError(E_UNAVAILABLE | E_INVALID | E_NOT_FOUND): as :meth:`get`; E_NOT_FOUND also when
                ``into`` names no note (``data.topic``).
            DaemonError(E_DECIDED): if the candidate was accepted.
        """
        q = self._queue()
        async with self._deciding:
            cand = await self.get(raw_id)
            if cand["status"] == "rejected":
                return cand
            if cand["status"] not in _OPEN:
                raise _decided(cand)
            if cand["kind"] == HELD and self.holds is not None:
                await self.holds.reject(cand)  # the version before it comes back
            decided = await asyncio.to_thread(q.decide, cand["id"], "rejected", reason=reason)
            return decided or cand

    async def undo(self, raw_id: int | str) -> dict[str, Any]:
        """Undo the candidate's decision: it is pending again; an acceptance's note is reverted first.

        The note an acceptance created is deleted, the text (summary, tags) it replaced is restored,
        both through the memory state with a compare-and-set on the revision. A note edited since
        the acceptance is brought back all the same to the version before it (``laterEdits: true``):
        the version history keeps the later text (``mmctl log TOPIC``, ``mmctl restore``).

        Returns:
            ``{ok: true, candidate, reverted: "deleted" | "restored" | null, topic?, laterEdits?, revision?}``.

        Raises:
            DaemonError(E_UNAVAILABLE | E_INVALID | E_NOT_FOUND): as :meth:`get`; E_INVALID also for a
                pending candidate (nothing to undo).
            DaemonError(E_CONFLICT): if the text before the acceptance cannot be written back (``data.topic``).
            MMError: as the state's write or delete.
        """
        q = self._queue()
        async with self._deciding:
            cand = await self.get(raw_id)
            if cand["status"] == "pending":
                raise DaemonError(ErrorCode.E_INVALID, f"candidate {cand['id']} is pending: there is nothing to undo")
            out: dict[str, Any] = {"ok": True, "reverted": None}
            if cand["kind"] == HELD and self.holds is not None:
                out.update(await self.holds.undo(cand))  # the text that arrived, held again
            elif cand["status"] == "accepted":
                out.update(await self._revert(await asyncio.to_thread(q.last_acceptance, cand["id"])))
            reopened = await asyncio.to_thread(q.reopen, cand["id"], cand["status"])
            return {**out, "candidate": reopened or await self.get(cand["id"])}

    def _scope_of(self, state: MemoryState) -> str:
        return next((r.scope for r in self.home if r.state is state), USER)

    async def _revert(self, written: dict[str, Any]) -> dict[str, Any]:
        """Revert the note an acceptance wrote (``written`` as journaled, in the root its ``scope`` names):
        ``{reverted, revision}``."""
        topic = str(written.get("topic") or "")
        root = self.home.get(written.get("scope") or USER)
        if root is None:
            raise DaemonError(DaemonCode.E_CONFLICT, f"the project root {written.get('scope')} the candidate was "
                              "accepted into is not served; undo refused", topic=topic)
        state = root.state
        latest = state.current
        note = latest.note(topic) if topic else None
        if written.get("synced"):  # accepted on another machine, brought here by a sync: the note is not ours to undo
            return {"reverted": None, "revision": latest.revision}
        if written.get("deleted") and note is None and isinstance(written.get("previous"), dict):
            # a conflict's lost deletion, accepted: the note it deleted comes back
            return await self._write_back(state, topic, written["previous"], latest.revision, "restored", {})
        previous = written.get("previous")
        if note is None and not isinstance(previous, dict):
            return {"reverted": "deleted", "revision": latest.revision, "topic": topic}
        later = {"topic": topic, **({"laterEdits": True} if written.get("sha256") != _body_hash(note) else {})}
        if not isinstance(previous, dict):
            assert note is not None
            done = await state.delete(topic, if_revision=latest.revision)
            return {"reverted": "deleted", "revision": done["revision"], **later}
        # the text was in the memory before the acceptance: what a person let through then comes back with it
        return await self._write_back(state, topic, previous, latest.revision, "restored", later)

    @staticmethod
    async def _write_back(state: MemoryState, topic: str, previous: dict[str, Any], revision: int,
                          how: str, later: dict[str, Any]) -> dict[str, Any]:
        """Write ``previous`` (``{body, summary, tags, writeBudget}``, or ``{version}``: :func:`.previous.kept`) back as
        ``topic`` at ``revision``: ``{reverted: how, revision, **later}``.

        Raises:
            DaemonError(E_CONFLICT): if the write is refused (its message says why), or the version is not kept.
        """
        previous = await _kept(state, topic, previous)
        done = await state.write(topic, previous["body"], if_revision=revision,
                                 summary=previous.get("summary", ""), tags=previous.get("tags") or [],
                                 budget=max(previous.get("writeBudget") or 0, len(previous["body"])) or None,
                                 cause="undo", allow_secret=True, allow_hidden=True)
        if not done.get("ok"):
            raise DaemonError(DaemonCode.E_CONFLICT, f"{topic}: the text before the acceptance cannot be restored "
                              f"({done.get('message')})", topic=topic, revision=revision)
        return {"reverted": how, "revision": done["revision"], **later}


def _folders(cand: CandidateJson) -> list[str]:
    """The folders the candidate was said in (its evidence's projects), first seen first."""
    out: list[str] = []
    for e in cand.get("evidence", []):
        folder = e.get("project")
        if isinstance(folder, str) and folder not in out:
            out.append(folder)
    return out


def _body_hash(note: Any) -> str | None:
    """sha256 (hex) of a note's body, or None for no note."""
    return hashlib.sha256(note.body.encode()).hexdigest() if note is not None else None


def _decided(cand: CandidateJson) -> DaemonError:
    return DaemonError(DaemonCode.E_DECIDED, f"candidate {cand['id']} is already {cand['status']}",
                       status=cand["status"])
