"""What a git remote may put in the memory home's project roots, and a project root it would wedge (issues 26, 27).

Property guarded, through real daemons (``mmd --git``) and ``mmctl sync``: a remote commit touching
``projects/../x``, ``projects/BAD KEY/…``, ``projects/<key>/.mmd/revision`` or a symlink under ``projects/`` is
refused whole, naming the path, with nothing written anywhere (``projects/`` is memory only as
``projects/<key>/MEMORY.md`` and ``projects/<key>/memories/<topic>.md``). A remote commit whose merge would take
one project root's index over that root's OWN caps is held back: that root's incoming topics become candidates
in its scope (once), nothing of the commit is written, every root stays usable (writes go on in each), and once
room is made in that root the same commit is taken and both machines converge on every root.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from mmd.core import Memory, MemoryOptions
from mmd.core.format import parse_index, serialize_index
from mmd.core.model import IndexEntry
from tests.test_git_containment import EVIL_HOOK, landscape, refused_sync
from tests.test_git_daemon import call
from tests.test_git_helpers import bare_remote, blob, git, isolate_git, push_crafted, tree_files
from tests.test_git_home import a_clone, machines, notes, read, sync, write
from tests.test_mmctl_daemon import cli

__all__ = ["machines"]  # the fixture, imported for pytest


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> dict[str, Any]:
    """A victim's daemon with a note in its user root and one in the api project's root, synced once with a bare
    ``origin``; a forge (a clone of it to craft commits in) and a folder outside holding ``authorized_keys``."""
    from mmd.core.projects import project_for

    isolate_git(monkeypatch, tmp_path)
    remote = bare_remote(tmp_path / "remote.git")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "authorized_keys").write_text("ssh-ed25519 AAAA the victim's own key\n")
    api = a_clone(tmp_path / "src" / "api")
    victim = start_daemon("--git", "--no-ingest", root=tmp_path / "victim")
    git(victim.root, "remote", "add", "origin", str(remote))
    write(victim, "mine", "the victim's own note")
    write(victim, "deploy", "api deploys with make ship.", "--project", str(api))
    sync(victim)
    forge = tmp_path / "forge"
    subprocess.run(["git", "clone", "-q", str(remote), str(forge)], check=True)
    return {"tmp": tmp_path, "remote": remote, "outside": outside, "victim": victim, "forge": forge, "api": api,
            "key": project_for(api).key, "marker": tmp_path / "a hook ran"}  # type: ignore[union-attr]


def test_a_remote_path_under_projects_that_is_no_project_root_memory_is_refused_whole(world: dict[str, Any]) -> None:
    forge, remote, key = world["forge"], world["remote"], world["key"]
    clean = tree_files(forge, "origin/main")
    note = blob(forge, b"# x\n\nhello\n")
    cases = [
        ({"projects/../ESCAPED.md": ("100644", note)}, "projects/../ESCAPED.md"),
        ({"projects/BAD KEY/MEMORY.md": ("100644", note)}, "projects/BAD KEY/MEMORY.md"),
        ({"projects/-api-3f2a1b9c/MEMORY.md": ("100644", note)}, "projects/-api-3f2a1b9c/MEMORY.md"),
        ({f"projects/{key}/.mmd/revision": ("100644", blob(forge, b"1\n"))}, f"projects/{key}/.mmd/revision"),
        ({f"projects/{key}/memories/keys.md": ("120000", blob(forge, str(world["outside"]).encode()))},
         f"projects/{key}/memories/keys.md"),
        ({"projects/other-0badc0de": ("120000", blob(forge, str(world["outside"]).encode()))},
         "projects/other-0badc0de"),
        ({f"projects/{key}/memories/run.md": ("100755", blob(forge, EVIL_HOOK.format(
            marker=world["marker"]).encode()))}, f"projects/{key}/memories/run.md"),
    ]
    parent = git(forge, "rev-parse", "origin/main")
    for extra, path in cases:
        parent = push_crafted(forge, remote, parent, {**clean, **extra}, f"crafted: {path}")
        refused_sync(world, parent, path)  # named; nothing anywhere changed; status shows it
    assert (world["outside"] / "authorized_keys").read_text() == "ssh-ed25519 AAAA the victim's own key\n"
    assert not (world["tmp"] / "ESCAPED.md").exists() and not world["marker"].exists()
    assert read(world["victim"], "deploy", "--project", key) == "api deploys with make ship."


def _entries(count: int, memory_id: str) -> list[IndexEntry]:
    return [IndexEntry(topic=f"t{i:03d}", memory_id=memory_id, summary=f"fact {i} of the api", tags=(),
                       file=f"memories/t{i:03d}.md", updated="2026-02-01T00:00:00.000Z", body_chars=0, write_budget=0,
                       entry_body="") for i in range(count)]


def test_one_project_index_pushed_over_its_caps_is_held_back_in_its_own_scope(world: dict[str, Any]) -> None:
    forge, victim, key = world["forge"], world["victim"], world["key"]
    git(forge, "checkout", "-q", "main")
    api = forge / "projects" / key
    kept = list(parse_index((api / "MEMORY.md").read_text(), strict_files=False).entries)
    (api / "MEMORY.md").write_text(serialize_index([*kept, *_entries(60, key)], memory_id=key, index_lines=200,
                                                   index_bytes=25600))  # 60 more entries: over api's 200 lines
    Memory.open(MemoryOptions.create(root=forge)).write("teammate", "A note for the user root.")
    Memory.ensure(MemoryOptions.create(root=forge / "projects" / "web-0a1b2c3d", memory_id="web-0a1b2c3d")).write(
        "deploy", "web deploys on push.")
    git(forge, "add", "MEMORY.md", "memories", f"projects/{key}/MEMORY.md", "projects/web-0a1b2c3d/MEMORY.md",
        "projects/web-0a1b2c3d/memories")
    git(forge, "commit", "-q", "-m", "a teammate's notes, and an api index over its caps")
    git(forge, "push", "-q", "origin", "main")
    commit = git(forge, "rev-parse", "HEAD")
    before = landscape(world["tmp"], victim.root, world["outside"])
    code, out, err = cli(victim, "sync")
    assert code == 1 and f"refused origin/main at {commit[:12]}: in the project root {key}, it would take " \
        "MEMORY.md from" in err and "60 topic(s) from the remote: t000, t001" in err, (out, err)
    after = landscape(world["tmp"], victim.root, world["outside"])
    assert {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)
            and not k.startswith("<root>/.mmd")} == set()  # nothing of it written, in any root or outside
    page = call(victim, "queue.list", {"status": "pending", "limit": 100, "project": key})
    assert page["pending"] == 60 and {c["scope"] for c in page["candidates"]} == {key}  # in api's scope
    assert {c["topic"] for c in page["candidates"]} == {f"t{i:03d}" for i in range(60)}
    for scope in ((), ("--project", str(world["api"]))):  # every root stays usable
        assert write(victim, "after", "writes go on", *scope) > 0
    again = sync(victim, ok=False)
    assert again["refused"]["kind"] == "hold" and again["queued"] == []  # weighed again, never queued twice
    assert again["refused"]["topics"][0] == f"{key}/t000" and again["refused"]["count"] == 60


def test_each_root_is_weighed_against_its_own_caps_and_room_made_there_lets_the_commit_in(
        machines: dict[str, Any]) -> None:
    one, two, key = machines["one"], machines["two"], machines["key"]
    on_one, on_two = ("--project", str(machines["api_one"])), ("--project", str(machines["api_two"]))
    Memory.ensure(MemoryOptions.create(root=one.root / "projects" / key, memory_id=key, index_lines=24))
    write(one, "start", "api's first note (its caps: 24 lines, two entries fit, three do not).", *on_one)
    sync(one)
    sync(two)
    call(two, "memory.delete", {"topic": "start", "project": key})
    sync(two)
    sync(one)  # one history; api empty on both, its caps 24 lines (the user root's: 200)
    write(one, "one", "1", *on_one)
    write(one, "uno", "1 again", *on_one)
    write(one, "laptop", "a user note from one")
    write(two, "two", "2", *on_two)
    write(two, "box", "a user note from two")
    sync(one)
    held = sync(two, ok=False)
    assert held["refused"]["kind"] == "hold" and "over its caps of 24 lines" in held["refused"]["reason"], held
    assert sorted((c["topic"], c["scope"]) for c in call(two, "queue.list", {"status": "pending"})["candidates"]) == [
        ("one", key), ("uno", key)]  # api's incoming topics, in api's scope; the user root's note is no candidate
    assert write(two, "still", "the user root takes writes") > 0
    call(two, "memory.delete", {"topic": "two", "project": key})  # room made in api
    assert sync(two)["merged"] == "merge"  # the same remote commit fits now
    sync(one)
    for root in (Path(), Path("projects") / key):
        assert notes(one.root / root) == notes(two.root / root), root  # converged on every root
    assert read(one, "box", "--user") == "a user note from two" and read(two, "uno", *on_two) == "1 again"


def test_mmctl_sync_says_which_root_a_conflict_is_in_and_which_index_is_over_its_caps() -> None:
    from mmctl.cli.history import sync_lines

    result = {"remote": "origin", "branch": "main", "committed": None, "fetched": True, "merged": "merge",
              "topics": ["shell", "api-3f2a1b9c/deploy"], "refused": None, "pushed": True, "head": "0" * 40,
              "conflicts": [{"topic": "deploy", "scope": "api-3f2a1b9c", "kept": "ours"},
                            {"topic": "shell", "scope": "user", "kept": "theirs"}],
              "queued": [], "indexOverBudget": True, "overBudget": ["api-3f2a1b9c"], "ahead": 0, "behind": 0,
              "revision": 7}
    text = "\n".join(sync_lines(result))
    assert "conflict: api-3f2a1b9c/deploy changed on both sides, ours kept" in text
    assert "conflict: shell changed on both sides, theirs kept" in text
    assert "the merged MEMORY.md of the project root api-3f2a1b9c is over its caps" in text
    assert "now 0 ahead, 0 behind origin/main; revision 7" in text  # the remote, not the root over its caps
    failed = {**result, "fetched": False, "pushed": False, "indexOverBudget": False,
              "error": {"stage": "fetch", "message": "could not read from remote"}}
    assert "now 0 ahead, 0 behind origin/main as of the last fetch that worked" in "\n".join(sync_lines(failed))
