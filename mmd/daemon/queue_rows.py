"""The review queue's rows as the wire sees them, and a sighting's identities (:mod:`.queue`'s helpers).

Owns: a ``candidates`` row as :class:`~mmd.wire.protocol.CandidateJson` (an agent's proposal with who proposed it
and why, issue 28; who said it, its flags, whether a secret was redacted and a held topic's diff, issue 29: a row
an older schema stored unscreened is shown through the queue's door), the ``\\n``-framed sets the filters match and
the filters' SQL, a sighting's place and its replay identity. Never does: SQL writes, decisions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from mmd.wire.protocol import CandidateJson

from .queue_offers import session_of

__all__ = ["HELD", "filters", "framed", "place", "replay", "row_json"]

HELD = "held"
"""The kind of a held topic's candidate (:mod:`.holds`): never merged with a statement, nor one into it."""


def framed(values: Iterable[str | None]) -> str:
    """``\\n``-framed set of the non-empty values (``\\na\\nb\\n``), for ``LIKE '%\\nX\\n%'`` filters."""
    found = sorted({v for v in values if v})
    return "\n" + "\n".join(found) + "\n" if found else ""


def row_json(r: sqlite3.Row | Mapping[str, Any]) -> CandidateJson:
    """The ``candidates`` row ``r`` as the wire's candidate (``decidedAt``, ``reason``, ``written``, ``diff`` when
    set); a row not screened yet (``speaker`` '', :func:`.queue_screen.screen_older`) as the door would store it."""
    if not r["speaker"]:
        from .queue_screen import screened_row

        return row_json(screened_row(r))
    out: CandidateJson = {
        "id": r["id"], "status": r["status"], "kind": r["kind"], "rule": r["rule"], "score": round(r["score"], 4),
        "seen": r["seen"], "visible": bool(r["visible"]), "pinned": bool(r["pinned"]), "topic": r["topic"],
        "proposal": {"action": r["proposal_action"], "topic": r["topic"]},
        "summary": r["summary"], "body": r["body"], "chars": r["chars"], "overBudget": bool(r["over_budget"]),
        "evidence": json.loads(r["evidence"]),
        "source": {"sessionId": r["session_id"], "file": r["file"], "seq": r["seq"], "messageId": r["message_id"],
                   "kind": r["source_kind"]},
        "createdAt": r["created_at"], "scope": r["scope"], "speaker": r["speaker"], "flags": json.loads(r["flags"]),
        "redacted": bool(r["redacted"]),
    }
    if r["diff"] is not None:
        out["diff"] = r["diff"]
    from mmd.candidates.proposals import is_proposal  # loaded with the first candidate, not at the daemon's start

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
    from mmd.candidates.identity import normalized

    return f"replay|{session_of(e)}|{e.get('who')}|{e.get('at')}|{normalized(str(e.get('quote') or ''))}"


def filters(*, project: str | None, agent: str | None, session: str | None,
             scope: str | None) -> tuple[list[str], list[Any]]:
    """The SQL conditions (and their arguments) of :meth:`.queue.ReviewQueue.list`'s filters but status and score."""
    clauses: list[str] = []
    args: list[Any] = []
    if session is not None:
        clauses.append("session_id = ?")
        args.append(session)
    if agent is not None:
        clauses.append("instr(agents, ?) > 0")
        args.append(f"\n{agent}\n")
    if scope is not None:
        clauses.append("scope = ?")
        args.append(scope)
    if project is not None:  # the project or a folder below it (a session started in a subfolder of the repo)
        clauses.append("(instr(projects, ?) > 0 OR instr(projects, ?) > 0)")
        if "/" not in project and project.endswith("…"):  # a name as the list cut it: its folder's start
            args += [f"/{project[:-1]}"] * 2
        elif "/" not in project:  # a folder's name, as `queue list` shows it: the project's last folder
            args += [f"/{project}\n", f"/{project}/"]
        else:
            folder = project.rstrip("/")
            args += [f"\n{folder or '/'}\n", f"\n{folder}/"]
    return clauses, args
