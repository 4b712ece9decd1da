"""Sync and history per root (issue 27): every root of the memory home committed, synced and converged.

Property guarded, with two machines — two fake HOMEs, each with its own user root and REAL daemon (``mmd --git``),
one bare remote — and a project ``api`` (a git repository whose origin is ``git@github.com:me/api.git``) cloned at a
different path on each: a note written in the user root and one in api's root on machine 1 reach machine 2 after a
``mmctl sync`` on each, where api's is read from machine 2's own clone (same key, same folder ``projects/<key>/``);
then both write (different topics, then the same topic) and sync, and every root holds the same files on both,
the conflict a candidate in api's scope on both machines. Each commit names the topics it holds (a project root's
as ``<key>/<topic>``) and the revisions of each root (``Mmd-Revision`` the user root's, ``Mmd-Project-Revision``
api's); ``mmctl log``, ``diff`` and ``restore`` with ``--project`` read and write api's root alone, its own
``rN``. A project root's ``.mmd/`` is never committed (an existing repository that committed one upgrades in
place), and a root committed with its project (``<repo>/.mm``) is in none of mmd's commits.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mmd.core.projects import project_for
from tests.test_daemon_helpers import DaemonProcess
from tests.test_git_daemon import call, conflicts
from tests.test_git_daemon import mmctl_sync as sync
from tests.test_git_daemon import write as write_in
from tests.test_git_helpers import bare_remote, git, isolate_git
from tests.test_mmctl_daemon import cli

ORIGIN = "git@github.com:me/api.git"


def a_clone(folder: Path) -> Path:
    """A git repository at ``folder`` whose ``origin`` is :data:`ORIGIN` (a clone of the project, for its key)."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "remote", "add", "origin", ORIGIN)
    git(folder, "commit", "-q", "--allow-empty", "-m", "start")
    return folder


def a_machine(start_daemon: Any, base: Path, remote: Path, clone: str) -> tuple[DaemonProcess, Path]:
    """A fake HOME ``base`` with its user root (``base/memory``) served by ``mmd --git`` synced with ``remote``,
    and the project cloned at ``base/<clone>``."""
    project = a_clone(base / clone)
    daemon = start_daemon("--git", "--no-ingest", root=base / "memory",
                          env={"HOME": str(base), "DSH_HOME": str(base / "dsh")})
    git(daemon.root, "remote", "add", "origin", str(remote))
    return daemon, project


@pytest.fixture
def machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> dict[str, Any]:
    """Two machines (``one``, ``two``) sharing a bare memory remote, each with the api project cloned elsewhere."""
    isolate_git(monkeypatch, tmp_path)
    remote = bare_remote(tmp_path / "memory.git")
    one, api_one = a_machine(start_daemon, tmp_path / "one", remote, "src/api")
    two, api_two = a_machine(start_daemon, tmp_path / "two", remote, "work/clones/api-checkout")
    key = project_for(api_one).key  # type: ignore[union-attr]
    assert project_for(api_two).key == key  # type: ignore[union-attr]
    return {"one": one, "two": two, "api_one": api_one, "api_two": api_two, "key": key, "remote": remote}


def write(daemon: DaemonProcess, topic: str, body: str, *scope: str) -> int:
    """``memory.write`` in ``scope`` (``--project P`` or nothing: the user root); the revision of its root."""
    return write_in(daemon, topic, body, **({"project": scope[1]} if scope else {}))


def notes(root: Path) -> dict[str, bytes]:
    """MEMORY.md and every note of the root at ``root``, byte for byte."""
    out = {"MEMORY.md": (root / "MEMORY.md").read_bytes()}
    out.update({f"memories/{p.name}": p.read_bytes() for p in sorted((root / "memories").glob("*.md"))})
    return out


def read(daemon: DaemonProcess, topic: str, *scope: str) -> str:
    code, out, err = cli(daemon, "read", topic, *scope, "--json")
    assert code == 0, (out, err)
    return str(json.loads(out)["body"])


def commits(daemon: DaemonProcess) -> list[str]:
    """Every commit message of the home's repository, newest first, once the revisions made so far are committed."""
    call(daemon, "memory.log", {"limit": 1})  # answered once the commits queued before it are made
    return [m.strip() for m in git(daemon.root, "log", "--format=%B%x00").split("\0")]


def test_two_machines_converge_on_every_root_and_the_project_maps_through_its_key(machines: dict[str, Any]) -> None:
    one, two, key = machines["one"], machines["two"], machines["key"]
    on_one, on_two = ("--project", str(machines["api_one"])), ("--project", str(machines["api_two"]))
    write(one, "shell", "I use fish.")
    write(one, "deploy", "api deploys with make ship.", *on_one)
    assert "deploy" not in notes(one.root)["MEMORY.md"].decode()  # the user root's index lists its own notes
    sync(one)
    first = sync(two)
    assert f"{key}/deploy" in first["topics"] and "shell" in first["topics"], first
    assert read(two, "deploy", *on_two) == "api deploys with make ship."  # asked from machine two's own clone
    assert read(two, "deploy", "--project", key) == "api deploys with make ship."
    assert read(two, "shell", "--user") == "I use fish."
    assert key in {r["scope"] for r in call(two, "daemon.status")["roots"]}  # the root the sync made is served
    # the commit of a project write names its topic with the key and the project root's revision
    message = next(m for m in commits(one) if f"{key}/deploy" in m)
    assert f"Mmd-Project-Revision: {key} " in message and "Mmd-Revision:" not in message, message

    # both write, different topics: every root converges
    write(one, "build", "api builds with bazel.", *on_one)
    write(two, "tests", "api tests run with pytest -x.", *on_two)
    write(two, "editor", "I use helix.")
    sync(one)
    assert sync(two)["merged"] == "merge"
    assert sync(one)["merged"] == "fast-forward"
    for root in (Path(), Path("projects") / key):
        assert notes(one.root / root) == notes(two.root / root), root
    assert sorted(json.loads(cli(one, "list", *on_one, "--json")[1])["notes"][0].keys())  # readable on one
    assert {n["topic"] for n in call(one, "memory.list", {"project": key})["notes"]
            if n.get("scope") == key} == {"deploy", "build", "tests"}

    # both write the same topic of the project: one version kept, the other a candidate in api's scope, on both
    write(one, "deploy", "api deploys from the release branch (one).", *on_one)
    write(two, "deploy", "api deploys with a canary first (two, later).", *on_two)
    sync(one)
    merged = sync(two)
    (record,) = merged["conflicts"]
    assert (record["topic"], record["scope"], record["kept"]) == ("deploy", key, "ours")
    assert [(c["topic"], c["scope"]) for c in conflicts(two)] == [("deploy", key)]
    sync(one)
    (received,) = conflicts(one)  # the machine that did not merge queues the same version, in the same root
    assert (received["topic"], received["scope"], received["body"]) == (
        "deploy", key, "api deploys from the release branch (one).")
    for daemon in (one, two):
        assert read(daemon, "deploy", "--project", key) == "api deploys with a canary first (two, later)."
        assert git(daemon.root, "status", "--porcelain") == ""
        assert git(daemon.root, "ls-files", "projects/*/.mmd", ".mmd") == ""  # no root's state is ever synced
    for root in (Path(), Path("projects") / key):
        assert notes(one.root / root) == notes(two.root / root), root
    code, out, err = cli(one, "queue", "accept", str(received["id"]))  # accepted into api's root
    assert code == 0, (out, err)
    assert read(one, "deploy", *on_one) == "api deploys from the release branch (one)."
    sync(one)
    sync(two)
    assert read(two, "deploy", *on_two) == "api deploys from the release branch (one)."
    assert [c["status"] for c in conflicts(two)] == ["accepted"]  # the accept on one resolved it on two


def test_history_per_root_log_diff_and_restore_read_the_project_root_alone(machines: dict[str, Any]) -> None:
    one, key = machines["one"], machines["key"]
    on_one = ("--project", str(machines["api_one"]))
    first = write(one, "deploy", "v1: make ship.", *on_one)
    commits(one)  # committed before the next write: a loaded daemon's group commit made the two writes one commit
    write(one, "deploy", "v2: make ship from release.", *on_one)
    write(one, "shell", "I use fish.")
    code, out, err = cli(one, "log", *on_one, "--json")
    assert code == 0, err
    logged = json.loads(out)["commits"]
    assert [c["topics"] for c in logged][:2] == [["deploy"], ["deploy"]]  # its topics, named within its root
    assert all("shell" not in c["topics"] for c in logged) and logged[1]["revisions"] == [first]
    user = json.loads(cli(one, "log", "--user", "--json")[1])["commits"]
    assert user[0]["topics"] == ["shell"] and all("deploy" not in c["topics"] for c in user)
    code, out, err = cli(one, "diff", f"r{first}", *on_one, "--json")
    assert code == 0, err
    diff = json.loads(out)
    assert [(t["topic"], t["change"]) for t in diff["topics"]] == [("deploy", "added")]
    assert "+++ b/memories/deploy.md" in diff["patch"] and "projects/" not in diff["patch"]  # the root's own paths
    code, out, err = cli(one, "restore", "deploy", "--at", f"r{first}", *on_one)
    assert code == 0, (out, err)
    assert read(one, "deploy", *on_one) == "v1: make ship."
    assert not (one.root / "memories" / "deploy.md").exists()  # nothing written in the user root
    restored = next(m for m in commits(one) if m.startswith("restore"))
    assert f"{key}/deploy" in restored and f"Mmd-Project-Revision: {key}" in restored


def test_a_project_root_opened_after_a_restart_numbers_on_above_its_history(machines: dict[str, Any],
                                                                          start_daemon: Any) -> None:
    one, key = machines["one"], machines["key"]
    on_one = ("--project", str(machines["api_one"]))
    for i in range(3):
        last = write(one, f"t{i}", f"note {i}", *on_one)
        commits(one)  # one commit per revision (no group commit)
    one.stop()
    for name in ("revision", "root-id"):  # the project root's own state lost (or never synced here)
        (one.root / "projects" / key / ".mmd" / name).unlink(missing_ok=True)
    again = start_daemon("--git", "--no-ingest", root=one.root, env={"HOME": str(one.base), "DSH_HOME": one.env[
        "DSH_HOME"]})
    assert write(again, "t9", "after the restart", *on_one) > last  # r1 would name an older commit again
    code, out, err = cli(again, "diff", f"r{last}", *on_one, "--json")
    assert code == 0 and [t["topic"] for t in json.loads(out)["topics"]] == ["t2"], (out, err)


def test_a_root_committed_with_its_project_is_never_in_mmds_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    start_daemon: Any) -> None:
    from mmd.core import Memory, MemoryOptions

    isolate_git(monkeypatch, tmp_path)
    team = a_clone(tmp_path / "src" / "team")
    Memory.ensure(MemoryOptions.create(root=team / ".mm"))  # the team's opt-in root, committed with the code
    git(team, "add", ".mm/MEMORY.md")
    git(team, "commit", "-q", "-m", "team memory")
    before = git(team, "log", "--format=%H")
    daemon = start_daemon("--git", "--no-ingest", root=tmp_path / "memory")
    go = tmp_path / "go"  # the home's commits wait for it: the .mm root's revision is pending beside the user root's
    hook = daemon.root / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nwhile [ ! -e '{go}' ]; do sleep 0.05; done\n")
    hook.chmod(0o755)
    write(daemon, "shell", "I use fish.")
    write(daemon, "release", "team releases on fridays.", "--project", str(team))
    write(daemon, "editor", "I use helix.")
    go.touch()
    assert (team / ".mm" / "memories" / "release.md").is_file()
    cli(daemon, "log", "--json")  # every commit queued is made
    listed = git(daemon.root, "log", "--format=%B", "--name-only")
    assert "release" not in listed and ".mm" not in listed and "Mmd-Project-Revision" not in listed, listed
    assert "shell" in listed and "editor" in listed
    assert git(daemon.root, "status", "--porcelain") == ""
    assert git(team, "log", "--format=%H") == before  # never a commit on the project's branch
    changed = git(team, "status", "--porcelain", "--untracked-files=all", "--", ".mm/MEMORY.md", ".mm/memories")
    assert changed.splitlines() == ["M .mm/MEMORY.md", "?? .mm/memories/release.md"]  # for the team to commit


def test_an_existing_repository_upgrades_in_place_and_untracks_a_committed_project_state(tmp_path: Path,
                                                                                        monkeypatch: pytest.MonkeyPatch
                                                                                        ) -> None:
    from mmd.daemon.git import ensure_repo
    from mmd.daemon.git.repo import ACCEPTED_FILES

    isolate_git(monkeypatch, tmp_path)
    root = tmp_path / "memory"
    (root / "projects" / "api-3f2a1b9c" / ".mmd").mkdir(parents=True)
    (root / "projects" / "api-3f2a1b9c" / ".mmd" / "revision").write_text("7\n")
    (root / "projects" / "api-3f2a1b9c" / "MEMORY.md").write_text("# MEMORY.md\n")
    git(root, "init", "-q")
    old_ignore, old_attributes = ACCEPTED_FILES[".gitignore"][1], ACCEPTED_FILES[".gitattributes"][1]
    (root / ".gitignore").write_bytes(old_ignore)  # what the release before this one wrote
    (root / ".gitattributes").write_bytes(old_attributes)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "an older mmd's commit")
    assert "projects/api-3f2a1b9c/.mmd/revision" in git(root, "ls-files")
    info = ensure_repo(root)
    assert set(info.changed) == {".gitignore", ".gitattributes", "projects/*/.mmd"}
    assert (root / ".gitignore").read_bytes() == ACCEPTED_FILES[".gitignore"][0]  # as a new repository has it
    assert (root / ".gitattributes").read_bytes() == ACCEPTED_FILES[".gitattributes"][0]
    assert "projects/api-3f2a1b9c/.mmd" not in git(root, "ls-files")  # untracked; the file stays
    assert (root / "projects" / "api-3f2a1b9c" / ".mmd" / "revision").read_text() == "7\n"
    assert git(root, "check-attr", "merge", "projects/api-3f2a1b9c/memories/x.md").endswith("mmd-index")
    assert ensure_repo(root).changed == ()  # idempotent
    done = subprocess.run(["git", "check-ignore", "-q", "projects/api-3f2a1b9c/.mmd/lock"], cwd=root)
    assert done.returncode == 0


async def test_a_move_while_a_sync_takes_every_roots_lock_cannot_deadlock(tmp_path: Path) -> None:
    import asyncio

    from mmd.core import Memory, MemoryOptions
    from mmd.core.durable import WriteLock
    from mmd.daemon.home import USER, Home, Root
    from mmd.daemon.state import MemoryState

    options = MemoryOptions.create(root=tmp_path / "memory")
    Memory.ensure(options).write("shell", "I use fish.")
    state = MemoryState(options, fts5=False)
    lock = WriteLock(options.root)
    lock.acquire(blocking=False)
    await state.load()
    home = Home(Root(USER, state, lock), state.now_iso)
    try:
        a, b = await home.ensure_key("aaa-00000001", []), await home.ensure_key("bbb-00000002", [])
        await a.state.lock.acquire()  # a write of root a under way
        syncing = asyncio.create_task(home.hold_all())  # takes the user root's lock, then waits for a's
        while not state.lock.locked():
            await asyncio.sleep(0)
        moving = asyncio.create_task(home.move(home.user, b, ["shell"]))  # user root → b, as `project adopt` does
        for _ in range(10):  # let the move run up to the lock it waits for
            await asyncio.sleep(0)
        a.state.lock.release()
        held = await asyncio.wait_for(syncing, 30)  # the bound only ends a deadlock: b taken first by the move
        assert [r.scope for r in held] == [USER, "aaa-00000001", "bbb-00000002"]
        home.release_all(held)
        outcome = await asyncio.wait_for(moving, 30)
        assert outcome["moved"] == ["shell"] and b.state.current.note("shell") is not None
    finally:
        await home.stop()
        lock.release()


def test_a_git_merge_by_hand_merges_a_project_note_by_its_own_roots_index(machines: dict[str, Any]) -> None:
    one, two, key = machines["one"], machines["two"], machines["key"]
    on_one, on_two = ("--project", str(machines["api_one"])), ("--project", str(machines["api_two"]))
    write(one, "deploy", "the start", *on_one)
    sync(one)
    sync(two)  # one history from here on
    write(one, "deploy", "zzz: one's older version (it sorts last as text)", *on_one)
    write(two, "deploy", "aaa: two's newer version", *on_two)
    sync(one)
    commits(two)  # two's write is committed
    git(two.root, "fetch", "--quiet", "origin")
    git(two.root, "merge", "--no-edit", "origin/main")  # a person's own merge: git runs `mmd merge-index`
    note = (two.root / "projects" / key / "memories" / "deploy.md").read_text()
    assert "<<<<<<<" not in note and "aaa: two's newer version" in note  # the newer by api's own index
    assert "<<<<<<<" not in (two.root / "projects" / key / "MEMORY.md").read_text()
    spooled = [json.loads(p.read_text()) for p in (two.root / ".mmd" / "git-conflicts").glob("*.json")]
    assert spooled and {r["scope"] for r in spooled} == {key}
    synced = sync(two)  # the next sync queues them, in api's scope
    (candidate,) = conflicts(two)
    assert candidate["id"] in synced["queued"] and (candidate["topic"], candidate["scope"]) == ("deploy", key)
    assert candidate["body"] == "zzz: one's older version (it sorts last as text)"
