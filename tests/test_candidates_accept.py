"""A candidate is a memory (issue 30): accepting rule drafts of one project with the defaults writes each
statement itself (trimmed of filler, with the list it introduces, never the paragraph around it) and grows a few
notes of a kind (rules, pitfalls, deploy …) instead of one topic each.

Real statements of one project (``tests/fixtures/real-candidates/medgemma.json``, quotes of the shared real
sessions), said across six DSH sessions, read by a real daemon; every candidate is accepted through
``queue.accept`` with no option, as ``mmctl queue accept ID`` does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mmd.candidates.topics import CATEGORY_SUMMARIES
from mmd.core.format import parse_index
from tests.test_ingest_helpers import backfilled, call, candidates, dsh_line

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "real-candidates" / "medgemma.json").read_text("utf-8"))
_TOPIC = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _write_sessions(folder: Path) -> None:
    for n, said in enumerate(FIXTURE["sessions"]):
        session = f"session-medgemma-{n}"
        log = folder / f"--Users-USER-Code-medgemma-hackathon--/{session}/session.v4.jsonl"
        log.parent.mkdir(parents=True)
        lines = [(json.dumps({"type": "session", "version": 4, "id": session, "createdAt": 1791383400000 + n,
                              "cwd": FIXTURE["project"], "isSeeded": False, "delegationDepth": 0}) + "\n").encode()]
        for seq, u in enumerate(said, start=1):
            if u["who"] == "human":
                lines.append(dsh_line(seq, "user/message", {"content": [{"type": "text", "text": u["text"]}],
                                                            "source": {"kind": "user"}, "role": "user",
                                                            "id": f"u-{n}-{seq}"}))
            else:
                lines.append(dsh_line(seq, "assistant/message", {"turn": 1, "step": seq, "message": {
                    "role": "assistant", "content": [{"type": "text", "text": u["text"]}],
                    "source": {"kind": "model", "provider": "p", "model": "m"}, "id": f"a-{n}-{seq}"}}))
        log.write_bytes(b"".join(lines))


def _statements() -> list[str]:
    return [u["statement"] for said in FIXTURE["sessions"] for u in said]


def test_each_visible_candidate_is_one_statement_under_a_topic_that_reads_as_a_name(start_daemon,  # type: ignore[no-untyped-def]
                                                                                     tmp_path: Path) -> None:
    _write_sessions(tmp_path / "sessions")
    daemon = start_daemon("--heartbeat-ms", "200")
    backfilled(daemon)
    visible = [c for c in candidates(daemon, "pending") if c["visible"]]
    assert sorted(c["body"] for c in visible) == sorted(_statements())  # the statement, never its paragraph
    assert all(_TOPIC.match(c["topic"]) and len(c["topic"].split("-")) <= 4 for c in visible)


def test_accepting_ten_with_the_defaults_adds_a_few_topics_and_writes_each_statement(start_daemon,  # type: ignore[no-untyped-def]
                                                                                      tmp_path: Path) -> None:
    _write_sessions(tmp_path / "sessions")
    daemon = start_daemon("--heartbeat-ms", "200")
    backfilled(daemon)
    ten: list[dict[str, Any]] = [c for c in candidates(daemon, "pending") if c["visible"]][:10]
    assert len(ten) == 10
    for c in ten:
        got = call(daemon, "queue.accept", {"id": c["id"]})
        assert got["ok"], got
    scopes = {c["scope"] for c in ten}
    assert len(scopes) == 1  # one project's sessions: one root (issue 27)
    root = daemon.root if scopes == {"user"} else daemon.root / "projects" / scopes.pop()
    notes = {p.stem: p.read_text(encoding="utf-8") for p in (root / "memories").glob("*.md")}
    assert 1 < len(notes) <= 4, sorted(notes)  # rules, pitfalls, deploy …: ten accepts grew a few notes
    for c in ten:
        note = notes[c["topic"]]
        assert c["body"] in note and c["body"] in _statements()
    # each note is its accepted statements, one after another, and nothing else of the sessions
    for topic, text in notes.items():
        bodies = [c["body"] for c in ten if c["topic"] == topic]
        assert all(text.count(b) == 1 for b in bodies)
        rest = text
        for b in bodies:
            rest = rest.replace(b, "")
        assert not [line for line in rest.splitlines() if line.strip() and not line.startswith(("#", ">", "<!--"))], \
            (topic, rest)
    index = (root / "MEMORY.md").read_text(encoding="utf-8")
    assert sorted(t for t in notes if f"({t}" in index or t in index) == sorted(notes)
    summaries = {e.topic: e.summary for e in parse_index(index).entries}
    kinds = [t for t in notes if t in CATEGORY_SUMMARIES]  # what the note holds, not its first statement
    assert kinds and all(summaries[t] == CATEGORY_SUMMARIES[t] for t in kinds), summaries
