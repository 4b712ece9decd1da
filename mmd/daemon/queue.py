"""The review queue: candidate memories waiting for a person (or an agent) to accept or reject them.

Owns: the candidates' rows in the state database (:mod:`.statedb`), their
wire shape (:class:`~mmd.wire.protocol.CandidateJson`) and the status changes
``pending → accepted | rejected`` with a journal row each. A candidate's
identity is :func:`mmd.candidates.candidate_key` — a hash of its kind, topic
and whitespace-normalized body, never of its seq or file — kept for the
queue's whole history, so a log read again (after a shrink, a replaced file,
a new generation or a restart) never brings a candidate back, and a rejected
one never returns. The candidate's shape is :class:`mmd.candidates.NewCandidate`.

Threading: every method uses the calling thread's own connection; the
ingestion worker adds, RPC handlers read and decide (in worker threads).
Never: writes memory files (``queue.accept`` does that through the memory
state, in :mod:`.methods`), reads logs, or publishes events.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

from mmd.candidates import NewCandidate
from mmd.wire.protocol import CandidateJson

from .statedb import CursorRow, StateDB

__all__ = ["STATUSES", "ReviewQueue"]

STATUSES = ("pending", "accepted", "rejected")
"""A candidate's possible statuses."""


def _row_json(r: sqlite3.Row) -> CandidateJson:
    out: CandidateJson = {
        "id": r["id"], "status": r["status"], "kind": r["kind"], "topic": r["topic"], "summary": r["summary"],
        "body": r["body"], "chars": r["chars"], "overBudget": bool(r["over_budget"]),
        "source": {"sessionId": r["session_id"], "file": r["file"], "seq": r["seq"], "messageId": r["message_id"],
                   "kind": r["source_kind"]},
        "createdAt": r["created_at"],
    }
    if r["decided_at"] is not None:
        out["decidedAt"] = r["decided_at"]
    if r["reason"] is not None:
        out["reason"] = r["reason"]
    if r["written_topic"] is not None:
        out["written"] = {"topic": r["written_topic"], "revision": r["written_revision"]}
    return out


class ReviewQueue:
    """Candidates in ``<root>/.mmd/state.db``.

    Args:
        db: the opened state database.
        now_iso: the clock, ISO-8601 UTC with milliseconds.
    """

    def __init__(self, db: StateDB, now_iso: Callable[[], str]) -> None:
        self.db = db
        self._now_iso = now_iso
        self.counts: dict[str, int] = {"pending": 0, "accepted": 0, "rejected": 0, "total": 0}
        """Candidates per status, refreshed after every change (read it from any thread)."""

    def refresh_counts(self) -> dict[str, int]:
        """Recount the candidates per status; updates :attr:`counts`."""
        rows = self.db.conn().execute("SELECT status, COUNT(*) FROM candidates GROUP BY status").fetchall()
        counts = {s: 0 for s in STATUSES}
        counts.update({r[0]: r[1] for r in rows})
        counts["total"] = sum(counts[s] for s in STATUSES)
        self.counts = counts
        return counts

    @property
    def pending(self) -> int:
        """Pending candidates (as of the last change)."""
        return self.counts["pending"]

    def add(self, items: Iterable[NewCandidate], cursor: CursorRow | None = None) -> list[int]:
        """Add the candidates not seen before (by their ``key``) and store ``cursor``, in one transaction.

        Returns:
            The ids of the candidates added, in order.
        """
        conn = self.db.conn()
        now = self._now_iso()
        ids: list[int] = []
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            for c in items:
                cur = conn.execute(
                    "INSERT OR IGNORE INTO candidates (key, kind, topic, summary, body, chars, over_budget,"
                    " session_id, file, seq, message_id, source_kind, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (c.key, c.kind, c.topic, c.summary, c.body, c.chars, int(c.over_budget), c.session_id, c.file,
                     c.seq, c.message_id, c.source_kind, now))
                if cur.rowcount == 1 and cur.lastrowid is not None:
                    ids.append(cur.lastrowid)
            if cursor is not None:
                self.db.put_cursor(cursor, now)
        if ids:
            self.refresh_counts()
        return ids

    def known(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` (see :func:`mmd.candidates.candidate_key`) the queue's history already holds."""
        wanted = list(keys)
        found: set[str] = set()
        conn = self.db.conn()
        for i in range(0, len(wanted), 500):
            part = wanted[i:i + 500]
            marks = ",".join("?" * len(part))
            found.update(r[0] for r in conn.execute(f"SELECT key FROM candidates WHERE key IN ({marks})", part))
        return found

    def list(self, status: str = "pending", *, limit: int = 100, offset: int = 0) -> tuple[list[CandidateJson], int]:
        """Candidates with ``status`` (or ``"all"``), oldest first: ``(page, total matching)``."""
        conn = self.db.conn()
        where, args = ("", ()) if status == "all" else (" WHERE status = ?", (status,))
        total = conn.execute(f"SELECT COUNT(*) FROM candidates{where}", args).fetchone()[0]
        rows = conn.execute(f"SELECT * FROM candidates{where} ORDER BY id LIMIT ? OFFSET ?",
                            (*args, limit, offset)).fetchall()
        return [_row_json(r) for r in rows], int(total)

    def get(self, candidate_id: int) -> CandidateJson | None:
        """One candidate, or None."""
        row = self.db.conn().execute("SELECT * FROM candidates WHERE id = ?", (candidate_id,)).fetchone()
        return _row_json(row) if row is not None else None

    def decide(self, candidate_id: int, status: str, *, reason: str | None = None,
               written: dict[str, Any] | None = None) -> CandidateJson | None:
        """Move a pending candidate to ``accepted`` or ``rejected`` and journal it.

        Args:
            candidate_id: the candidate.
            status: ``accepted`` | ``rejected``.
            reason: why (rejections), kept on the row.
            written: ``{"topic", "revision"}`` of the note an acceptance wrote.

        Returns:
            The candidate after the change, or None when it is not pending (any more).
        """
        conn = self.db.conn()
        now = self._now_iso()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.execute(
                "UPDATE candidates SET status = ?, decided_at = ?, reason = ?, written_topic = ?,"
                " written_revision = ? WHERE id = ? AND status = 'pending'",
                (status, now, reason, (written or {}).get("topic"), (written or {}).get("revision"), candidate_id))
            if cur.rowcount != 1:
                return None
            detail = {"status": status, "reason": reason, "written": written}
            conn.execute("INSERT INTO journal (at, action, candidate_id, detail) VALUES (?, ?, ?, ?)",
                         (now, f"queue.{status[:-2] if status.endswith('ed') else status}", candidate_id,
                          json.dumps(detail, ensure_ascii=False)))
        self.refresh_counts()
        return self.get(candidate_id)
