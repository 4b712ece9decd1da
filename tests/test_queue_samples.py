"""Issue 13 on the shared DSH samples (``../shared/sessions``, skipped visibly without it), in a real daemon.

Both lines the user marked with ``mm:`` are visible candidates, no bullet of a transient compaction section
(primary request, files and code, pending jobs, current work, next step, an "(none)") is a candidate, the
compaction bullets that restate a marked statement are merged into it (the four duplicates a reviewer saw before
issue 13 are one candidate each), and what a reviewer keeps
(``tests/fixtures/ingest/samples_reviewed.json``, labelled by hand) makes a precision of at least 0.7 among the
visible candidates the rules chose. Every mm v1 §9 marker line is visible whatever a reviewer thinks of it (issue 30:
the spec makes each a candidate), so the agent's plain ``Summary:`` / ``Conclusion:`` / ``总结：`` lines are counted
apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.test_ingest_helpers import FIXTURES, backfilled, candidates, copy_samples

REVIEWED: dict[str, Any] = json.loads((FIXTURES / "samples_reviewed.json").read_text(encoding="utf-8"))
PRECISION_FLOOR = 0.7


def label_of(candidate: dict[str, Any]) -> dict[str, Any]:
    """The reviewer's label of a candidate (the one whose body text it holds); AssertionError when unlabelled."""
    found = [label for label in REVIEWED["candidates"] if label["body"] in candidate["body"]]
    assert len(found) == 1, f"candidate {candidate['body']!r} has {len(found)} labels"
    return found[0]


def test_the_samples_queue_is_worth_reading(start_daemon, tmp_path: Path) -> None:
    copy_samples(tmp_path / "sessions")
    daemon = start_daemon()
    backfilled(daemon)
    got = candidates(daemon, "all")
    labels = [label_of(c) for c in got]
    assert len(got) == len(REVIEWED["candidates"])  # every label matched once: nothing unreviewed
    assert all(c["visible"] for c in got if c["rule"].startswith("mm."))  # every marker line
    visible = [(c, label) for c, label in zip(got, labels, strict=True) if c["visible"] and c["rule"] != "mm.summary"]
    kept = sum(1 for _, label in visible if label["keep"])
    precision = kept / len(visible)
    print(f"samples: {len(got)} candidates, {len(visible)} visible but summary markers, {kept} kept: precision "
          f"{precision:.2f} (floor {PRECISION_FLOOR})")
    assert precision >= PRECISION_FLOOR
    bodies = {c["body"]: c for c in got}
    for marked in REVIEWED["markedByTheUser"]:
        assert bodies[marked]["visible"] and bodies[marked]["pinned"], marked
    for transient in REVIEWED["transient"]:
        assert not [c["id"] for c in got if transient in c["body"]
                    or any(transient in e["quote"] for e in c["evidence"])], transient
    for phrase in REVIEWED["duplicates"]["phrases"]:  # the four duplicates: one candidate each
        assert len([c for c in got if phrase.casefold() in c["body"].casefold()]) == 1, phrase
    for restated in REVIEWED["restatedInSummaries"]:
        c = bodies[restated]
        assert c["seen"] == 2 and [e["who"] for e in c["evidence"]] == ["human", "summary"], c
    assert all(len(c["summary"]) <= 120 and len(c["body"]) <= 500 for c in got)
