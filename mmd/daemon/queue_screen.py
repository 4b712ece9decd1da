"""The review queue's rows of an older schema, screened as a new candidate is (issue 29).

Owns: reading a stored row back as the candidate it was made from (:func:`candidate_of`), a row's values with
the screened candidate's in their place (:func:`screened_row`), and :func:`screen_older`: the rows a schema
before 6 stored (``speaker`` '') redacted, escaped, re-identified and flagged in place, a batch a transaction,
once the daemon runs. Until then :func:`.queue_rows.row_json` shows such a row through the same screen.

Threading: the caller's connection, in the caller's thread (a worker). Never: publishes or decides.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where first used: a daemon loads mmd.candidates with its first candidate
    from mmd.candidates import NewCandidate

__all__ = ["BATCH", "candidate_of", "screen_older", "screened_row"]

BATCH = 200
"""Rows screened in one transaction (the ingestion worker's writes wait at most one batch)."""
_SCREENED = ("topic", "summary", "body", "chars", "score", "pinned", "visible", "evidence", "speaker", "flags",
             "flagged", "redacted", "diff")
"""The columns the screen may change, besides the identity (``key``, ``norm``)."""


def candidate_of(r: sqlite3.Row | Mapping[str, Any]) -> NewCandidate:
    """A stored row as the candidate it was made from."""
    from mmd.candidates import Evidence, NewCandidate

    evidence = tuple(Evidence.from_json(e) for e in json.loads(r["evidence"]))
    return NewCandidate(r["kind"], r["topic"], r["summary"], r["body"], r["chars"], bool(r["over_budget"]),
                        r["session_id"], r["file"], r["seq"], r["message_id"], r["source_kind"], r["rule"],
                        float(r["score"]), bool(r["visible"]), evidence, r["proposal_action"], bool(r["pinned"]),
                        diff=r["diff"])


def screened_row(r: sqlite3.Row | Mapping[str, Any], c: NewCandidate | None = None) -> dict[str, Any]:
    """A row's values (``{column: value}``) with the screened candidate's (``c``, default the row's own, screened) in
    their place."""
    c = c or _screen(candidate_of(r))
    values = {k: r[k] for k in r.keys()}  # noqa: SIM118 - a Row iterates its values, not its keys
    values.update(topic=c.topic, summary=c.summary, body=c.body, chars=c.chars, score=c.score, pinned=int(c.pinned),
                  visible=int(c.visible), evidence=json.dumps([e.to_json() for e in c.evidence], ensure_ascii=False),
                  speaker=c.speaker, flags=json.dumps(list(c.flags), ensure_ascii=False), flagged=int(bool(c.flags)),
                  redacted=int(c.redacted), diff=c.diff)
    return values


def _screen(c: NewCandidate) -> NewCandidate:
    from mmd.candidates.screening import screen_candidate

    return screen_candidate(c)


def screen_older(conn: sqlite3.Connection, batch: int = BATCH) -> int:
    """Screen every row stored unscreened (``speaker`` ''), ``batch`` rows a transaction: text redacted and escaped,
    the identity the screened statement's (a ``n:`` key that held a value is replaced; ``#<id>`` is added when the
    screened key is another row's), speaker and flags set. Returns how many rows.

    Raises:
        sqlite3.Error: if the database cannot be written (the batches done stay done).
    """
    done = 0
    while rows := conn.execute("SELECT * FROM candidates WHERE speaker = '' LIMIT ?", (batch,)).fetchall():
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            for r in rows:
                c = _screen(candidate_of(r))
                key = r["key"] if c.norm == r["norm"] or not str(r["key"]).startswith("n:") else f"n:{c.norm}"
                if key != r["key"] and conn.execute("SELECT 1 FROM candidates WHERE key = ?", (key,)).fetchone():
                    key = f"{key}#{r['id']}"
                values = screened_row(r, c)
                conn.execute(f"UPDATE candidates SET key = ?, norm = ?, {', '.join(f'{k} = ?' for k in _SCREENED)}"
                             " WHERE id = ?", (key, c.norm, *(values[k] for k in _SCREENED), r["id"]))
        done += len(rows)
    return done
