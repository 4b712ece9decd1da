"""``mmd.core.versions`` through the core store: every write, merge and delete keeps its text, an outside edit is
kept before it is replaced, the history is bounded (never a topic's latest), private, and answers ``rN``/``vN``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mmd.core import Memory, MemoryOptions
from mmd.core.errors import ErrorCode, MMError
from mmd.core.store import MemoryStore
from mmd.core.versions import VersionLog

NOW = "2026-01-01T00:00:00.000Z"


class Numbers:
    """Revision numbers handed out one after another, as a daemon hands them."""

    def __init__(self) -> None:
        self.last = 0

    def __call__(self) -> int:
        self.last += 1
        return self.last


def _store(tmp_path: Path, versions: VersionLog | None = None) -> tuple[MemoryStore, Numbers]:
    options = MemoryOptions.create(root=tmp_path / "root")
    Memory.ensure(options)
    return MemoryStore(options, lambda: NOW, versions=versions), Numbers()


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".mmd" not in p.parts}


def test_each_write_merge_and_delete_is_a_version_named_by_its_revision(tmp_path: Path) -> None:
    store, number = _store(tmp_path)
    curated = "Curated deploy notes. " * 64  # 1,408 code points
    store.write("deploy", curated, summary="Deploy", tags="ops", budget=4000, number=number)
    store.write("deploy", "agent overwrote", number=number)
    store.write("vpn", "VPN first", number=number)
    store.merge(["vpn"], "deploy", number=number)
    store.delete("deploy", number=number)
    log = store.versions.log("deploy")
    assert [(v.revision, v.cause, v.chars) for v in log] == [
        (5, "delete", 0), (4, "merge", len("agent overwrote\n\nVPN first")), (2, "write", 15), (1, "write", 1408)]
    assert [v.revision for v in store.versions.log("vpn")] == [4, 3] and store.versions.log("vpn")[0].body is None
    first = store.versions.at("deploy", "r1")
    assert first is not None and first.body == curated and (first.summary, first.tags, first.write_budget) == (
        "Deploy", "ops", 4000)
    assert store.versions.at("deploy", "r3").body == "agent overwrote"  # as r3 left it: written at r2
    assert store.versions.at("deploy", "r5").body is None  # deleted then
    assert store.versions.at("deploy", f"v{first.id}").body == curated
    assert store.versions.at("nothing", "r5") is None
    commit = log[-1].to_commit()
    assert commit["commit"] == f"v{first.id}" and commit["revisions"] == [1] and commit["topics"] == ["deploy"]
    assert commit["subject"] == "write deploy (r1)" and commit["chars"] == 1408 and not commit["deleted"]
    with pytest.raises(MMError) as bad:
        store.versions.at("deploy", "HEAD~1")
    assert bad.value.code is ErrorCode.E_INVALID


def test_an_outside_edit_is_kept_before_a_write_replaces_it(tmp_path: Path) -> None:
    store, number = _store(tmp_path)
    store.write("ci", "CI runs on push.", number=number)
    note = store.root / "memories" / "ci.md"
    note.write_text(note.read_text().replace("CI runs on push.", "edited by hand outside mmd"))
    store.write("ci", "rewritten", number=number)
    assert [(v.cause, v.body) for v in store.versions.log("ci")] == [
        ("write", "rewritten"), ("found", "edited by hand outside mmd"), ("write", "CI runs on push.")]
    store.write("ci", "again", number=number)  # the latest kept text is on disk: nothing found
    assert [v.cause for v in store.versions.log("ci")] == ["write", "write", "found", "write"]


def test_a_note_older_than_the_history_is_kept_on_its_first_change(tmp_path: Path) -> None:
    store, number = _store(tmp_path)
    store.write("old", "written before versions existed", number=number)
    store.versions.path.unlink()
    store.delete("old", number=number)
    assert [(v.cause, v.body) for v in store.versions.log("old")] == [
        ("delete", None), ("found", "written before versions existed")]


def test_the_history_is_bounded_per_topic_and_per_root_never_losing_a_latest(tmp_path: Path) -> None:
    store, number = _store(tmp_path, VersionLog(tmp_path / "root", max_per_topic=3, max_bytes=60))
    for n in range(5):
        store.write("busy", f"version {n} of busy", number=number)
    assert [v.body for v in store.versions.log("busy")] == [f"version {n} of busy" for n in (4, 3, 2)]
    store.write("big", "b" * 50, number=number)  # 50 bytes: the root's 60 leave room for the latests alone
    assert [v.body for v in store.versions.log("busy")] == ["version 4 of busy"]
    assert [v.chars for v in store.versions.log("big")] == [50]
    store.write("huge", "h" * 100, number=number)  # over the bound alone: kept, as every topic's latest is
    assert {v.topic for v in store.versions.log()} == {"busy", "big", "huge"}


def test_the_history_file_is_private_and_made_by_the_first_write(tmp_path: Path) -> None:
    store, number = _store(tmp_path)
    assert not store.versions.path.exists() and store.versions.log() == []
    old = os.umask(0)
    try:
        store.write("t", "x", number=number)
    finally:
        os.umask(old)
    assert stat.S_IMODE(store.versions.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.versions.path.parent.stat().st_mode) == 0o700


def test_a_text_that_cannot_be_kept_is_not_replaced(tmp_path: Path) -> None:
    store, number = _store(tmp_path)
    store.write("keep", "the only copy", number=number)
    note = store.root / "memories" / "keep.md"
    note.write_text(note.read_text().replace("the only copy", "an outside edit, kept nowhere yet"))
    before = _files(store.root)
    store.versions.path.unlink()
    store.versions.path.mkdir()  # the history cannot be opened: the outside edit could not be kept
    done = store.write_many([("keep", "an agent's overwrite", {})], number=number)[0]
    assert done.outcome is None and done.error is not None and done.error.code is ErrorCode.E_IO
    with pytest.raises(MMError):
        store.delete("keep", number=number)
    assert _files(store.root) == before


def test_direct_mode_writes_keep_versions_numbered_by_the_roots_mark(tmp_path: Path) -> None:
    from mmd.core.revision_mark import read_mark

    memory = Memory.ensure(MemoryOptions.create(root=tmp_path / "root"))
    memory.write("t", "one")
    memory.write("t", "two")
    kept = memory.store.versions.log("t")
    assert [v.body for v in kept] == ["two", "one"]
    assert all(v.revision is not None and v.revision <= read_mark(memory.root) + 1 for v in kept)
