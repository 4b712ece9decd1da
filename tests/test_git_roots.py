"""Two roots, one remote: ``rN`` names THIS root's revision, and a restore never deletes (issue 18).

Property guarded: two daemons (laptop, box) sharing a bare remote both number their revisions
r1, r2, … and both sets end up in each history; on box, ``rN`` resolves only among box's own commits
(``Mmd-Root`` trailer: the id in box's ``.mmd/root-id``), so ``diff`` and ``restore`` use box's
revision; a number only the other root made is refused naming its commit hash, and the hash works;
``log`` prints the hash beside each ``rN`` and marks the other root's commits; a ``restore`` of a
topic absent at that revision is refused (exit 1) and deletes nothing, while ``revert`` still undoes
a creation and says it deletes. The same ``rN`` on both roots makes the old resolver (the newest
commit recording N) pick the other root's commit or delete the note: these tests fail without the fix.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from mmd.core.errors import MMError
from mmd.daemon.git import GitHistory, ensure_repo
from mmd.daemon.git.history import ROOT_ID_NAME
from tests.test_git_daemon import bodies, call, mmctl_sync, pair, write
from tests.test_git_helpers import git, isolate_git
from tests.test_mmctl_daemon import cli

__all__ = ["pair"]  # the fixture, imported for pytest


def _commit(daemon: Any, topic: str, body: str) -> int:
    """One write, then wait for its own commit (no group commit of two revisions)."""
    revision = write(daemon, topic, body)
    call(daemon, "memory.log", {"limit": 1})
    return revision


def _log(daemon: Any) -> list[dict[str, Any]]:
    code, out, _ = cli(daemon, "log", "--json", "--limit", "100")
    assert code == 0
    commits: list[dict[str, Any]] = json.loads(out)["commits"]
    return commits


def test_rn_means_this_roots_revision_and_restore_of_an_absent_topic_deletes_nothing(pair: Any) -> None:
    laptop, box = pair
    ours = [_commit(laptop, "deploy-region", f"eu-west-{i}") for i in (1, 2)]
    box_revs = [_commit(box, "box-topic", f"x{i}") for i in (1, 2, 3)]
    time.sleep(1.1)  # laptop's later commits are newer by the clock: the old resolver picked them on box
    ours += [_commit(laptop, "deploy-region", f"eu-west-{i}") for i in (3, 4, 5)]
    shared = sorted(set(ours) & set(box_revs))
    assert len(shared) >= 2, (ours, box_revs)  # the same rN on both roots: the case of the issue
    mmctl_sync(laptop)
    mmctl_sync(box)
    assert bodies(box)["deploy-region"] == "eu-west-5"
    assert (box.root / ".mmd" / ROOT_ID_NAME).read_text() != (laptop.root / ".mmd" / ROOT_ID_NAME).read_text()

    commits = _log(box)
    laptop_commits = {n: c["commit"] for c in commits if c["otherRoot"] for n in c["revisions"]}
    box_commits = {n: c["commit"] for c in commits if not c["otherRoot"] for n in c["revisions"]}
    assert set(shared) <= set(laptop_commits) & set(box_commits)

    # diff between two of box's revisions whose numbers laptop made too: box's own, box-topic only
    b2, b3 = box_revs[1], box_revs[2]
    code, out, err = cli(box, "diff", f"r{b2}", f"r{b3}", "--json")
    result = json.loads(out)
    assert code == 0, err
    assert (result["from"], result["to"]) == (box_commits[b2], box_commits[b3])
    assert [(r["topic"], r["change"], r["before"]["body"], r["after"]["body"]) for r in result["topics"]] == [
        ("box-topic", "updated", "x2", "x3")]

    # a number only laptop made (so far): refused on box, naming laptop's commit by its full hash
    only_laptop = max(ours)
    assert only_laptop not in box_commits
    code, out, err = cli(box, "diff", f"r{only_laptop}")
    assert code == 1 and laptop_commits[only_laptop] in err and "other root" in err, err
    assert cli(box, "diff", laptop_commits[only_laptop])[0] == 0

    # restore at box's own revision where deploy-region did not exist: refused, nothing deleted
    before = (box.root / "memories" / "deploy-region.md").read_bytes()
    b1 = box_revs[0]
    code, out, err = cli(box, "restore", "deploy-region", "--at", f"r{b1}")
    assert code == 1, (out, err)
    assert f"deploy-region did not exist at r{b1} (commit {box_commits[b1]})" in err
    assert "`mmctl delete deploy-region` removes it" in err
    assert (box.root / "memories" / "deploy-region.md").read_bytes() == before
    assert bodies(box)["deploy-region"] == "eu-west-5"

    # box's own rN restores box's version; laptop's commit of the same number is reached by its hash
    code, out, err = cli(box, "restore", "box-topic", "--at", f"r{b2}", "--json")
    assert code == 0 and json.loads(out)["commit"] == box_commits[b2], err
    assert bodies(box)["box-topic"] == "x2"
    code, out, err = cli(box, "restore", "deploy-region", "--at", laptop_commits[ours[0]], "--json")
    assert code == 0 and bodies(box)["deploy-region"] == "eu-west-1", err

    # the text log: each line starts with the rN that works on box (or "-") and the hash; laptop's are marked
    code, out, _ = cli(box, "log")
    lines = {line.split()[1]: line for line in out.splitlines()}
    assert lines[box_commits[b1][:12]].startswith(f"r{b1} ") and "other root" not in lines[box_commits[b1][:12]]
    marked = lines[laptop_commits[ours[0]][:12]]
    assert marked.startswith("- ") and marked.endswith("(other root: use the hash)")


def test_revert_of_a_creation_says_it_deletes_and_restore_of_an_absent_topic_is_refused(pair: Any) -> None:
    laptop, _ = pair
    created = _commit(laptop, "fresh-topic", "new")
    other = _commit(laptop, "kept-topic", "kept")
    code, out, err = cli(laptop, "restore", "kept-topic", "--at", f"r{created}")
    assert code == 1 and f"kept-topic did not exist at r{created}" in err and "mmctl delete kept-topic" in err
    code, out, err = cli(laptop, "restore", "never-there", "--at", f"r{other}")
    assert code == 1 and "never-there did not exist at" in err and "does not exist now" in err
    assert bodies(laptop) == {"fresh-topic": "new", "kept-topic": "kept"}
    code, out, err = cli(laptop, "revert", f"r{created}")
    assert code == 0, err
    assert "it deletes fresh-topic" in out.splitlines()[0] and "deleted fresh-topic: it did not exist before" in out
    assert bodies(laptop) == {"kept-topic": "kept"}


def test_an_ambiguous_or_foreign_rn_is_refused_listing_the_candidates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """History API: old commits without ``Mmd-Root`` resolve when alone; two of this root's, or another root's only,
    are refused with every candidate's full hash."""
    isolate_git(monkeypatch, tmp_path)
    root = tmp_path / "root"
    ensure_repo(root)
    history = GitHistory(root)

    def commit(message: str) -> str:
        git(root, "commit", "--quiet", "--allow-empty", "-m", message)
        return git(root, "rev-parse", "HEAD")

    legacy = commit("write a (r7)\n\nMmd-Revision: 7")
    assert history.resolve("r7") == legacy  # made before the trailer existed, and alone: resolvable
    foreign = commit("write b (r8)\n\nMmd-Revision: 8\nMmd-Root: 0123456789abcdef")
    with pytest.raises(MMError) as refused:
        history.resolve("r8")
    assert foreign in str(refused.value) and "other root" in str(refused.value)
    assert history.resolve(foreign) == foreign  # the hash always works
    again = commit(f"write c (r7)\n\nMmd-Revision: 7\nMmd-Root: {history.root_id}")
    assert history.resolve("r7") == again  # this root's own wins over the old one
    twice = commit(f"write d (r7)\n\nMmd-Revision: 7\nMmd-Root: {history.root_id}")
    with pytest.raises(MMError) as refused:
        history.resolve("r7")
    message = str(refused.value)
    assert all(c in message for c in (again, twice, legacy)) and "2 commits of this root" in message
    assert (root / ".mmd" / ROOT_ID_NAME).read_text().strip() == history.root_id
    assert git(root, "check-ignore", ".mmd/root-id") == ".mmd/root-id"  # never committed: a clone makes its own
