"""Which rule drafts of the review queue are on show: a budget per agent session, an age, a first backfill's share.

Owns: the rules of issue 30 "A queue that ends", over the rows of :mod:`.queue` (in its transactions):

- A **rule draft** is a candidate of our rules (:func:`rule_names`), not marked on purpose. Marked lines
  (``mm:``, ``MEMO:``, ``Summary:`` …), the extractor's candidates, an agent's proposals and sync
  conflicts are outside every budget: their visibility is their own.
- A session **offers** at most its budget of rule drafts *in all*, decided ones counted
  (:func:`offer`): the budget is the most drafts the pipeline showed for it in one run
  (:func:`mmd.candidates.score.budget`, kept in the ``budgets`` table), each draft shown takes a
  place (``offered_by``: the session), and a decision, an expiry or an undo never hands that place to
  another draft. Reviewing a session therefore empties it; a session that goes on (a longer session
  has a larger budget) or a new one brings new drafts. A later run of the same session may move a
  place from one undecided draft to a better one (the whole session in view ranks them again); a
  draft said again in another session may take a place in *that* session's budget ("what the person
  told the agents twice ranks first").
- A pending rule draft queued more than ``expire_days`` ago (default :data:`EXPIRE_DAYS`, counted from
  ``queued_at``: when it was queued, or last brought back) leaves the default view as ``expired``
  (reason ``age``, :func:`expire`). ``queue.undo`` brings one back, on show, its clock started again.
- A **first backfill** (the logs a daemon reads for the first time when it starts or finds a folder,
  newest first) offers at most :data:`BACKFILL_SHOWN` rule drafts all sessions together
  (:class:`Allowance`): the newest sessions' best. What it holds back (drafts its session would have
  shown) is ``expired`` from the start (reason ``backfill``) and never refills the view; one is
  brought back by ``queue.undo``, or by being said again in a session read later.

Never: scores or ranks drafts (the pipeline did), opens a connection or a transaction (the caller's).

Threading: called by :class:`~.queue.ReviewQueue` inside its transactions, on the caller's connection.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from mmd.core.clock import iso_ms, parse_iso_ms

if TYPE_CHECKING:
    from mmd.candidates import NewCandidate

__all__ = ["BACKFILL", "BACKFILL_SHOWN", "EXPIRE_DAYS", "AGE", "Allowance", "Sighting", "brought_back", "expire",
           "is_draft", "left_out", "offer", "rule_names", "session_of"]

EXPIRE_DAYS = 30
"""Days a rule draft stays pending, counted from when it was queued, before it is ``expired`` (the default of
``candidates.expireDays``)."""
BACKFILL_SHOWN = 24
"""Rule drafts a first backfill shows, all its sessions together (the default of ``candidates.backfillShown``):
about the budgets of the four or five newest sessions, a screen of review rather than hundreds."""
AGE = "age"
"""``reason`` of a draft expired after ``expire_days`` pending."""
BACKFILL = "backfill"
"""``reason`` of a draft a first backfill held back."""


def session_of(evidence: dict[str, Any]) -> str:
    """The session a sighting belongs to, as the budgets name it: ``agent|session id`` (``agent|file`` when the
    format has no id), from a sighting's JSON (:meth:`mmd.candidates.Evidence.to_json`)."""
    return f"{evidence.get('agent')}|{evidence.get('sessionId') or evidence.get('file')}"


@functools.cache
def rule_names() -> frozenset[str]:
    """The rules whose drafts count in a session's budget (:data:`mmd.candidates.signals.RULES`), read on first use:
    a daemon loads :mod:`mmd.candidates` when it first meets a candidate, not at start."""
    from mmd.candidates.signals import RULES

    return frozenset(r.name for r in RULES)


def is_draft(c: NewCandidate) -> bool:
    """Whether ``c`` is a rule draft (counted in its session's budget): made by one of :func:`rule_names`, not
    pinned."""
    return not c.pinned and c.rule in rule_names()


@dataclass
class Allowance:
    """What a first backfill may still show, all its sessions together.

    Attributes:
        left: rule drafts it may still put on show.
        charged: the ids it put on show (a later run of the same session giving a place back refunds it).
        held: drafts held back so far (``expired`` from the start).
    """

    left: int
    charged: set[int] = field(default_factory=set)
    held: int = 0


@dataclass(frozen=True, slots=True)
class Sighting:
    """One rule draft of a batch, once matched to its row.

    Attributes:
        cid: the candidate's id.
        shown: the pipeline shows it within its session's budget (``NewCandidate.visible``).
        again: this sighting brought a session the candidate had not been seen in (said again elsewhere).
        new: the row was inserted by this batch.
        score: the row's score after the batch.
    """

    cid: int
    shown: bool
    again: bool
    new: bool
    score: float


def brought_back(conn: sqlite3.Connection, row: sqlite3.Row, c: NewCandidate, now: str, *, elsewhere: bool) -> bool:
    """Move ``row``, the candidate ``c`` was matched to, back to ``pending`` when ``c`` brings it back; whether it did.

    - An **expired** one, when ``c`` is pinned or ``elsewhere`` (the caller: outside a first backfill, said in a
      session the row was never seen in): hidden until :func:`offer` finds it a place.
    - An **accepted** one, when ``c`` is an agent's proposal of the very statement (the same identity, not a
      near-duplicate): a proposal is queued only when its effect is not in the notes now (a create's or append's text
      no note holds, a delete's note there again, a replace's text not the note's), so the acceptance no longer
      holds. It comes back on show with the proposal's topic and action. A rejected one never comes back: the
      person's no stands.

    Journaled ``queue.return`` ``{was, reason}`` (the row's reason; ``proposed again`` for an accepted one).
    """
    from mmd.candidates.proposals import PROPOSAL_RULE

    if row["status"] == "expired" and (c.pinned or elsewhere):
        conn.execute("UPDATE candidates SET status = 'pending', decided_at = NULL, reason = NULL, visible = 0,"
                     " offered_by = NULL, queued_at = ? WHERE id = ?", (now, row["id"]))
        reason = row["reason"]
    elif row["status"] == "accepted" and c.rule == PROPOSAL_RULE and row["norm"] == c.norm:
        conn.execute("UPDATE candidates SET status = 'pending', decided_at = NULL, reason = NULL, visible = 1,"
                     " written_topic = NULL, written_revision = NULL, topic = ?, proposal_action = ?, queued_at = ?"
                     " WHERE id = ?", (c.topic, c.proposal_action, now, row["id"]))
        reason = "proposed again"
    else:
        return False
    conn.execute("INSERT INTO journal (at, action, candidate_id, detail) VALUES (?, 'queue.return', ?, ?)",
                 (now, row["id"], json.dumps({"was": row["status"], "reason": reason})))
    return True


def _marks(ids: Iterable[int]) -> tuple[str, list[int]]:
    listed = list(ids)
    return ",".join("?" * len(listed)), listed


def offer(conn: sqlite3.Connection, session: str, seen: Sequence[Sighting], now: str,
          allowance: Allowance | None = None) -> None:
    """Put the session's best drafts on show within what its budget has left, decided ones counted.

    The budget is the larger of the stored one and the number of drafts the pipeline shows in this run; the
    places left are the budget minus the session's decided (accepted, rejected, expired) drafts. They go, in
    order, to drafts said again here that another session holds hidden (best score first), then to the drafts
    the pipeline shows, in its order; an undecided draft of the session that is no longer among them leaves
    the view (hidden, pending). With ``allowance`` (a first backfill) the places are at most what it has left;
    a draft that only the allowance keeps off is ``expired`` (reason :data:`BACKFILL`) when this batch made it.
    """
    shown = list(dict.fromkeys(s.cid for s in seen if s.shown))
    stored = conn.execute("SELECT budget FROM budgets WHERE session = ?", (session,)).fetchone()
    budget = max(int(stored[0]) if stored else 0, len(shown))
    if stored is None or budget > int(stored[0]):
        conn.execute("INSERT OR REPLACE INTO budgets (session, budget) VALUES (?, ?)", (session, budget))
    placed = conn.execute("SELECT id, status FROM candidates WHERE offered_by = ?", (session,)).fetchall()
    decided = sum(1 for r in placed if r[1] != "pending")
    on_show = {int(r[0]) for r in placed if r[1] == "pending"}
    marks, ids = _marks({s.cid for s in seen})
    rows = {int(r[0]): r for r in conn.execute(
        f"SELECT id, status, draft, offered_by FROM candidates WHERE id IN ({marks})", ids)}
    free = {cid for cid, r in rows.items() if r[1] == "pending" and r[2] and r[3] in (None, session)}
    again = [s.cid for s in sorted(seen, key=lambda s: -s.score) if s.again and not s.shown]
    order = [cid for cid in dict.fromkeys([*again, *shown]) if cid in free]
    room = max(0, budget - decided)
    take, before = room, on_show
    if allowance is not None:
        refund = on_show & allowance.charged
        allowance.left += len(refund)
        allowance.charged -= refund
        before = on_show - refund  # on show before the backfill: no part of its share
        take = min(room, allowance.left + len(before & set(order)))
    wanted = order[:take]
    gone = on_show - set(wanted)
    if gone:
        marks, ids = _marks(gone)
        conn.execute(f"UPDATE candidates SET visible = 0, offered_by = NULL WHERE id IN ({marks})", ids)
    if wanted:
        marks, ids = _marks(wanted)
        conn.execute(f"UPDATE candidates SET visible = 1, offered_by = ? WHERE id IN ({marks})", [session, *ids])
    if allowance is None:
        return
    charged = set(wanted) - before
    allowance.left -= len(charged)
    allowance.charged |= charged
    made = {s.cid for s in seen if s.new}
    held = [cid for cid in order[take:room] if cid in made]
    if held:
        allowance.held += len(held)
        marks, ids = _marks(held)
        conn.execute(f"UPDATE candidates SET status = 'expired', decided_at = ?, reason = ?, visible = 0,"
                     f" offered_by = NULL WHERE id IN ({marks})", [now, BACKFILL, *ids])


def expire(conn: sqlite3.Connection, now: str, days: int) -> list[int]:
    """Move the pending rule drafts queued more than ``days`` days before ``now`` to ``expired`` (reason
    :data:`AGE`); returns their ids. ``days`` below 1 expires nothing."""
    if days < 1:
        return []
    cutoff = iso_ms(parse_iso_ms(now) - timedelta(days=days))
    ids = [int(r[0]) for r in conn.execute(
        "SELECT id FROM candidates WHERE status = 'pending' AND draft = 1 AND pinned = 0"
        " AND COALESCE(queued_at, created_at) < ?", (cutoff,))]
    for i in range(0, len(ids), 500):
        marks, part = _marks(ids[i:i + 500])
        conn.execute(f"UPDATE candidates SET status = 'expired', decided_at = ?, reason = ? WHERE id IN ({marks})",
                     [now, AGE, *part])
    return ids


def left_out(conn: sqlite3.Connection, where: str, args: Sequence[Any]) -> dict[str, int]:
    """What the default view leaves out among the candidates matching ``where`` (an SQL condition over
    ``candidates``, ``""`` for all): ``{hidden, expired, heldBack}`` — pending drafts hidden by their session's
    budget, drafts expired after their time pending, drafts a first backfill held back."""
    row = conn.execute(
        "SELECT COALESCE(SUM(status = 'pending' AND visible = 0), 0),"
        f" COALESCE(SUM(status = 'expired' AND reason = '{AGE}'), 0),"
        f" COALESCE(SUM(status = 'expired' AND reason = '{BACKFILL}'), 0)"
        f" FROM candidates{f' WHERE {where}' if where else ''}", list(args)).fetchone()
    return {"hidden": int(row[0]), "expired": int(row[1]), "heldBack": int(row[2])}
