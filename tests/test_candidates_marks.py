"""Nothing dropped silently (issue 29): a mark is found in every utterance of a session however long, and statements
that differ in a number, a version, a port, a path or a name are never merged into one candidate.

Real logs through the DSH source, the harvester and a real SQLite queue (``<root>/.mmd/state.db``).
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from mmd.candidates import NewCandidate, candidates_from
from mmd.candidates.identity import near_duplicate, shingles
from mmd.candidates.model import Evidence
from mmd.daemon.ingest import IngestHealth
from mmd.daemon.ingest.candidacy import CONTEXT_CHARS
from mmd.daemon.ingest.harvest import SLICE_CHARS, AddedBatch, Harvester, TrackedLog
from mmd.daemon.queue import ReviewQueue
from mmd.daemon.statedb import StateDB
from mmd.sources import SOURCES, Position, Utterance
from tests.test_ingest_helpers import user_message

FILLER = ("Looking at the scheduler output again, the worker pool drained its backlog after the restart and the "
          "latency graph for the last hour stays flat; nothing in this step needs a decision from anybody yet, "
          "I am only reading numbers back to you while the benchmark finishes its second pass over the corpus. ")


def _header(session: str) -> bytes:
    return (json.dumps({"type": "session", "version": 4, "id": session, "createdAt": 1700000000000,
                        "cwd": "/home/test/marks", "isSeeded": False, "delegationDepth": 0}) + "\n").encode()


def _harvester(tmp_path: Path) -> tuple[Harvester, list[AddedBatch]]:
    db = StateDB(tmp_path / "root")
    db.open()
    added: list[AddedBatch] = []
    return Harvester(ReviewQueue(db, lambda: "2026-12-01T00:00:00.000Z"), notes=lambda: None,
                     write_budget=lambda: 4000, health=IngestHealth("/s"), on_added=added.append,
                     stop=threading.Event()), added


def test_a_mark_at_the_first_line_of_a_900_kb_session_read_in_one_go_is_a_candidate(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "session.v4.jsonl"
    with path.open("wb") as log:
        log.write(_header("session-long"))
        log.write(user_message(1, "mm: the nightly export job writes to the archive bucket, never to prod.", "m-1"))
        seq = 2
        while log.tell() < 900_000:
            log.write(user_message(seq, f"{FILLER}(pass {seq})", f"m-{seq}"))
            seq += 1
    assert path.stat().st_size >= 900_000
    h, added = _harvester(tmp_path)
    with caplog.at_level(logging.INFO, logger="mmd.ingest"):
        assert h.read(TrackedLog(str(path), SOURCES["dsh"], None, None)) == path.stat().st_size
    assert len(added) == 1  # one slice: the whole session read in one go, beyond the rules' window
    assert SLICE_CHARS > seq * len(FILLER) > CONTEXT_CHARS
    got = h.queue.list("all", limit=1000, offset=0)[0]
    (mark,) = [c for c in got if "archive bucket" in c["body"]]
    assert mark["body"] == "the nightly export job writes to the archive bucket, never to prod."
    assert mark["visible"] and mark["pinned"] and mark["status"] == "pending"
    assert any("ingest.outside_window" in r.getMessage() and "marks=1" in r.getMessage() for r in caplog.records)


SERVICES = [f"mm: service number {n} in our main lab at the far east end of the old hall by the red door uses port "
            f"{8000 + 7 * n}" for n in range(1, 41)]


def test_forty_lines_differing_only_in_numbers_are_forty_candidates_and_one_rejection_hides_only_it(
        tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl"
    with path.open("wb") as log:
        log.write(_header("session-ports"))
        for n, line in enumerate(SERVICES, start=1):
            log.write(user_message(n, line, f"m-{n}"))
    h, _ = _harvester(tmp_path)
    h.read(TrackedLog(str(path), SOURCES["dsh"], None, None))
    got = h.queue.list("pending", limit=1000, offset=0)[0]
    assert sorted(c["body"] for c in got) == sorted(line[4:] for line in SERVICES)
    assert all(c["seen"] == 1 and c["visible"] for c in got)
    assert len({c["topic"] for c in got}) == 40
    port_8070 = next(c for c in got if c["body"].endswith("port 8070"))
    h.queue.decide(port_8070["id"], "rejected")
    # said again in another session, a word changed: the rejected one stays out, the others merge, none is hidden
    again = tmp_path / "again.v4.jsonl"
    with again.open("wb") as log:
        log.write(_header("session-ports-again"))
        for n, line in enumerate(SERVICES, start=1):
            log.write(user_message(n, line.replace("red door", "red doors"), f"a-{n}"))
    h.read(TrackedLog(str(again), SOURCES["dsh"], None, None))
    pending = h.queue.list("pending", limit=1000, offset=0)[0]
    assert len(pending) == 39 and all(c["visible"] and c["seen"] == 2 for c in pending)
    assert [c["status"] for c in h.queue.list("rejected", limit=10, offset=0)[0]] == ["rejected"]


@pytest.mark.parametrize(("one", "other"), [
    ("Service number 12 of the billing cluster listens on the internal load balancer port today",
     "Service number 13 of the billing cluster listens on the internal load balancer port today"),
    ("the staging cluster runs postgres version 15.4 behind the internal load balancer for every service",
     "the staging cluster runs postgres version 15.7 behind the internal load balancer for every service"),
    ("the billing worker of the staging cluster listens on port 8080 behind the internal load balancer",
     "the billing worker of the staging cluster listens on port 9090 behind the internal load balancer"),
    ("the deploy script of the staging cluster reads its settings from deploy/staging.toml before every run",
     "the deploy script of the staging cluster reads its settings from deploy/prod.toml before every run"),
    ("the staging cluster of the billing team keeps its invoices in Postgres behind the internal balancer",
     "the staging cluster of the billing team keeps its invoices in Cassandra behind the internal balancer"),
    ("run the staging cluster migrations with `make migrate-up` before the billing deploy every single time",
     "run the staging cluster migrations with `make migrate-down` before the billing deploy every single time"),
])
def test_statements_differing_in_a_number_version_port_path_or_name_are_never_near_duplicates(
        one: str, other: str) -> None:
    a, b = shingles(one), shingles(other)
    assert len(a & b) / len(a | b) >= 0.8  # similar enough that only what differs keeps them apart
    assert not near_duplicate(a, b)


def test_a_restatement_differing_in_plain_words_still_merges() -> None:
    said = "the billing worker of the staging cluster listens on port 8080 behind the internal load balancer"
    assert near_duplicate(shingles(said), shingles(said.replace("the internal", "our internal") + ", ok"))
    assert near_duplicate(shingles("Use Postgres for the billing service in every environment we run today"),
                          shingles("use postgres for the billing service in every environment we run today!"))


def test_a_session_never_merges_two_rules_that_differ_in_a_number() -> None:
    prompts = [Utterance("human", f"Always keep the staging pool at {n} workers per node during the release freeze.",
                         "test", "s", None, None, Position("/l", seq=n)) for n in (4, 6)]
    got = candidates_from(prompts, write_budget=4000)
    assert sorted(c.body for c in got) == sorted(u.text for u in prompts) and all(c.visible for c in got)


def _person(text: str, session: str) -> NewCandidate:
    ev = Evidence("dsh", session, "/home/test/marks", f"/logs/{session}.jsonl",
                  {"file": f"/logs/{session}.jsonl", "line": 1}, "2026-12-01T10:00:00Z", "human", text)
    return NewCandidate("fact", "t", text, text, len(text), False, session, ev.file, None, None, "user",
                        "human-notice", 0.9, True, (ev,))


def test_the_person_saying_it_in_other_words_merges_but_never_across_other_numbers(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "root")
    db.open()
    queue = ReviewQueue(db, lambda: "2026-12-01T00:00:00.000Z")
    queue.add([_person("fyi the billing export service listens on port 8003 inside the staging cluster", "s1")])
    queue.add([_person("btw in staging the billing export service is listening on port 8003 now", "s2")])
    queue.add([_person("btw in staging the billing export service is listening on port 8004 now", "s3")])
    got = queue.list("all", limit=10, offset=0)[0]
    assert sorted((c["seen"], c["body"][-8:]) for c in got) == [(1, "8004 now"), (2, " cluster")]
