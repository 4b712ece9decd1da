"""Sync between two roots on this machine through a bare repository (mmd.daemon.git.sync).

Property guarded: distinct topics converge; a topic written on both ends ends with one version in
the files on both and the other as a conflict record (a whole note) on the machine that merged; a
delete against an edit keeps the edit; an unreachable remote loses no local revision and the next
sync recovers; no sync ever leaves conflict markers or a root a fresh reader cannot read.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mmd.daemon.git import repo_status, sync
from tests.test_git_helpers import GitRoot, bare_remote, git, isolate_git

T1, T2, T3 = (f"2026-02-0{d}T08:00:00.000Z" for d in (1, 2, 3))


@pytest.fixture
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[GitRoot, GitRoot, Path]:
    """Two roots (laptop, build box), each its own repository, both with the bare ``origin``."""
    isolate_git(monkeypatch, tmp_path)
    remote = bare_remote(tmp_path / "remote.git")
    return GitRoot(tmp_path / "laptop", remote), GitRoot(tmp_path / "box", remote), remote


def sync_ok(root: GitRoot) -> dict[str, object]:
    result = sync(root.path).to_json()
    assert result["ok"], result["error"]
    assert result["pushed"] and result["ahead"] == 0 and result["behind"] == 0
    root.memory.reload()
    return result


def test_distinct_topics_written_on_both_converge_after_a_sync_on_each(pair: tuple[GitRoot, GitRoot, Path]) -> None:
    laptop, box, _ = pair
    laptop.write("deploy-region", "We deploy to us-east-1.", updated=T1)
    laptop.write("oncall", "Rotation on Mondays.", updated=T2)
    box.write("build-cache", "ccache under /var/cache.", updated=T1)
    assert sync_ok(laptop)["merged"] == "none"  # the remote branch did not exist yet
    merged = sync_ok(box)
    assert merged["merged"] == "merge" and merged["conflicts"] == []
    assert merged["topics"] == ["deploy-region", "oncall"]
    assert sync_ok(laptop)["merged"] == "fast-forward"
    assert laptop.files() == box.files()
    assert set(laptop.bodies()) == {"deploy-region", "oncall", "build-cache"}
    laptop.assert_reads_clean()
    assert git(laptop.path, "status", "--porcelain") == "" and git(box.path, "status", "--porcelain") == ""
    assert sync_ok(box)["merged"] == "up-to-date"


def test_the_same_topic_written_on_both_ends_keeps_one_version_and_returns_the_other(
        pair: tuple[GitRoot, GitRoot, Path]) -> None:
    laptop, box, _ = pair
    long_body = "Box notes: " + "the build box keeps its own region. " * 30  # > 500 code points
    laptop.write("deploy-region", "We deploy to eu-west-1 (laptop, newer).", updated=T3, summary="laptop")
    box.write("deploy-region", long_body, updated=T2, summary="box")
    sync_ok(box)
    result = sync_ok(laptop)
    assert result["merged"] == "merge"
    (conflict,) = result["conflicts"]
    assert (conflict["topic"], conflict["kind"], conflict["kept"]) == ("deploy-region", "both-changed", "ours")
    assert conflict["keptBody"] == "We deploy to eu-west-1 (laptop, newer)."
    assert conflict["otherBody"] == long_body and len(long_body) > 500
    candidate = conflict["candidate"]
    assert candidate["kind"] == "conflict" and candidate["body"] == long_body and candidate["action"] == "write"
    assert candidate["evidence"]["other"]["commit"] == git(box.path, "rev-parse", "HEAD")
    sync_ok(box)
    for root in (laptop, box):
        assert root.bodies() == {"deploy-region": "We deploy to eu-west-1 (laptop, newer)."}
        root.assert_reads_clean()
    assert laptop.files() == box.files()


def test_the_older_local_version_loses_to_the_newer_remote_one(pair: tuple[GitRoot, GitRoot, Path]) -> None:
    laptop, box, _ = pair
    laptop.write("deploy-region", "laptop, older", updated=T1)
    box.write("deploy-region", "box, newer", updated=T3)
    sync_ok(box)
    (conflict,) = sync_ok(laptop)["conflicts"]
    assert conflict["kept"] == "theirs" and conflict["otherBody"] == "laptop, older"
    assert laptop.bodies() == {"deploy-region": "box, newer"}


@pytest.mark.parametrize("deleter_merges", [True, False])
def test_a_delete_against_an_edit_keeps_the_edit_and_reports_the_delete(pair: tuple[GitRoot, GitRoot, Path],
                                                                        deleter_merges: bool) -> None:
    laptop, box, _ = pair
    laptop.write("runbook", "Restart with systemctl.", updated=T1)
    laptop.write("other", "stays", updated=T1)
    sync_ok(laptop)
    sync_ok(box)
    laptop.delete("runbook")
    box.write("runbook", "Restart with systemctl --user.", updated=T2)
    first, second = (box, laptop) if deleter_merges else (laptop, box)
    sync_ok(first)
    (conflict,) = sync_ok(second)["conflicts"]
    assert conflict["kind"] == "delete-vs-edit" and conflict["keptBody"] == "Restart with systemctl --user."
    assert conflict["candidate"]["action"] == "delete"
    sync_ok(first)
    for root in (laptop, box):
        assert root.bodies() == {"runbook": "Restart with systemctl --user.", "other": "stays"}
        root.assert_reads_clean()


def test_an_unreachable_remote_keeps_every_local_revision_and_the_next_sync_recovers(
        pair: tuple[GitRoot, GitRoot, Path], tmp_path: Path) -> None:
    laptop, box, remote = pair
    git(laptop.path, "remote", "set-url", "origin", str(tmp_path / "offline" / "remote.git"))
    heads = [laptop.write(f"note-{i}", f"written offline {i}", updated=T1) for i in range(5)]
    (laptop.path / "memories" / "note-0.md").write_text("# note-0\n\nedited by hand, not committed yet\n")
    result = sync(laptop.path).to_json()
    assert not result["ok"] and result["error"]["stage"] == "fetch" and not result["pushed"]
    assert result["committed"] is not None  # the uncommitted edit was committed before the network
    assert git(laptop.path, "log", "-1", "--format=%s", result["committed"]) == "external edit note-0"
    assert git(laptop.path, "status", "--porcelain") == ""
    log = laptop.history.log(limit=100)
    assert [row["revisions"] for row in log[1:6]] == [[r] for r in reversed(heads)]
    git(laptop.path, "remote", "set-url", "origin", str(remote))
    assert sync_ok(laptop)["pushed"]
    sync_ok(box)
    assert set(box.bodies()) == {f"note-{i}" for i in range(5)}
    pushed = git(remote, "log", "--format=%s", "main").splitlines()
    assert all(f"write note-{i} (r{heads[i]})" in pushed for i in range(5))


def test_no_remote_configured_is_not_an_error_and_commits_locally(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    root = GitRoot(tmp_path / "alone")
    root.memory.write("local", "only here")
    result = sync(root.path).to_json()
    assert result["ok"] and not result["fetched"] and "no remote 'origin'" in result["note"]
    assert result["committed"] == root.history.head()


def test_a_merge_that_would_take_the_index_over_its_caps_is_held_back_once_and_writes_go_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    remote = bare_remote(tmp_path / "remote.git")
    laptop = GitRoot(tmp_path / "laptop", remote, index_lines=24)  # two entries fit, three do not
    box = GitRoot(tmp_path / "box", remote, index_lines=24)
    laptop.write("one", "1")
    laptop.write("uno", "1 again")
    box.write("two", "2")
    sync_ok(laptop)
    before = box.files()
    first = sync(box.path)
    assert first.refused is not None and first.refused.kind == "hold" and first.refused.topics == ("one", "uno")
    assert not first.pushed and first.error is not None and first.error["stage"] == "merge"
    assert "over its caps of 24 lines" in first.error["message"] and "one, uno" in first.error["message"]
    assert [(c["kind"], c["topic"], c["body"]) for c in first.held] == [("conflict", "one", "1"),
                                                                         ("conflict", "uno", "1 again")]
    assert box.files() == before and set(box.bodies()) == {"two"}  # the root stayed as it was
    again = sync(box.path, refused=first.refused)
    assert again.refused == first.refused and again.held == []  # the same remote commit is not weighed again
    assert box.memory.write("three", "3")["ok"]  # writes go on: the local index is within its caps
    box.commit("write", ["three"])
    weighed = sync(box.path, refused=first.refused)  # this root moved: the remote is weighed again,
    assert weighed.refused is not None and weighed.refused.ours != first.refused.ours  # still too big,
    assert weighed.held == []  # and its topics, queued once already, are not returned again
    box.delete("three")
    box.delete("two")
    assert sync_ok(box)["merged"] == "merge"  # room was made here: the same remote commit fits now
    assert set(box.bodies()) == {"one", "uno"}


def test_a_remote_that_moves_before_our_push_is_merged_again_and_both_rounds_are_reported(
        pair: tuple[GitRoot, GitRoot, Path], tmp_path: Path) -> None:
    laptop, box, _ = pair
    box.write("shared", "box's version, older", updated=T1)
    sync_ok(box)
    box.write("late", "pushed by the hook while the laptop syncs", updated=T2)  # committed, not pushed yet
    laptop.write("shared", "laptop's version, newer", updated=T3)
    marker = tmp_path / "hook-ran"
    hook = laptop.path / ".git" / "hooks" / "pre-push"
    hook.write_text(f"#!/bin/sh\n[ -e '{marker}' ] && exit 0\ntouch '{marker}'\n"
                    f"env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE git -C '{box.path}' push -q origin main\n")
    hook.chmod(0o755)
    result = sync_ok(laptop)  # the user's hook runs: the first push is refused, the second goes through
    assert marker.exists() and result["merged"] == "merge"
    assert [(c["topic"], c["kept"]) for c in result["conflicts"]] == [("shared", "ours")]
    assert laptop.bodies() == {"shared": "laptop's version, newer", "late": "pushed by the hook while the laptop syncs"}
    assert result["topics"] == ["late"]  # "shared" kept the local version: unchanged here


def test_sync_refuses_a_branch_that_is_not_checked_out(pair: tuple[GitRoot, GitRoot, Path]) -> None:
    laptop, _, _ = pair
    result = sync(laptop.path, branch="elsewhere").to_json()
    assert not result["ok"] and result["error"]["stage"] == "branch" and "main" in result["error"]["message"]


def test_status_shows_the_branch_and_what_is_ahead_or_behind_without_the_network(
        pair: tuple[GitRoot, GitRoot, Path]) -> None:
    laptop, box, _ = pair
    assert repo_status(laptop.path)["ahead"] is None  # never fetched
    sync_ok(laptop)
    laptop.write("one", "1")
    laptop.write("two", "2")
    (laptop.path / "memories" / "two.md").write_text("# two\n\nedited by hand\n")
    status = repo_status(laptop.path)
    assert status == {"branch": "main", "head": laptop.history.head(), "remote": "origin", "remoteConfigured": True,
                      "ahead": 2, "behind": 0, "uncommitted": 1}
    assert repo_status(box.path, remote="upstream")["remoteConfigured"] is False


def test_the_merge_driver_git_starts_per_file_imports_no_sync_or_history() -> None:
    code = "import sys, mmd.daemon.git.driver; print(' '.join(sorted(sys.modules)))"
    modules = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert "mmd.daemon.git.driver" in modules
    assert not {"mmd.daemon.git.remote", "mmd.daemon.git.history", "mmd.core.memory", "zmq"} & set(modules)


def test_a_delete_on_one_end_removes_the_note_on_the_other(pair: tuple[GitRoot, GitRoot, Path]) -> None:
    laptop, box, _ = pair
    laptop.write("stale", "to be removed", updated=T1)
    laptop.write("kept", "stays", updated=T1)
    sync_ok(laptop)
    sync_ok(box)
    box.write("box-only", "box adds", updated=T2)  # so the next sync is a real merge, not a fast-forward
    laptop.delete("stale")
    sync_ok(laptop)
    result = sync_ok(box)
    assert result["merged"] == "merge" and result["conflicts"] == [] and "memories/stale.md" in result["changed"]
    assert not (box.path / "memories" / "stale.md").exists()
    assert box.bodies() == {"kept": "stays", "box-only": "box adds"}
    box.assert_reads_clean()
