"""The review queue's rows as the wire sees them, and a sighting's identities (:mod:`.queue`'s helpers).

Owns: a ``candidates`` row as :class:`~mmd.wire.protocol.CandidateJson` (an agent's proposal with who proposed it
and why, issue 28), the ``\\n``-framed sets the filters match, a sighting's place and its replay identity.
Never does: SQL writes, decisions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from mmd.candidates.identity import normalized
from mmd.candidates.proposals import is_proposal
from mmd.wire.protocol import CandidateJson

from .queue_offers import session_of

__all__ = ["framed", "place", "replay", "row_json"]


def framed(values: Iterable[str | None]) -> str:
    """``\\n``-framed set of the non-empty values (``\\na\\nb\\n``), for ``LIKE '%\\nX\\n%'`` filters."""
    found = sorted({v for v in values if v})
    return "\n" + "\n".join(found) + "\n" if found else ""


def row_json(r: sqlite3.Row) -> CandidateJson:
    """The ``candidates`` row ``r`` as the wire's candidate (``decidedAt``, ``reason``, ``written`` when set)."""
    out: CandidateJson = {
        "id": r["id"], "status": r["status"], "kind": r["kind"], "rule": r["rule"], "score": round(r["score"], 4),
        "seen": r["seen"], "visible": bool(r["visible"]), "pinned": bool(r["pinned"]), "topic": r["topic"],
        "proposal": {"action": r["proposal_action"], "topic": r["topic"]},
        "summary": r["summary"], "body": r["body"], "chars": r["chars"], "overBudget": bool(r["over_budget"]),
        "evidence": json.loads(r["evidence"]),
        "source": {"sessionId": r["session_id"], "file": r["file"], "seq": r["seq"], "messageId": r["message_id"],
                   "kind": r["source_kind"]},
        "createdAt": r["created_at"], "scope": r["scope"],
    }
    if is_proposal(r["rule"]):  # the agent's own: who proposed it and why (issue 28)
        first = out["evidence"][0] if out["evidence"] else {}
        out["proposal"] = {**out["proposal"], "by": first.get("agent"), "reason": first.get("reason")}
    if r["decided_at"] is not None:
        out["decidedAt"] = r["decided_at"]
    if r["reason"] is not None:
        out["reason"] = r["reason"]
    if r["written_topic"] is not None:
        out["written"] = {"topic": r["written_topic"], "revision": r["written_revision"]}
    return out


def place(e: dict[str, Any]) -> str:
    """See :attr:`mmd.candidates.model.Evidence.place` (the same identity over the stored JSON)."""
    p = e.get("position") or {}
    where = p.get("uuid") or f"{e.get('sessionId') or p.get('file')}:{p.get('line')}:{p.get('seq')}"
    return f"{e.get('agent')}|{where}|{e.get('who')}"


def replay(e: dict[str, Any]) -> str:
    """A sighting's identity across replays: session, who, when (``at``) and the quote, normalized. A resumed
    session or a copied log replays a record at a new place with its old time: no new sighting."""
    return f"replay|{session_of(e)}|{e.get('who')}|{e.get('at')}|{normalized(str(e.get('quote') or ''))}"
