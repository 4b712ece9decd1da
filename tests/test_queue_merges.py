"""The queue merges only real restatements: a replay adds no sighting, a shared context makes no two statements one.

In-process on a real SQLite file (``<root>/.mmd/state.db``). Issue 13 "Dedupe and repetition".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mmd.candidates import NewCandidate
from mmd.candidates.model import Evidence
from mmd.daemon.queue import ReviewQueue
from mmd.daemon.statedb import StateDB

CONTEXT = ("The release pipeline builds wheels for linux macos windows, uploads them to the staging index, "
           "signs every artifact with sigstore and then publishes the changelog to the docs site.")


def _cand(summary: str, body: str, *, session: str, line: int, at: str | None, quote: str | None = None,
          project: str = "/p") -> NewCandidate:
    ev = Evidence("claude-code", session, project, f"/logs/{session}.jsonl", {"file": f"/logs/{session}.jsonl",
                  "line": line}, at, "human", quote or body)
    return NewCandidate("rule", "t", summary, body, len(body), False, session, ev.file, None, None, "user",
                        "human-standing-rule", 0.9, True, (ev,))


@pytest.fixture
def queue(tmp_path: Path) -> ReviewQueue:
    db = StateDB(tmp_path)
    db.open()
    return ReviewQueue(db, lambda: "2026-11-30T00:00:00.000Z")


def test_a_replay_of_one_record_in_its_own_session_is_no_new_sighting(queue: ReviewQueue) -> None:
    said = "do not create any pr or issue without my explicit approval."
    queue.add([_cand(said, said, session="s1", line=3, at="2026-11-01T10:00:00Z")])
    for line in (40, 80, 120, 160):  # the resumed session replays the record at new lines, with its old time
        queue.add([_cand(said, said, session="s1", line=line, at="2026-11-01T10:00:00Z")])
    (c,) = queue.list("all", limit=10, offset=0)[0]
    assert c["seen"] == 1 and len(c["evidence"]) == 1 and c["score"] == 0.9
    queue.add([_cand(said, said, session="s1", line=200, at="2026-11-01T11:30:00Z")])  # said again, later
    (c,) = queue.list("all", limit=10, offset=0)[0]
    assert c["seen"] == 2


def test_statements_sharing_only_their_context_stay_two_candidates(queue: ReviewQueue) -> None:
    first = "Use the staging index for every dry run."
    second = "Never bump the major version by hand."
    queue.add([_cand(first, f"{first} {CONTEXT}", session="s1", line=1, at="2026-11-01T10:00:00Z")])
    queue.add([_cand(second, f"{CONTEXT} {second}", session="s2", line=1, at="2026-11-02T10:00:00Z")])
    got = queue.list("all", limit=10, offset=0)[0]
    assert sorted(c["summary"] for c in got) == sorted([first, second]) and all(c["seen"] == 1 for c in got)


def test_a_statement_restated_with_other_context_still_merges(queue: ReviewQueue) -> None:
    said = "Never bump the major version by hand, the release bot owns it."
    queue.add([_cand(said, f"{said} {CONTEXT}", session="s1", line=1, at="2026-11-01T10:00:00Z")])
    queue.add([_cand(said, f"{said} Ask me first if unsure.", session="s2", line=5, at="2026-11-02T10:00:00Z")])
    (c,) = queue.list("all", limit=10, offset=0)[0]
    assert c["seen"] == 2 and len({e["sessionId"] for e in c["evidence"]}) == 2


def _said(text: str, *, who: str, line: int, at: str, folder: str) -> NewCandidate:
    file = f"{folder}/s1/session.jsonl"
    ev = Evidence("dsh", "s1", "/p", file, {"file": file, "line": line}, at, who, text)
    rule = "summary-critical" if who == "summary" else "human-standing-rule"
    return NewCandidate("rule", "t", text, text, len(text), False, "s1", file, None, None, "user", rule, 0.9, True,
                        (ev,))


@pytest.mark.parametrize("status", ["accepted", "rejected"])
def test_a_copied_log_queues_no_statement_merged_into_a_decided_candidate(queue: ReviewQueue, status: str) -> None:
    said = "The state bucket lives in eu-west-1, so never change the backend region of the terraform state."
    bullet = "State bucket is in eu-west-1; never change backend region."
    log = [("human", said, 3, "2026-11-01T10:00:00Z"), ("summary", bullet, 90, "2026-11-01T11:00:00Z")]
    for who, text, line, at in log:
        queue.add([_said(text, who=who, line=line, at=at, folder="/logs")])
    (c,) = queue.list("all", limit=10, offset=0)[0]
    assert c["seen"] == 2, c  # the session's summary restates the person's rule: one candidate
    assert queue.decide(c["id"], status) is not None
    for who, text, line, at in log:  # the same log copied to another folder, read again
        assert queue.add([_said(text, who=who, line=line, at=at, folder="/copy")]) == []
    assert [x["id"] for x in queue.list("all", limit=10, offset=0)[0]] == [c["id"]]
