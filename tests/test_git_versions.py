"""Conflicts seen on both sides (issue 30): the machine that did not merge learns of the conflict from the merge
commit, with the same candidate as the machine that merged; what a hostile remote writes in such a trailer is
weighed before anything of it is read.

Two (or three) roots on this machine through a bare repository, :func:`mmd.daemon.git.sync` called directly.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mmd.daemon.git import sync
from mmd.daemon.git.history import machine_name
from tests.test_git_helpers import GitRoot, bare_remote, blob, crafted_tree, git, isolate_git, tree_files

T1, T2 = "2026-02-01T08:00:00.000Z", "2026-02-02T08:00:00.000Z"


@pytest.fixture
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[GitRoot, GitRoot, Path]:
    isolate_git(monkeypatch, tmp_path)
    remote = bare_remote(tmp_path / "remote.git")
    return GitRoot(tmp_path / "laptop", remote), GitRoot(tmp_path / "box", remote), remote


def test_the_machine_that_did_not_merge_gets_the_same_candidate_naming_both_machines(
        pair: tuple[GitRoot, GitRoot, Path]) -> None:
    laptop, box, _ = pair
    laptop.write("deploy-region", "laptop: eu-west-1", updated=T1)
    box.write("deploy-region", "box: us-east-1", updated=T2)
    laptop_commit, box_commit = (git(r.path, "rev-parse", "HEAD") for r in (laptop, box))
    assert sync(laptop.path).ok
    merged = sync(box.path)
    (conflict,) = merged.conflicts
    assert merged.received == [] and conflict["otherCommit"] == laptop_commit and conflict["keptCommit"] == box_commit
    taken = sync(laptop.path)
    assert taken.merged == "fast-forward" and taken.conflicts == []
    assert taken.received == [conflict["candidate"]]  # the very same candidate on both machines
    lost, kept = conflict["candidate"]["evidence"]["other"], conflict["candidate"]["evidence"]["kept"]
    assert (lost["commit"], lost["root"], kept["commit"], kept["root"]) == (
        laptop_commit, laptop.history.root_id, box_commit, box.history.root_id)
    assert lost["machine"] == kept["machine"] == machine_name() and lost["body"] == "laptop: eu-west-1"
    assert conflict["candidate"]["summary"].startswith(f"sync conflict: deploy-region as {machine_name()} (root ")
    assert sync(laptop.path).received == []  # learnt once: the merge commit is ours now


def _merge(repo: Path, remote: Path, parents: list[str], message: str) -> str:
    """A merge commit of ``parents`` with the first parent's tree, pushed as ``main`` of ``remote``."""
    tree = git(repo, "rev-parse", f"{parents[0]}^{{tree}}")
    args = [a for p in parents for a in ("-p", p)]
    commit = subprocess.run(["git", "commit-tree", tree, *args, "-m", message], cwd=repo, capture_output=True,
                            check=True).stdout.decode().strip()
    subprocess.run(["git", "push", "-q", "-f", str(remote), f"{commit}:refs/heads/main"], cwd=repo, check=True)
    return commit


def test_a_forged_conflict_trailer_queues_nothing(pair: tuple[GitRoot, GitRoot, Path], tmp_path: Path) -> None:
    laptop, box, remote = pair
    laptop.write("notes", "shared", updated=T1)
    mine = git(laptop.path, "rev-parse", "HEAD")
    assert sync(laptop.path).ok and sync(box.path).ok
    stranger = GitRoot(tmp_path / "stranger")  # another root: neither version is the laptop's
    stranger.write("deploy-region", "stranger's", updated=T1)
    stranger.write("deploy-region", "stranger's again", updated=T2)
    theirs = git(stranger.path, "rev-parse", "HEAD")
    git(box.path, "fetch", "-q", str(stranger.path), "HEAD")
    main = git(box.path, "rev-parse", "HEAD")
    # a note far over the note cap, in a commit that claims to be the laptop's
    files = tree_files(box.path, main)
    files["memories/huge.md"] = ("100644", blob(box.path, b"# huge\n\n" + b"x" * 70_000 + b"\n"))
    huge = subprocess.run(["git", "commit-tree", crafted_tree(box.path, files), "-p", main, "-m",
                           f"write huge\n\nMmd-Root: {laptop.history.root_id}\n"], cwd=box.path, capture_output=True,
                          check=True).stdout.decode().strip()
    forged = "\n".join([
        f"Mmd-Conflict: deploy-region {theirs} {git(stranger.path, 'rev-parse', 'HEAD~1')}",  # not the laptop's
        f"Mmd-Conflict: ../../etc {main} {main}",  # no topic slug
        f"Mmd-Conflict: notes {'1' * 40} {main}",  # no ancestor of the merge
        f"Mmd-Conflict: huge {huge} {main}",  # its note is over the cap: never read
        "Mmd-Conflict: notes only-two-words",
        f"Mmd-Conflict: notes {mine} {main}",  # the one that checks out: the laptop's own version
    ])
    _merge(box.path, remote, [main, theirs, huge], f"sync: merge origin/main\n\n{forged}\n")
    taken = sync(laptop.path)
    assert taken.ok and taken.merged == "fast-forward", taken.to_json()
    assert [(c["topic"], c["body"], c["evidence"]["other"]["commit"]) for c in taken.received] == [
        ("notes", "shared", mine)]
