"""The merge by topic (mmd.daemon.git.merge) and the merge driver git runs itself (mmd.daemon.git.driver).

Property guarded: a merged MEMORY.md is byte for byte what a write of the merged entries produces;
a topic changed on both sides keeps the newer version in the files and returns the other; a delete
against an edit keeps the edit; nothing is dropped and no conflict marker is ever written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mmd.core import Memory, MemoryOptions
from mmd.daemon.git import drain_conflicts, merge_index
from tests.test_git_helpers import GitRoot, git, isolate_git

T1, T2, T3, T4 = (f"2026-01-0{d}T10:00:00.000Z" for d in (1, 2, 3, 4))


def index_after(path: Path, writes: list[tuple[str, str, str]], **options: object) -> str:
    """MEMORY.md of a fresh root after ``(topic, body, updated)`` writes (summary = 'about <topic>')."""
    memory = Memory.ensure(MemoryOptions.create(root=path, **options))  # type: ignore[arg-type]
    for topic, body, updated in writes:
        assert memory.write(topic, body, updated=updated, summary=f"about {topic}", tags="t")["ok"]
    return (path / "MEMORY.md").read_text(encoding="utf-8")


def test_merged_index_is_byte_identical_to_a_write_of_the_merged_entries(tmp_path: Path) -> None:
    shared = [("alpha", "first alpha", T1), ("gamma", "gamma", T1)]
    base = index_after(tmp_path / "base", shared, index_lines=150)
    ours = index_after(tmp_path / "ours", [*shared, ("beta", "ours adds beta", T2)], index_lines=150)
    theirs = index_after(tmp_path / "theirs", [*shared, ("alpha", "theirs edits alpha", T3),
                                                 ("delta", "theirs adds delta", T2)], index_lines=150)
    expected = index_after(tmp_path / "expected", [("alpha", "theirs edits alpha", T3), ("gamma", "gamma", T1),
                                                   ("beta", "ours adds beta", T2),
                                                   ("delta", "theirs adds delta", T2)], index_lines=150)
    merged = merge_index(base, ours, theirs)
    assert merged.text.encode() == expected.encode()
    assert merged.conflicts == ()
    assert merged.picks == {"alpha": "theirs", "beta": "ours", "delta": "theirs", "gamma": "ours"}
    assert "150 lines" in merged.text  # the caps of the header travel with the root


def test_a_topic_changed_on_both_sides_keeps_the_newer_and_returns_the_other(tmp_path: Path) -> None:
    base = index_after(tmp_path / "b", [("deploy", "eu", T1)])
    ours = index_after(tmp_path / "o", [("deploy", "eu", T1), ("deploy", "us-east-1 (ours)", T3)])
    theirs = index_after(tmp_path / "t", [("deploy", "eu", T1), ("deploy", "ap-south (theirs)", T2)])
    merged = merge_index(base, ours, theirs)
    (kept,) = merged.entries
    assert kept.updated == T3 and kept.body_chars == len("us-east-1 (ours)")
    (conflict,) = merged.conflicts
    assert (conflict.topic, conflict.kind, conflict.kept, conflict.other) == ("deploy", "both-changed", "ours",
                                                                               "theirs")
    assert conflict.other_version.entry is not None and conflict.other_version.entry.updated == T2
    # Both machines merging reach the same files: the rule does not depend on which side merges.
    swapped = merge_index(base, theirs, ours)
    assert swapped.text == merged.text and swapped.conflicts[0].kept == "theirs"


def test_an_add_on_both_sides_with_the_same_time_picks_one_version_on_either_machine(tmp_path: Path) -> None:
    ours = index_after(tmp_path / "o", [("same", "from ours", T2)])
    theirs = index_after(tmp_path / "t", [("same", "from theirs, longer", T2)])
    one, other = merge_index(None, ours, theirs), merge_index(None, theirs, ours)
    assert one.text == other.text
    assert [c.kind for c in one.conflicts] == ["both-changed"]


def test_a_delete_against_an_edit_keeps_the_edit_and_returns_the_delete(tmp_path: Path) -> None:
    base = index_after(tmp_path / "b", [("keep", "k", T1), ("topic", "old", T1)])
    deleted = index_after(tmp_path / "d", [("keep", "k", T1)])
    edited = index_after(tmp_path / "e", [("keep", "k", T1), ("topic", "old", T1), ("topic", "new text", T2)])
    for ours, theirs, kept_side in ((deleted, edited, "theirs"), (edited, deleted, "ours")):
        merged = merge_index(base, ours, theirs)
        assert [e.topic for e in merged.entries] == ["keep", "topic"]
        assert merged.entries[1].updated == T2
        (conflict,) = merged.conflicts
        assert (conflict.kind, conflict.kept) == ("delete-vs-edit", kept_side)
        assert not conflict.other_version.present


def test_a_delete_on_one_side_only_is_merged_as_a_delete(tmp_path: Path) -> None:
    base = index_after(tmp_path / "b", [("gone", "g", T1), ("stay", "s", T1)])
    ours = index_after(tmp_path / "o", [("stay", "s", T1)])
    merged = merge_index(base, ours, base)
    assert [e.topic for e in merged.entries] == ["stay"] and merged.conflicts == ()


def test_a_merged_index_over_its_caps_is_returned_whole_and_reported(tmp_path: Path) -> None:
    # 12 header lines + 7 lines an entry: one entry fits 20 lines, two do not.
    base = index_after(tmp_path / "b", [], index_lines=20)
    ours = index_after(tmp_path / "o", [("one", "1", T1)], index_lines=20)
    theirs = index_after(tmp_path / "t", [("two", "2", T1)], index_lines=20)
    merged = merge_index(base, ours, theirs)
    assert merged.over_budget and merged.usage["lines"] > 20
    assert [e.topic for e in merged.entries] == ["one", "two"]


def test_a_side_that_is_not_mm_v1_is_refused_with_a_parse_error(tmp_path: Path) -> None:
    ours = index_after(tmp_path / "o", [("one", "1", T1)])
    with pytest.raises(Exception) as caught:
        merge_index(None, ours, "# MEMORY.md\n\n## Not A Slug!\n")
    assert getattr(caught.value, "code", None) == "E_PARSE"


@pytest.mark.parametrize("theirs_newer", [False, True])
def test_a_plain_git_merge_runs_the_driver_and_writes_no_conflict_markers(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          theirs_newer: bool) -> None:
    isolate_git(monkeypatch, tmp_path)
    root = GitRoot(tmp_path / "root")
    root.write("shared", "base text", updated=T1)
    git(root.path, "checkout", "-q", "-b", "other")
    root.write("shared", "the other branch's text", updated=T4 if theirs_newer else T2)
    root.write("theirs-only", "added on the other branch", updated=T2)
    git(root.path, "checkout", "-q", "main")
    root.memory.reload()
    root.write("shared", "main's text", updated=T3)
    root.write("ours-only", "added on main", updated=T3)
    git(root.path, "merge", "-q", "--no-edit", "other")
    files = root.files()
    assert not any(b"<<<<<<<" in data or b">>>>>>>" in data for data in files.values())
    kept, other = ("the other branch's text", "main's text") if theirs_newer else ("main's text",
                                                                                   "the other branch's text")
    assert root.bodies() == {"shared": kept, "ours-only": "added on main", "theirs-only": "added on the other branch"}
    memory = Memory.open(MemoryOptions.create(root=root.path))
    note = memory.read_topic("shared")
    assert note is not None and note.entry.body_chars == len(kept)  # index entry and note agree
    assert (root.path / ".mmd" / "git-conflicts").stat().st_mode & 0o777 == 0o700  # was 0755 under git's umask
    (record,) = drain_conflicts(root.path)
    assert (record["topic"], record["kind"], record["kept"]) == ("shared", "both-changed",
                                                                 "theirs" if theirs_newer else "ours")
    assert record["otherBody"] == other and sorted(record["paths"]) == ["MEMORY.md", "memories/shared.md"]
    assert drain_conflicts(root.path) == []  # drained once
    assert git(root.path, "status", "--porcelain") == ""


def test_the_same_note_written_on_both_ends_at_different_times_is_no_conflict(tmp_path: Path) -> None:
    base = index_after(tmp_path / "b", [("deploy", "eu", T1)])
    ours = index_after(tmp_path / "o", [("deploy", "us", T2)])
    theirs = index_after(tmp_path / "t", [("deploy", "us", T3)])
    merged = merge_index(base, ours, theirs, notes=({"deploy": "eu"}, {"deploy": "us"}, {"deploy": "us"}))
    assert merged.conflicts == () and merged.entries[0].updated == T3
    different = merge_index(base, ours, theirs, notes=({"deploy": "eu"}, {"deploy": "us"}, {"deploy": "US"}))
    assert [c.kind for c in different.conflicts] == ["both-changed"]
