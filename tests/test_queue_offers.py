"""A queue that ends (issue 30): a session's budget counts its decided drafts, drafts expire, a first backfill shows
the newest sessions' best and holds the rest back for good; the schema-4 database is upgraded in place.

In-process on a real SQLite file (``<root>/.mmd/state.db``), with a clock the tests move.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mmd.candidates import NewCandidate
from mmd.candidates.model import Evidence
from mmd.daemon.queue import ReviewQueue
from mmd.daemon.queue_offers import Allowance
from mmd.daemon.statedb import SCHEMA_VERSION, StateDB

STATEMENTS = [
    "Always run the linter before pushing to the shared branch.",
    "Never commit generated protobuf files into this repository.",
    "We use pnpm for installs, never npm or yarn.",
    "Pin container images by digest in deploy manifests.",
    "Never log customer email addresses even at debug level.",
    "Keep every database migration reversible with a down step.",
    "Write the changelog entry under the Unreleased heading.",
    "Payment captures are never retried without an idempotency key.",
]


class Clock:
    def __init__(self) -> None:
        self.now = "2026-11-30T00:00:00.000Z"

    def __call__(self) -> str:
        return self.now


def draft(n: int, session: str, *, visible: bool = True, score: float = 0.9, line: int | None = None,
          rule: str = "human-standing-rule", pinned: bool = False) -> NewCandidate:
    body = STATEMENTS[n]
    ev = Evidence("claude-code", session, "/p", f"/logs/{session}.jsonl",
                  {"file": f"/logs/{session}.jsonl", "line": n if line is None else line}, None, "human", body)
    return NewCandidate("rule", f"t{n}", body, body, len(body), False, session, ev.file, None, None, "user", rule,
                        score, visible, (ev,), "create", pinned)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def queue(tmp_path: Path, clock: Clock) -> ReviewQueue:
    db = StateDB(tmp_path)
    db.open()
    return ReviewQueue(db, clock)


def on_show(queue: ReviewQueue) -> list[str]:
    return [c["body"] for c in queue.list("pending", hidden=False)[0]]


def test_a_session_offers_its_budget_in_all_so_deciding_it_empties_it(queue: ReviewQueue) -> None:
    queue.add([draft(0, "s1"), draft(1, "s1"), draft(2, "s1", visible=False, score=0.8)])
    assert on_show(queue) == STATEMENTS[:2]
    first, second = (c["id"] for c in queue.list("pending", hidden=False)[0])
    queue.decide(first, "rejected")
    assert on_show(queue) == [STATEMENTS[1]]  # the hidden third did not take the rejected one's place
    queue.decide(second, "accepted", written={"topic": "t1", "revision": 2})
    assert on_show(queue) == []
    # the same session read again, ranked as before: its budget is spent, nothing comes up
    queue.add([draft(0, "s1"), draft(1, "s1"), draft(2, "s1", visible=False, score=0.8)])
    assert on_show(queue) == [] and queue.left_out() == {"hidden": 1, "expired": 0, "heldBack": 0}
    # the session went on: its budget grew by one, and that one place goes to its best undecided draft
    queue.add([draft(0, "s1"), draft(1, "s1"), draft(2, "s1"), draft(3, "s1", visible=False, score=0.7)])
    assert on_show(queue) == [STATEMENTS[2]]


def test_a_later_run_of_a_session_moves_an_undecided_place_to_a_better_draft(queue: ReviewQueue) -> None:
    queue.add([draft(0, "s1"), draft(1, "s1", visible=False)])
    (early,) = queue.list("pending", hidden=False)[0]
    queue.add([draft(1, "s1", score=1.2), draft(0, "s1", visible=False)])  # the whole session in view ranks again
    assert on_show(queue) == [STATEMENTS[1]]
    again = queue.get(early["id"])
    assert again is not None and (again["status"], again["visible"]) == ("pending", False)


def test_a_draft_said_again_in_another_session_takes_a_place_there(queue: ReviewQueue) -> None:
    queue.add([draft(0, "s1"), draft(1, "s1", visible=False, score=0.5)])
    assert on_show(queue) == [STATEMENTS[0]]
    queue.add([draft(2, "s2"), draft(1, "s2", visible=False, score=0.5, line=40)])  # s2's budget: one draft
    assert on_show(queue) == STATEMENTS[:2]  # told the agents twice: ranks first in s2's budget
    repeated = next(c for c in queue.list("all")[0] if c["body"] == STATEMENTS[1])
    assert repeated["seen"] == 2 and {e["sessionId"] for e in repeated["evidence"]} == {"s1", "s2"}
    assert queue.left_out() == {"hidden": 1, "expired": 0, "heldBack": 0}  # s2's own draft waits


def test_marked_lines_and_other_candidates_never_count_in_a_budget(queue: ReviewQueue) -> None:
    queue.add([draft(0, "s1"), draft(1, "s1", pinned=True, score=2.0), draft(2, "s1", rule="mm.summary"),
               draft(3, "s1", rule="extractor")])
    assert sorted(on_show(queue)) == sorted(STATEMENTS[:4])
    queue.decide(queue.list("pending", hidden=False)[0][0]["id"], "rejected")
    assert len(on_show(queue)) == 3


def test_a_draft_pending_past_its_age_expires_and_undo_brings_it_back_with_a_new_clock(
        queue: ReviewQueue, clock: Clock) -> None:
    queue.add([draft(0, "s1"), draft(1, "s1", visible=False), draft(2, "s1", pinned=True, score=2.0)])
    clock.now = "2026-12-30T00:00:00.000Z"  # 30 days: not more
    assert queue.expire() == []
    clock.now = "2026-12-30T00:00:00.001Z"
    gone = queue.expire()
    assert len(gone) == 2 and on_show(queue) == [STATEMENTS[2]]  # the pinned one stays
    expired = queue.list("expired")[0]
    assert {(c["reason"], c["decidedAt"]) for c in expired} == {("age", clock.now)}
    assert queue.counts["expired"] == 2 and queue.left_out() == {"hidden": 0, "expired": 2, "heldBack": 0}
    journal = queue.db.conn().execute("SELECT action, candidate_id FROM journal ORDER BY id").fetchall()
    assert sorted((a, c) for a, c in journal) == sorted(("queue.expire", cid) for cid in gone)
    hidden_one = next(c for c in expired if c["body"] == STATEMENTS[1])
    back = queue.reopen(hidden_one["id"], "expired")
    assert back is not None and (back["status"], back["visible"]) == ("pending", True)  # asked for: on show
    assert queue.expire() == []  # its age counts from the undo
    clock.now = "2027-01-29T00:00:00.002Z"
    assert queue.expire() == [hidden_one["id"]]


def test_a_first_backfill_shows_the_newest_sessions_best_and_holds_the_rest_back_for_good(
        queue: ReviewQueue) -> None:
    allowance = Allowance(3)
    queue.add([draft(0, "newest"), draft(1, "newest"), draft(2, "newest", visible=False)], allowance=allowance)
    queue.add([draft(3, "older"), draft(4, "older")], allowance=allowance)
    queue.add([draft(5, "oldest"), draft(6, "oldest")], allowance=allowance)
    shown = [STATEMENTS[0], STATEMENTS[1], STATEMENTS[3]]
    assert on_show(queue) == shown  # the newest session's two, then the next one's best
    held = queue.list("expired")[0]
    assert [c["body"] for c in held] == [STATEMENTS[4], STATEMENTS[5], STATEMENTS[6]]
    assert {c["reason"] for c in held} == {"backfill"}
    assert allowance.held == 3 and queue.left_out() == {"hidden": 1, "expired": 0, "heldBack": 3}
    # after the backfill, the held-back session goes on: what it held back never refills the view
    queue.add([draft(5, "oldest"), draft(6, "oldest"), draft(7, "oldest", visible=False)])
    assert on_show(queue) == shown
    # said again in a session read later: it comes back (pending) and takes that session's place
    queue.add([draft(6, "fresh", line=90)])
    assert sorted(on_show(queue)) == sorted([*shown, STATEMENTS[6]])
    back = next(c for c in queue.list("pending")[0] if c["body"] == STATEMENTS[6])
    assert back["status"] == "pending" and "reason" not in back and "decidedAt" not in back


# --- the schema-4 database, upgraded in place -----------------------------------------------------------------

V4 = """
CREATE TABLE candidates (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'rejected')),
    kind TEXT NOT NULL, topic TEXT NOT NULL, summary TEXT NOT NULL, body TEXT NOT NULL, chars INTEGER NOT NULL,
    over_budget INTEGER NOT NULL, session_id TEXT, file TEXT NOT NULL, seq INTEGER, message_id TEXT,
    source_kind TEXT NOT NULL, created_at TEXT NOT NULL, decided_at TEXT, reason TEXT, written_topic TEXT,
    written_revision INTEGER, rule TEXT NOT NULL DEFAULT '', score REAL NOT NULL DEFAULT 0,
    seen INTEGER NOT NULL DEFAULT 1, visible INTEGER NOT NULL DEFAULT 1, pinned INTEGER NOT NULL DEFAULT 0,
    norm TEXT, proposal_action TEXT NOT NULL DEFAULT 'create', evidence TEXT NOT NULL DEFAULT '[]',
    agents TEXT NOT NULL DEFAULT '', projects TEXT NOT NULL DEFAULT '', scope TEXT NOT NULL DEFAULT 'user');
CREATE INDEX candidates_by_status ON candidates (status, id);
CREATE INDEX candidates_by_norm ON candidates (norm);
CREATE INDEX candidates_by_score ON candidates (status, visible, score);
CREATE TABLE cursors (path TEXT PRIMARY KEY, kind TEXT NOT NULL, session_id TEXT, inode INTEGER NOT NULL,
    size INTEGER NOT NULL, offset INTEGER NOT NULL, frames INTEGER NOT NULL, last_seq INTEGER NOT NULL,
    cursor TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE journal (id INTEGER PRIMARY KEY, at TEXT NOT NULL, action TEXT NOT NULL, candidate_id INTEGER,
    detail TEXT NOT NULL);
CREATE TABLE extractors (session TEXT PRIMARY KEY, at TEXT NOT NULL, ok INTEGER NOT NULL, added INTEGER NOT NULL,
    detail TEXT NOT NULL);
"""
"""The candidates table and its neighbours as schema 4 made them (mmd before issue 30)."""


def _v4_row(db: sqlite3.Connection, cid: int, status: str, rule: str, visible: int, pinned: int = 0) -> None:
    ev = [{"agent": "codex", "sessionId": "s9", "project": "/p", "file": "/l.jsonl", "position": {"file": "/l.jsonl"},
           "at": None, "who": "human", "quote": STATEMENTS[cid]}]
    db.execute("INSERT INTO candidates (id, key, status, kind, topic, summary, body, chars, over_budget, session_id,"
               " file, source_kind, created_at, decided_at, rule, score, visible, pinned, norm, evidence)"
               " VALUES (?, ?, ?, 'rule', 't', ?, ?, 10, 0, 's9', '/l.jsonl', 'user', '2026-01-01T00:00:00.000Z', ?,"
               " ?, 0.9, ?, ?, ?, ?)",
               (cid, f"n:{cid}", status, STATEMENTS[cid], STATEMENTS[cid],
                None if status == "pending" else "2026-01-02T00:00:00.000Z", rule, visible, pinned, f"norm {cid}",
                json.dumps(ev)))


def test_a_schema_4_database_is_upgraded_in_place_keeping_every_row(tmp_path: Path, clock: Clock) -> None:
    (tmp_path / ".mmd").mkdir()
    db = sqlite3.connect(tmp_path / ".mmd" / "state.db")
    db.executescript(V4)
    _v4_row(db, 1, "pending", "human-standing-rule", 1)
    _v4_row(db, 2, "pending", "human-standing-rule", 0)
    _v4_row(db, 3, "rejected", "assistant-lesson", 1)
    _v4_row(db, 4, "pending", "mm.explicit", 1, pinned=1)
    db.execute("INSERT INTO journal (at, action, candidate_id, detail) VALUES ('x', 'queue.reject', 3, '{}')")
    db.execute("PRAGMA user_version = 4")
    db.commit()
    db.close()
    state = StateDB(tmp_path)
    state.open()
    conn = state.conn()
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
    rows = conn.execute("SELECT id, status, draft, offered_by, queued_at IS NOT NULL FROM candidates ORDER BY id")
    assert [tuple(r) for r in rows] == [(1, "pending", 1, "codex|s9", 1), (2, "pending", 1, None, 1),
                                        (3, "rejected", 1, "codex|s9", 0), (4, "pending", 0, None, 1)]
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"candidates_by_status", "candidates_by_norm", "candidates_by_score", "candidates_by_offer",
            "candidates_ranked_flagged"} <= indexes
    assert conn.execute("SELECT COUNT(*) FROM journal").fetchone()[0] == 1
    queue = ReviewQueue(state, clock)
    queue.refresh_counts()
    assert queue.counts == {"pending": 3, "accepted": 0, "rejected": 1, "expired": 0, "total": 4}
    clock.now = "2027-06-01T00:00:00.000Z"  # the upgraded pending drafts' age counts from the upgrade, not 2026-01
    assert sorted(queue.expire()) == [1, 2] and queue.counts["expired"] == 2
    with pytest.raises(sqlite3.IntegrityError):  # the CHECK still refuses a status nobody knows
        conn.execute("UPDATE candidates SET status = 'lost' WHERE id = 1")
    state.close()
    state = StateDB(tmp_path)
    state.open()  # opened again: nothing to upgrade, nothing changed
    assert [tuple(r) for r in state.conn().execute("SELECT id, status FROM candidates ORDER BY id")] == [
        (1, "expired"), (2, "expired"), (3, "rejected"), (4, "pending")]
    state.close()
