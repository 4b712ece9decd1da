"""The review queue's store: identity by content, the whole history kept, decisions journaled, schema versioned.

In-process on a real SQLite file (``<root>/.mmd/state.db``).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from mmd.candidates import NewCandidate, body_key, candidate_key
from mmd.daemon.queue import ReviewQueue
from mmd.daemon.statedb import SCHEMA_VERSION, CursorRow, SchemaError, StateDB


def _cand(body: str, *, topic: str = "memo-1", seq: int = 1, file: str = "/s/a.jsonl") -> NewCandidate:
    return NewCandidate("explicit", topic, body.split("\n")[0], body, len(body), False, "sid", file, seq, f"m{seq}",
                        "user")


@pytest.fixture
def queue(tmp_path: Path) -> ReviewQueue:
    db = StateDB(tmp_path)
    db.open()
    return ReviewQueue(db, lambda: "2026-11-30T00:00:00.000Z")


def test_identity_ignores_seq_file_and_whitespace_but_not_kind_topic_or_words() -> None:
    assert _cand("a  b\n c", seq=1).key == _cand(" a b c ", seq=9, file="/other").key
    assert candidate_key("explicit", "memo-1", "x") != candidate_key("summary", "memo-1", "x")
    assert candidate_key("explicit", "memo-1", "x") != candidate_key("explicit", "memo-2", "x")
    assert body_key("keep  this") == body_key("keep this\n") != body_key("keep that")


def test_a_candidate_seen_once_is_never_added_again_whatever_its_status(queue: ReviewQueue) -> None:
    assert queue.add([_cand("one", seq=1), _cand("two", seq=2), _cand("one", seq=3)]) == [1, 2]
    assert queue.add([_cand("one", seq=7)]) == []
    assert queue.decide(1, "rejected", reason="noise") is not None
    assert queue.add([_cand("one ", seq=8), _cand("three", seq=9)]) == [3]
    assert queue.counts == {"pending": 2, "accepted": 0, "rejected": 1, "expired": 0, "total": 3}
    assert queue.known([_cand("one").norm, _cand("four").norm]) == {_cand("one").norm}


def test_conflicts_of_a_sync_with_one_text_in_many_topics_are_one_candidate_each(queue: ReviewQueue) -> None:
    def conflict(topic: str, body: str) -> NewCandidate:
        return NewCandidate("conflict", topic, topic, body, len(body), False, "", "git:abc", 0, topic, "git")

    assert queue.add([conflict(f"topic-{n}", "TODO: fill in") for n in range(3)]) == [1, 2, 3]
    assert queue.add([conflict("topic-1", "TODO: fill in")]) == []  # the same topic's again: known
    assert queue.add([conflict("topic-9", "TODO: fill in.")]) == [4]  # no near-duplicate across topics either


def test_decisions_happen_once_and_are_journaled(queue: ReviewQueue) -> None:
    queue.add([_cand("one"), _cand("two", seq=2)])
    accepted = queue.decide(1, "accepted", written={"topic": "t", "revision": 4})
    assert accepted is not None and accepted["status"] == "accepted"
    assert accepted["written"] == {"topic": "t", "revision": 4} and accepted["decidedAt"] == "2026-11-30T00:00:00.000Z"
    assert queue.decide(1, "rejected") is None
    rejected = queue.decide(2, "rejected", reason="dup")
    assert rejected is not None and rejected["reason"] == "dup" and "written" not in rejected
    rows = queue.db.conn().execute("SELECT action, candidate_id FROM journal ORDER BY id").fetchall()
    assert [tuple(r) for r in rows] == [("queue.accept", 1), ("queue.reject", 2)]
    page, total = queue.list("all", limit=1, offset=1)
    assert total == 2 and [c["id"] for c in page] == [2]
    assert queue.get(3) is None


def test_the_cursor_is_stored_with_its_candidates_in_one_transaction(queue: ReviewQueue) -> None:
    cursor = {"log": {"path": "/s/a.jsonl", "inode": 7, "size": 100, "offset": 90, "frames": 2},
              "state": {"last_seq": 41}}
    queue.add([_cand("one")], CursorRow("/s/a.jsonl", "dsh", "sid", cursor))
    row = queue.db.conn().execute("SELECT inode, size, offset, frames, last_seq FROM cursors").fetchone()
    assert tuple(row) == (7, 100, 90, 2, 41)
    assert queue.db.cursors()["/s/a.jsonl"].cursor == cursor
    queue.db.drop_cursor("/s/a.jsonl")
    assert queue.db.cursors() == {}


def test_each_thread_gets_its_own_connection_in_wal_mode(queue: ReviewQueue) -> None:
    seen: list[sqlite3.Connection] = []
    worker = threading.Thread(target=lambda: seen.append(queue.db.conn()))
    worker.start()
    worker.join()
    assert seen[0] is not queue.db.conn()
    assert queue.db.conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert queue.db.conn().execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_database_from_a_newer_mmd_is_refused(tmp_path: Path) -> None:
    db = StateDB(tmp_path)
    db.open()
    db.conn().execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(SchemaError, match="schema version"):
        StateDB(tmp_path).open()
