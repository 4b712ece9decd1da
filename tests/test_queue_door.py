"""The review queue's door on a real ``state.db`` (issue 29): what the queue stores, lists and dumps is screened
(``speaker``, ``flags``, ``redacted``), flagged candidates come last and are never taken by a bulk accept unnamed,
the person saying what the agent proposed makes it theirs, and rows an older schema stored are screened in place."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mmd.candidates import candidates_from
from mmd.daemon.queue import ReviewQueue
from mmd.daemon.statedb import StateDB
from tests.test_candidates_screening import AGENT_LINES, _said

SECRET = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"


@pytest.fixture
def queue(tmp_path: Path) -> ReviewQueue:
    """The review queue on a fresh ``state.db`` under ``tmp_path``."""
    (db := StateDB(tmp_path)).open()
    return ReviewQueue(db, lambda: "2026-11-30T00:00:00.000Z")


def _dump(root: Path) -> str:
    with sqlite3.connect(root / ".mmd" / "state.db") as db:
        return "\n".join(db.iterdump())


def test_flagged_candidates_are_listed_last_whatever_their_score(queue: ReviewQueue, tmp_path: Path) -> None:
    said = [_said("assistant", line, i) for i, line in enumerate(AGENT_LINES)]
    said += [_said("human", "Always deploy with scripts/ship.sh, never by hand.", 5),
             _said("human", f"mm: token {SECRET}", 6)]
    ids = queue.add(candidates_from(said, write_budget=4000))
    page, _ = queue.list(hidden=True)
    assert len(ids) == len(page) == 5
    flagged = [bool(c["flags"]) for c in page]
    assert flagged == sorted(flagged) and flagged.count(True) == 4  # the plain one first, though it scores lowest
    assert page[0]["speaker"] == "person" and page[0]["score"] < min(c["score"] for c in page[1:])
    assert [c["speaker"] for c in page[1:]] == ["agent"] * 3 + ["person"]  # proposals score 10, yet come after it
    assert SECRET not in _dump(tmp_path) and "‹secret: github token›" in _dump(tmp_path)


def test_the_person_saying_what_the_agent_proposed_makes_it_theirs(queue: ReviewQueue) -> None:
    [agent] = queue.add(candidates_from([_said("assistant", "mm: the build cache lives in /var/cache/b")],
                                        write_budget=4000))
    first = queue.get(agent)
    assert first is not None and (first["speaker"], first["pinned"]) == ("agent", False)
    queue.add(candidates_from([_said("human", "mm: the build cache lives in /var/cache/b", 3)], write_budget=4000))
    merged = queue.get(agent)
    assert merged is not None and (merged["speaker"], merged["pinned"], merged["seen"]) == ("person", True, 2)


def test_rows_an_older_schema_stored_are_screened_in_place(queue: ReviewQueue, tmp_path: Path) -> None:
    [cid] = queue.add(candidates_from([_said("human", "mm: deploy notes")], write_budget=4000))
    conn = queue.db.conn()
    raw = f"mm: the token is {SECRET} \u202e!"
    conn.execute("UPDATE candidates SET speaker = '', flags = '[]', flagged = 0, body = ?, summary = ?, norm = ?,"
                 " key = ? WHERE id = ?", (raw, raw, raw, f"n:{raw}", cid))
    listed = queue.get(cid)  # shown through the screen before it is screened
    assert listed is not None and SECRET not in str(listed) and "\\u{202E}" in listed["body"]
    assert SECRET in _dump(tmp_path)
    assert queue.screen_older() == 1 and queue.screen_older() == 0
    assert SECRET not in _dump(tmp_path) and "\u202e" not in _dump(tmp_path)
    after = queue.get(cid)
    assert after is not None and after["speaker"] == "person" and after["redacted"]
    assert {f["kind"] for f in after["flags"]} == {"secret", "hidden text"}


def test_a_schema_5_database_gains_the_doors_columns_and_its_rows_are_screened(tmp_path: Path) -> None:
    (db := StateDB(tmp_path)).open()
    queue = ReviewQueue(db, lambda: "2026-11-30T00:00:00.000Z")
    queue.add(candidates_from([_said("human", "mm: deploy notes"), _said("assistant", "mm: the cache is in /v", 1)],
                              write_budget=4000))
    conn = db.conn()
    raw = f"mm: the token is {SECRET}"
    conn.execute("UPDATE candidates SET body = ?, summary = ?, norm = ?, key = ? WHERE id = 1",
                 (raw, raw, raw, f"n:{raw}"))
    for index in ("candidates_ranked_flagged", "candidates_ranked_flagged_all"):
        conn.execute(f"DROP INDEX {index}")
    for column in ("speaker", "flags", "flagged", "redacted", "diff"):  # the table as schema 5 (issue 30) made it
        conn.execute(f"ALTER TABLE candidates DROP COLUMN {column}")
    conn.execute("UPDATE candidates SET pinned = 1")
    conn.execute("PRAGMA user_version = 5")
    db.close()
    (db := StateDB(tmp_path)).open()
    conn = db.conn()
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 6
    assert [tuple(r) for r in conn.execute("SELECT id, status, speaker, draft FROM candidates ORDER BY id")] == [
        (1, "pending", "", 0), (2, "pending", "", 0)]  # every row kept, with issue 30's columns; none screened yet
    queue = ReviewQueue(db, lambda: "2026-11-30T00:00:00.000Z")
    assert queue.screen_older() == 2 and SECRET not in _dump(tmp_path)
    person, agent = queue.get(1), queue.get(2)
    assert person is not None and (person["speaker"], person["pinned"], person["redacted"]) == ("person", True, True)
    assert agent is not None and (agent["speaker"], agent["pinned"], agent["visible"]) == ("agent", False, True)
    assert {f["kind"] for f in person["flags"]} == {"secret"} and agent["flags"] == []
