"""Issue 13 on ``../shared/sessions-other`` (synthetic Claude Code and Codex logs with ``labels.json``; skipped
visibly without it): the daemon's candidate pipeline (:class:`mmd.daemon.ingest.candidacy.Candidacy`) and its
review queue on a real SQLite state.db, fed the logs in the order they were written.

- the two standing rules repeated across sessions and agents are one candidate each, ``seen`` = 2, two evidence
  entries; a compaction or a resumed session's replay restating a memory adds no candidate (each labelled memory
  is matched by at most one candidate);
- every labelled memory a visible candidate, no visible noise item: how many pass depends on the rules and scores
  tuned in ``mmd/candidates/{signals,score}.py`` (issue 13's quality work), so that test says which do not yet.

Matching (a memory's quote to a candidate): the normalized quote inside the candidate's body or the other way
round, or a sentence of the body (20+ characters) inside the quote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mmd.candidates.identity import normalized
from mmd.daemon.ingest.candidacy import Candidacy
from mmd.daemon.queue import ReviewQueue
from mmd.daemon.statedb import StateDB
from mmd.sources.base import Source, Utterance
from mmd.sources.claude_code import ClaudeCodeSource
from mmd.sources.codex import CodexSource
from tests.conftest import shared_path

IN_ORDER = (  # as LABELS.md dates them
    "codex/sessions/2025/10/28/rollout-2025-10-28T14-42-10-019a298d-7fd0-7f4b-bca9-349edcf4bb99.jsonl",
    "claude/projects/-home-mara-code-logslice/3f8a2d17-9c4e-4b6a-8e05-1a7d9c2b5f60.jsonl",
    "claude/projects/-home-mara-code-logslice/b92e6c04-5d1a-4e8f-a3b7-6c0f4d9e2a18.jsonl",
    "claude/projects/-home-mara-code-teashop-django/7c1e5a92-3b4d-4f0e-9a61-2d8f0b6c4e13.jsonl",
    "codex/sessions/2026/02/17/rollout-2026-02-17T07-50-05-019c68dc-783e-7226-b63c-5ab791b7584a.jsonl",
)
REPEATED = (("CA-1", "CX2-1"), ("CB1-1", "CX1-1"))
"""The standing rules said again in another session, by another agent, in other words (LABELS.md)."""


def read_all(source: Source, path: Path) -> list[Utterance]:
    out: list[Utterance] = []
    cursor: dict[str, Any] | None = None
    while True:
        s = source.read(str(path), cursor, max_bytes=1 << 25, max_chars=1_000_000)
        out += s.utterances
        cursor = s.cursor
        if not s.more:
            return out


def matches(quote: str, body: str) -> bool:
    q, b = normalized(quote), normalized(body)
    if not q or not b:
        return False
    if q in b or b in q:
        return True
    return any(len(p) >= 20 and p in q for p in (normalized(s) for s in re.split(r"(?<=[.!?。！？；;])\s*", body)))


@pytest.fixture(scope="module")
def queued(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(labels, every candidate)`` after the five logs went through the pipeline into the queue."""
    home = shared_path("sessions-other")
    labels = json.loads((home / "labels.json").read_text(encoding="utf-8"))
    db = StateDB(tmp_path_factory.mktemp("root"))
    db.open()
    queue = ReviewQueue(db, lambda: "2026-11-30T00:00:00.000Z")
    pipeline = Candidacy(lambda: None, lambda: None)
    for rel in IN_ORDER:
        source: Source = ClaudeCodeSource() if rel.startswith("claude/") else CodexSource()
        queue.add(pipeline.run(read_all(source, home / rel), write_budget=4000))
    found, _ = queue.list("all", limit=1000, hidden=True)
    db.close()
    return labels, list(found)


def memories(labels: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for f in labels["files"] for m in f["memories"]}


def test_rules_repeated_across_sessions_are_one_candidate_each_seen_twice(queued) -> None:  # type: ignore[no-untyped-def]
    labels, got = queued
    by_id = memories(labels)
    for first, second in REPEATED:
        hits = [c for c in got if any(matches(by_id[m]["quote"], e["quote"]) or matches(by_id[m]["quote"], c["body"])
                                      for m in (first, second) for e in c["evidence"])]
        assert len(hits) == 1, (first, second, [c["body"] for c in hits])
        (c,) = hits
        assert c["seen"] == 2 and len(c["evidence"]) == 2 and c["visible"]
        assert len({e["sessionId"] for e in c["evidence"]}) == 2 and len({e["agent"] for e in c["evidence"]}) == 2
    for m in by_id.values():  # restatements (compactions, the resumed session's replay) counted once
        assert len([c for c in got if matches(m["quote"], c["body"])]) <= 1, m["id"]


@pytest.mark.xfail(strict=False, reason="visibility of CA-4, CA-7, CX2-4 and the firing on CB1-4, CX1-2, CX1-3, "
                   "CX2-2, and the visible CB1-N5, depend on the scores and rules of "
                   "mmd/candidates/{signals,score}.py, tuned in another branch of issue 13")
def test_every_labelled_memory_is_visible_and_no_visible_noise_is(queued) -> None:  # type: ignore[no-untyped-def]
    labels, got = queued
    visible = [c for c in got if c["visible"]]
    missing = [m["id"] for m in memories(labels).values()
               if not any(matches(m["quote"], c["body"]) or any(matches(m["quote"], e["quote"]) for e in c["evidence"])
                          for c in visible)]
    noise = [n["id"] for f in labels["files"] for n in f["noise"] if n["visible_to_correct_reader"]
             and len(normalized(n["quote"]).split()) >= 2 and any(matches(n["quote"], c["body"]) for c in visible)]
    print(f"sessions-other: {len(got)} candidates, {len(visible)} visible; memories not visible: {missing}; "
          f"visible noise: {noise}")
    assert missing == [] and noise == []
