"""Git conflicts as review candidates, and the resolution a sync brings back (issues 18 and 30).

Owns: :class:`ConflictQueue` — the ``kind: "conflict"`` candidates of a sync (the topics it decided, those another
machine's merge decided about this root's versions, :func:`~.git.versions.received`, the topics of a remote commit
held back) and of the merge driver's spool (a person's own ``git merge``): pinned, their evidence both versions,
each naming the commit and the machine and root that made it (``position``: ``{file, uuid: commit, machine?,
root?}``, ``at``: the commit's time); proposal ``replace`` (accepting writes the version back over the note
without ``--replace``: the candidate is a resolution) or ``delete`` (the version that lost was the topic's
deletion). Each is proposed to the root its topic is in (``scope``: ``user`` or a project key, issue 27). And
:meth:`ConflictQueue.resolved`: after a sync, a pending conflict whose version its root now holds (accepted on the
other machine, carried by the sync) is accepted here too, so one accept resolves it on both.

Threading: called from the git worker thread; ``queue/added`` is published on the loop.
Never: merges, runs git, or writes memory files.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from mmd.candidates import Evidence, NewCandidate
from mmd.candidates.model import QUOTE_MAX
from mmd.wire.events import QUEUE_ADDED

from .events import Publisher
from .queue import ReviewQueue
from .state import MemoryState

__all__ = ["ConflictQueue", "RULE"]

log = logging.getLogger("mmd.git")

RULE = "git.sync-conflict"
"""The rule of every conflict candidate."""


def _evidence(side: dict[str, Any], source: str, body: str) -> Evidence:
    """One version of a conflict as a sighting: the commit (``position.uuid``), the machine and root that made it."""
    position: dict[str, Any] = {"file": source, "uuid": str(side.get("commit") or "-")}
    for key in ("machine", "root"):
        if isinstance(side.get(key), str) and side[key]:
            position[key] = side[key]
    at = side.get("at") if isinstance(side.get("at"), str) else None
    quote = side["body"] if side.get("body") is not None else body
    return Evidence("git", None, None, source, position, _utc(at), "text", str(quote)[:QUOTE_MAX])


def _utc(at: str | None) -> str | None:
    """A commit's ISO-8601 time (``2026-03-01T10:00:00+01:00``) as the wire's UTC form, or None."""
    if not at:
        return None
    from datetime import UTC, datetime

    from mmd.core.clock import iso_ms

    try:
        return iso_ms(datetime.fromisoformat(at).astimezone(UTC))
    except ValueError:
        return None


class ConflictQueue:
    """Conflict candidates into the review queue of one root's git part.

    Args:
        queue: the review queue.
        state: the user root's memory state (what :meth:`resolved` compares with).
        publisher: publishes ``queue/added``.
        loop: the daemon's loop (events are published there).
        state_of: the memory state of a project root by key (None when it is not served); default none.
    """

    def __init__(self, queue: ReviewQueue, state: MemoryState, publisher: Publisher,
                 loop: asyncio.AbstractEventLoop, state_of: Callable[[str], MemoryState | None] | None = None) -> None:
        self.queue = queue
        self.state = state
        self.publisher = publisher
        self.loop = loop
        self.state_of = state_of or (lambda scope: None)

    def add(self, candidates: list[dict[str, Any]], source: str) -> list[int]:
        """Queue pinned ``conflict`` candidates (``{topic, body, action, entrySummary?, summary?, scope?, evidence:
        {other, kept}}``, ``scope`` the root of the topic, default the user root), then publish ``queue/added``;
        returns the new ids (a version already queued or decided adds none: the queue merges it by its text)."""
        rows = []
        for c in candidates:
            body, ev = c.get("body") or "", c.get("evidence") or {}
            evidence = tuple(_evidence(v, source, body) for v in (ev.get("other") or {}, ev.get("kept") or {}))
            rows.append(NewCandidate(
                "conflict", c["topic"], (c.get("entrySummary") or c.get("summary") or c["topic"])[:120], body,
                len(body), False, None, source, None, f"{evidence[1].position['uuid']}..{evidence[0].position['uuid']}",
                "sync", rule=RULE, score=2.0, visible=True, evidence=evidence, pinned=True,
                proposal_action="delete" if c.get("action") == "delete" else "replace", scope=c.get("scope") or "user"))
        ids = self.queue.add(rows) if rows else []
        if ids:
            self.loop.call_soon_threadsafe(self.publisher.publish, QUEUE_ADDED,
                                           {"ids": ids, "sessionId": None, "source": source})
        return ids

    def resolved(self, notify: Callable[[dict[str, Any]], None] | None = None) -> list[int]:
        """Accept the pending conflict candidates whose resolution the root holds now: the note's body is the
        candidate's (proposal ``replace``), or the note is gone (``delete``) — accepted on the other machine and
        brought by the sync. Their ``written`` says ``synced`` (undo leaves the note alone); returns their ids."""
        page, _total = self.queue.list("pending", limit=1000, hidden=True)
        out = []
        for cand in page:
            state = self.state if cand.get("scope", "user") == "user" else self.state_of(cand["scope"])
            if cand["rule"] != RULE or state is None:
                continue
            snap = state.current
            note = snap.note(cand["topic"])
            action = cand["proposal"]["action"]
            done = note is None if action == "delete" else note is not None and note.body == cand["body"]
            if not done:
                continue
            decided = self.queue.decide(cand["id"], "accepted", written={
                "topic": cand["topic"], "revision": snap.revision, "synced": True})
            if decided is not None:
                out.append(cand["id"])
                log.info("git.conflict_resolved id=%s topic=%s (the sync brought its resolution)", cand["id"],
                         cand["topic"])
                if notify is not None:
                    notify(dict(decided))
        return out
