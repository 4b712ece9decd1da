"""Review dates: parsing at write time, refusals, the stored entry line, and the due list (issue 14)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from mmd.core import Memory, MemoryOptions, MMError
from mmd.core.format import parse_index, with_review_after
from mmd.core.snapshot import parse_live_index
from mmd.inject.due import add_months, due_topics, parse_review_date, resolve_review_after

TODAY = date(2026, 1, 31)
NOW = datetime(2026, 1, 31, 23, 59, 0, tzinfo=UTC)


def make(root: Path) -> Memory:
    options = MemoryOptions.create(root=root, env={"DSH_HOME": str(root.parent / "home")})
    return Memory.ensure(options, now=lambda: NOW, fts5=False)


@pytest.mark.parametrize(("value", "expected"), [
    ("2027-03-01", date(2027, 3, 1)),
    ("  2027-03-01\t", date(2027, 3, 1)),
    ("2024-02-29", date(2024, 2, 29)),
    ("10d", date(2026, 2, 10)),
    ("0d", TODAY),
    ("2w", date(2026, 2, 14)),
    ("1m", date(2026, 2, 28)),  # Jan 31 + 1 month clamps to the month's last day
    ("3m", date(2026, 4, 30)),
    ("13m", date(2027, 2, 28)),
    ("1y", date(2027, 1, 31)),
])
def test_accepted_forms_resolve_against_today(value: str, expected: date) -> None:
    assert resolve_review_after(value, TODAY) == expected


@pytest.mark.parametrize("value", [
    "when we switch machines", "等换机器时", "3个月后", "soon", "", "3", "m3", "3 m", "3M", "3mo", "-2d", "1.5w",
    "2027-3-1", "2027/03/01", "2027-02-30", "2027-13-01", "27-03-01", "2027-03-01T00:00:00Z", "99999y",
])
def test_prose_and_malformed_values_are_refused_clearly(value: str) -> None:
    with pytest.raises(MMError) as caught:
        resolve_review_after(value, TODAY)
    assert caught.value.code == "E_INVALID"
    assert repr(value) in caught.value.message
    assert "YYYY-MM-DD" in caught.value.message


def test_non_text_is_refused() -> None:
    for value in (None, 3, date(2027, 1, 1)):
        with pytest.raises(MMError, match="must be text"):
            resolve_review_after(value, TODAY)


def test_stored_dates_are_strict() -> None:
    assert parse_review_date("2027-03-01") == date(2027, 3, 1)
    for bad in ("3m", "2027-02-29", "next year"):
        with pytest.raises(MMError):
            parse_review_date(bad)


def test_add_months_clamps_and_refuses_overflow() -> None:
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert add_months(date(2026, 11, 15), 2) == date(2027, 1, 15)
    with pytest.raises(OverflowError):
        add_months(date(9999, 12, 1), 1)


def test_with_review_after_replaces_only_its_own_line() -> None:
    body = "prose line\n- **owner:** ana\n- **review-after:** 2020-01-01"
    assert with_review_after(body, "2027-03-01") == "- **review-after:** 2027-03-01\nprose line\n- **owner:** ana"
    assert with_review_after(body, "") == "prose line\n- **owner:** ana"
    with pytest.raises(MMError):
        with_review_after("", "2027-03-01\n## evil")


def test_a_write_stores_the_resolved_date_as_an_entry_line(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    assert memory.write("deploy", "Deploy to eu-west-1.", summary="where we deploy", review_after="3m")["ok"]
    text = (root / "MEMORY.md").read_text()
    assert "- **review-after:** 2026-04-30\n" in text
    memory.reload()
    note = memory.read_topic("deploy")
    assert note is not None and note.review_after == "2026-04-30" and note.entry.review_after == "2026-04-30"
    # the note JSON keeps the reference's shape: the line rides in entryBody
    assert note.to_json()["entryBody"] == "- **review-after:** 2026-04-30"
    assert "reviewAfter" not in note.to_json()


def test_the_date_survives_writes_of_this_and_other_topics_and_a_new_date_replaces_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    memory.write("deploy", "one", review_after="2027-03-01")
    memory.write("other", "two")
    memory.write("deploy", "one, rewritten", summary="new summary")
    _, entries = parse_live_index(root, "local")
    assert {e.topic: e.review_after for e in entries} == {"deploy": "2027-03-01", "other": None}
    memory.write("deploy", "again", review_after="10d")
    memory.write("deploy", "again")
    _, entries = parse_live_index(root, "local")
    assert entries[0].review_after == "2026-02-10"
    assert (root / "MEMORY.md").read_text().count("review-after") == 1
    memory.write("deploy", "cleared", review_after="")
    _, entries = parse_live_index(root, "local")
    assert entries[0].review_after is None and "review-after" not in (root / "MEMORY.md").read_text()


def test_a_prose_review_date_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    memory.write("deploy", "one")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(MMError) as caught:
        memory.write("deploy", "two", review_after="when we switch machines")
    assert caught.value.code == "E_INVALID"
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    assert memory.pending_writes == 1


def test_hand_written_unknown_lines_next_to_the_date_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    memory.write("deploy", "one", review_after="2027-03-01")
    index = root / "MEMORY.md"
    index.write_text(index.read_text().replace("- **review-after:** 2027-03-01",
                                               "- **review-after:** 2027-03-01\n- **owner:** ana\nfree prose"))
    memory.write("deploy", "two", review_after="2028-01-01")
    entry = parse_index(index.read_text()).entries[0]
    assert entry.entry_body == "- **review-after:** 2028-01-01\n- **owner:** ana\nfree prose"


def test_due_lists_topics_due_now_or_within_the_window_most_overdue_first(tmp_path: Path) -> None:
    root = tmp_path / "root"
    memory = make(root)
    memory.write("overdue", "x", review_after="2026-01-01")
    memory.write("today", "x", review_after="0d")
    memory.write("soon", "x", review_after="5d")
    memory.write("later", "x", review_after="1y")
    memory.write("none", "x")
    index = root / "MEMORY.md"
    index.write_text(index.read_text().replace("## none\n", "## none\n- **review-after:** when it breaks\n"))
    _, entries = parse_live_index(root, "local")
    report = due_topics(entries, TODAY)
    assert [(d.topic, d.days_left) for d in report.due] == [("overdue", -30), ("today", 0)]
    assert report.invalid == (("none", "when it breaks"),)
    assert [d.topic for d in due_topics(entries, TODAY, within_days=5).due] == ["overdue", "today", "soon"]
    assert report.to_json()["due"][0] == {"topic": "overdue", "reviewAfter": "2026-01-01", "daysLeft": -30}
    assert report.to_json()["invalid"] == [{"topic": "none", "value": "when it breaks"}]
    for bad in (-1, True, 1.5):
        with pytest.raises(MMError):
            due_topics(entries, TODAY, within_days=bad)  # type: ignore[arg-type]
