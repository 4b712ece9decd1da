"""The review queue over RPC: list, get, accept (through memory.write, budgets hold), reject for good.

Runs the real daemon on a temp copy of ``../shared/sessions`` (skipped visibly without it).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.test_ingest_helpers import (
    PAYMENTS,
    backfilled,
    call,
    candidates,
    copy_samples,
    error_code,
    user_message,
    wait_until,
)

PENDING, VISIBLE = 20, 20
"""Candidates ../shared/sessions yields (all pending), and how many of them are visible (issue 13; issue 30: every
mm v1 §9 marker line is, and these logs are made of them)."""


def test_queue_list_pages_filters_and_checks_its_params(start_daemon, tmp_path: Path) -> None:
    copy_samples(tmp_path / "sessions")
    daemon = start_daemon()
    backfilled(daemon)
    everything = call(daemon, "queue.list", {"all": True})["candidates"]
    visible = [c for c in everything if c["visible"]]
    assert len(everything) == PENDING and len(visible) == VISIBLE  # issue 13: 30 before, mostly noise
    page = call(daemon, "queue.list", {"limit": 7, "offset": 7})
    assert (page["total"], page["pending"], page["offset"], page["limit"]) == (VISIBLE, PENDING, 7, 7)
    assert page["candidates"] == visible[7:14]  # highest score first, then oldest
    scores = [c["score"] for c in everything]
    assert scores == sorted(scores, reverse=True)
    assert call(daemon, "queue.list")["total"] == VISIBLE  # pending and visible by default
    assert call(daemon, "queue.list", {"status": "rejected"}) == {
        "candidates": [], "total": 0, "pending": PENDING, "offset": 0, "limit": 100, "expireDays": 30,
        "leftOut": {"hidden": PENDING - VISIBLE, "expired": 0, "heldBack": 0}}
    assert call(daemon, "queue.get", {"id": "3"}) == call(daemon, "queue.get", {"id": 3})
    assert error_code(daemon, "queue.list", {"status": "done"}) == "E_INVALID"
    assert error_code(daemon, "queue.list", {"limit": 0}) == "E_INVALID"
    assert error_code(daemon, "queue.get", {"id": "x"}) == error_code(daemon, "queue.get", {"id": "²"}) == "E_INVALID"
    assert error_code(daemon, "queue.get", {"id": 999}) == "E_NOT_FOUND"
    assert error_code(daemon, "queue.accept", {"project": "user", "id": 999}) == "E_NOT_FOUND"


def test_accept_writes_the_note_through_memory_write_with_overrides(start_daemon, tmp_path: Path) -> None:
    copy_samples(tmp_path / "sessions")
    daemon = start_daemon()
    backfilled(daemon)
    first = call(daemon, "queue.get", {"id": 1})
    out = call(daemon, "queue.accept", {"project": "user", "id": 1, "topic": "state-bucket-region",
                                        "tags": ["terraform", "aws"]})
    assert out["ok"] and out["write"]["ok"] and out["write"]["action"] == "created"
    assert out["candidate"]["status"] == "accepted" and out["candidate"]["decidedAt"].endswith("Z")
    assert out["candidate"]["written"] == {"topic": "state-bucket-region", "revision": out["write"]["revision"]}
    note = call(daemon, "memory.read", {"topic": "state-bucket-region"})
    assert note["body"] == first["body"] and note["summary"] == first["summary"]
    assert note["tags"] == ["terraform", "aws"]
    # summary and content may be overridden too; an accepted candidate cannot be decided again
    out = call(daemon, "queue.accept", {"project": "user", "id": 2, "topic": "rds-replacement",
                                        "summary": "why RDS was replaced",
                                        "content": "Engine version drift forces replacement."})
    assert out["ok"] and call(daemon, "memory.read", {"topic": "rds-replacement"})["summary"] == "why RDS was replaced"
    assert error_code(daemon, "queue.accept", {"project": "user", "id": 1}) == "E_DECIDED"
    assert error_code(daemon, "queue.reject", {"id": 1}) == "E_DECIDED"
    st = call(daemon, "daemon.status")
    assert st["queue"].pop("shown") == call(daemon, "queue.list", {"limit": 1})["total"]  # the default view's
    assert st["queue"] == {"pending": PENDING - 2, "accepted": 2, "rejected": 0, "expired": 0, "total": PENDING}
    assert [c["id"] for c in candidates(daemon, "accepted")] == [1, 2]


def test_a_budget_failure_leaves_the_candidate_pending_with_the_usage(start_daemon, tmp_path: Path) -> None:
    copy_samples(tmp_path / "sessions")
    daemon = start_daemon("--default-write-budget", "60")
    backfilled(daemon)
    # the digest cut bodies to the 60-code-point budget; an edited content over it is refused as a result
    over = [c for c in candidates(daemon) if c["overBudget"]]
    assert over and all(c["chars"] <= 60 and c["body"].endswith("…") for c in over)
    out = call(daemon, "queue.accept", {"project": "user", "id": over[0]["id"], "topic": "too-long",
                                        "content": "x" * 61})
    assert out["ok"] is False and out["write"]["code"] == "E_WRITE_BUDGET_EXCEEDED"
    assert out["write"]["usage"]["overflow"] == 1 and out["candidate"]["status"] == "pending"
    assert call(daemon, "queue.get", {"id": over[0]["id"]})["status"] == "pending"
    assert call(daemon, "memory.read", {"topic": "too-long"}) is None
    assert call(daemon, "queue.accept", {"project": "user", "id": over[0]["id"], "topic": "short-enough"})["ok"]
    # an ifRevision that is not current is a conflict, and the candidate stays pending
    assert error_code(daemon, "queue.accept",
                      {"project": "user", "id": 3, "topic": "x", "ifRevision": 1}) == "E_CONFLICT"
    assert call(daemon, "queue.get", {"id": 3})["status"] == "pending"


def test_a_rejected_candidate_never_comes_back(start_daemon, tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    daemon = start_daemon()
    backfilled(daemon)
    out = call(daemon, "queue.reject", {"id": 14, "reason": "already in AGENTS.md"})
    assert out["ok"] and out["candidate"]["status"] == "rejected"
    assert out["candidate"]["reason"] == "already in AGENTS.md"
    assert call(daemon, "queue.reject", {"id": 14})["candidate"]["status"] == "rejected"  # idempotent
    seen_before = {c["id"]: c["seen"] for c in candidates(daemon, "all")}
    # the log is replaced (say, a migration rewrote it) and read again, the daemon restarts: still rejected
    log = sessions / PAYMENTS
    base = call(daemon, "daemon.status")["ingest"]["bytesRead"]
    copy = log.with_name("rewrite.bin")
    copy.write_bytes(log.read_bytes())
    os.replace(copy, log)
    wait_until(lambda: call(daemon, "daemon.status")["ingest"]["bytesRead"] >= base + log.stat().st_size,
               what="the replaced log read again")
    daemon.stop()
    daemon.start()
    backfilled(daemon)
    assert [c["id"] for c in candidates(daemon, "rejected")] == [14]
    assert call(daemon, "queue.list", {"all": True})["total"] == PENDING - 1 and len(candidates(daemon)) == PENDING
    # read again, nothing was seen twice: the same records are the same places
    assert {c["id"]: c["seen"] for c in candidates(daemon, "all")} == seen_before


def test_candidates_equal_to_an_existing_note_are_not_queued(start_daemon, tmp_path: Path) -> None:
    sessions = copy_samples(tmp_path / "sessions")
    daemon = start_daemon()
    backfilled(daemon)
    note = {"topic": "webhooks", "content": "Rotate the webhook secret  every 90 days."}
    assert call(daemon, "memory.write", note)["ok"]
    log = sessions / PAYMENTS
    with open(log, "ab") as f:
        f.write(user_message(83, "MEMO: Rotate the webhook secret every 90 days.\nMEMO: Keep webhook logs 30 days.",
                             "m-notes"))
    got = wait_until(lambda: (c := candidates(daemon)) and len(c) > PENDING and c, what="the appended message")
    assert [c["body"] for c in got[PENDING:]] == ["Keep webhook logs 30 days."]


def test_without_ingestion_the_queue_methods_say_so(start_daemon, tmp_path: Path) -> None:
    copy_samples(tmp_path / "sessions")
    daemon = start_daemon("--no-ingest")
    st = call(daemon, "daemon.status")
    assert st["queue"] is None and st["ingest"] is None
    assert error_code(daemon, "queue.list", {}) == "E_UNAVAILABLE"
    import sqlite3  # the database holds the journal only: no log was read, no candidate made

    db = sqlite3.connect(daemon.root / ".mmd" / "state.db")
    assert db.execute("SELECT COUNT(*) FROM candidates").fetchone() == (0,)
    assert db.execute("SELECT COUNT(*) FROM cursors").fetchone() == (0,)


def test_accept_never_overwrites_a_note_unless_asked(start_daemon, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A candidate whose topic already has a note is refused (E_EXISTS) until accepted with replace."""
    from tests.test_daemon_helpers import sync_call
    from tests.test_ingest_helpers import backfilled, call, candidates, user_message

    sessions = tmp_path / "sessions" / "--p--" / "s-1"
    sessions.mkdir(parents=True)
    header = (b'{"type":"session","version":4,"id":"s-1","createdAt":1790787873424,"isSeeded":false,'
              b'"delegationDepth":0}\n')
    prompt = user_message(1, "mm:deploy-region we ship from eu-west-1", "m1")
    (sessions / "session.v4.jsonl").write_bytes(header + prompt)
    daemon = start_daemon()
    backfilled(daemon)
    (cand,) = candidates(daemon)
    assert cand["topic"] == "deploy-region"
    assert call(daemon, "memory.write", {"topic": "deploy-region", "content": "hand-written, keep me"})["ok"]
    refused = sync_call(daemon.rpc, "queue.accept", {"project": "user", "id": cand["id"]})["error"]
    assert refused["data"] == {"code": "E_EXISTS", "topic": "deploy-region", "uri": "mm://local/deploy-region"}
    assert "into: 'deploy-region' to append to it" in refused["message"]  # the way that keeps the note's text
    assert call(daemon, "memory.read", {"topic": "deploy-region"})["body"] == "hand-written, keep me"
    assert call(daemon, "queue.get", {"id": cand["id"]})["status"] == "pending"
    elsewhere = call(daemon, "queue.accept", {"project": "user", "id": cand["id"], "topic": "deploy-region-eu"})
    assert elsewhere["ok"] and elsewhere["candidate"]["status"] == "accepted"
