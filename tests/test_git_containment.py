"""What a git remote may put in a memory root: memory only, and never a root made unusable (issue 26).

Property guarded, through a real daemon (``mmd --git``) and ``mmctl sync``: a remote commit holding
anything but memory — hooks under ``.git/``, a ``..`` path, ``.mmd/`` files, a symlink, a symlink
replaced by a folder, a mode-755 file, a 200 MB blob — crafted with git plumbing, or made by a
teammate with plain git, is refused whole: nothing outside the root's memory files appears or
changes, no file under ``.git/hooks`` changes, ``.mmd/`` stays byte for byte, the refusal names the
path and the commit and ``mmctl status`` shows it until the remote changes, and a later clean commit
(a teammate's ordinary note) syncs normally. A remote index of 10,000 entries, or an entry whose
``file`` is unsafe, is held back: local writes go on, the remote's topics are review candidates once,
and the same remote commit is not weighed again. A second sync during a running one returns at once,
saying what the first waits for, which the first says too.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from mmctl.cli.main import main

from mmd.core import Memory, MemoryOptions
from mmd.core.format import parse_index, serialize_index
from mmd.core.model import IndexEntry
from tests.test_git_daemon import call, write
from tests.test_git_helpers import (
    bare_remote,
    blob,
    git,
    hang_fetches,
    isolate_git,
    push_crafted,
    tree_files,
)
from tests.test_ingest_helpers import wait_until
from tests.test_mmctl_daemon import cli

EVIL_HOOK = "#!/bin/sh\ntouch '{marker}'\n"


def landscape(tmp_path: Path, root: Path, outside: Path) -> dict[str, str]:
    """Everything a remote must not touch: the names beside the root, the folder a symlink would point at,
    and every file of the root (``.git/`` only for its hooks and config), ``{where: content}``."""
    out = {f"<beside>/{name}": "" for name in os.listdir(tmp_path)}

    def walk(base: Path, label: str, skip: tuple[str, ...] = ()) -> None:
        for folder, dirs, names in os.walk(base):
            rel = os.path.relpath(folder, base)
            dirs[:] = [d for d in dirs if os.path.normpath(os.path.join(rel, d)) not in skip]
            for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
                path = os.path.join(folder, name)
                key = f"{label}/{os.path.normpath(os.path.join(rel, name))}"
                out[key] = f"-> {os.readlink(path)}" if os.path.islink(path) else Path(path).read_bytes().hex()
            out.update({f"{label}/{os.path.normpath(os.path.join(rel, d))}/": "" for d in dirs})

    walk(outside, "<outside>")
    walk(root, "<root>", skip=(".git",))
    walk(root / ".git" / "hooks", "<hooks>")
    out["<git-config>"] = (root / ".git" / "config").read_bytes().hex()
    return out


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> dict[str, Any]:
    """A victim's daemon synced once with a bare ``origin``, a forge (a clone to craft commits in), and a folder
    outside the root holding an ``authorized_keys`` (what the symlink attacks aim at)."""
    isolate_git(monkeypatch, tmp_path)
    remote = bare_remote(tmp_path / "remote.git")
    git(remote, "config", "core.bigFileThreshold", "1m")  # the 200 MB blob is streamed, never held whole
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "authorized_keys").write_text("ssh-ed25519 AAAA the victim's own key\n")
    victim = start_daemon("--git", "--no-ingest", root=tmp_path / "victim")
    git(victim.root, "remote", "add", "origin", str(remote))
    write(victim, "mine", "the victim's own note")
    code, _, err = cli(victim, "sync")
    assert code == 0, err
    forge = tmp_path / "forge"
    subprocess.run(["git", "clone", "-q", str(remote), str(forge)], check=True)
    return {"tmp": tmp_path, "remote": remote, "outside": outside, "victim": victim, "forge": forge,
            "marker": tmp_path / "a hook ran"}


def refused_sync(world: dict[str, Any], commit: str, path: str) -> None:
    """``mmctl sync`` refuses ``commit``, naming it and ``path``; nothing a remote must not touch changed; status
    shows the refusal."""
    victim = world["victim"]
    before = landscape(world["tmp"], victim.root, world["outside"])
    code, out, err = cli(victim, "sync")
    assert code == 1 and f"refused origin/main at {commit[:12]}: {path!r}" in err, (out, err)
    assert "nothing of it was written" in err and "refused: origin/main" in out
    assert landscape(world["tmp"], victim.root, world["outside"]) == before
    status = call(victim, "daemon.status")["git"]
    assert status["refused"]["commit"] == commit and path in status["refused"]["paths"]
    assert commit[:12] in cli(victim, "status")[1]


def teammate_note(world: dict[str, Any], parent: str, topic: str, body: str) -> str:
    """A teammate's ordinary note, committed on ``parent`` with the clean files of the forge and pushed."""
    forge = world["forge"]
    Memory.open(MemoryOptions.create(root=forge)).write(topic, body)
    git(forge, "add", "MEMORY.md", f"memories/{topic}.md")
    commit = git(forge, "commit-tree", git(forge, "write-tree"), "-p", parent, "-m", f"write {topic}")
    git(forge, "push", "-q", "-f", str(world["remote"]), f"{commit}:refs/heads/main")
    return commit


def clean_sync_brings(world: dict[str, Any], topic: str, body: str) -> None:
    """``mmctl sync`` takes the remote's commit: ``topic`` reads ``body``, and only MEMORY.md and its note changed
    (and the daemon's own state: a new revision)."""
    victim = world["victim"]
    before = but_state(landscape(world["tmp"], victim.root, world["outside"]))
    code, out, err = cli(victim, "sync")
    assert code == 0, (out, err)
    assert call(victim, "memory.read", {"topic": topic})["body"] == body
    after = but_state(landscape(world["tmp"], victim.root, world["outside"]))
    assert set(after) - set(before) == {f"<root>/memories/{topic}.md"}
    assert {k for k in before if before[k] != after.get(k)} == {"<root>/MEMORY.md"}
    assert call(victim, "daemon.status")["git"]["refused"] is None  # shown until the remote changed
    assert not world["marker"].exists()  # no hook of the remote's ever ran


def test_a_crafted_remote_commit_is_refused_whole_and_a_later_clean_one_syncs(world: dict[str, Any]) -> None:
    forge, remote = world["forge"], world["remote"]
    clean = tree_files(forge, "origin/main")
    evil = blob(forge, EVIL_HOOK.format(marker=world["marker"]).encode())
    big = forge / "big.bin"
    with open(big, "wb") as sparse:
        sparse.truncate(200 * 1024 * 1024)
    huge = git(forge, "-c", "core.bigFileThreshold=1m", "-c", "core.compression=1", "hash-object", "-w", str(big))
    big.unlink()
    cases = [
        ({".git/hooks/pre-push": ("100755", evil), ".git/hooks/reference-transaction": ("100755", evil)},
         ".git/hooks/pre-push"),
        ({"../ESCAPED_dotdot.txt": ("100644", blob(forge, b"outside the root"))}, "../ESCAPED_dotdot.txt"),
        ({".mmd/revision": ("100644", blob(forge, b"1\n")), ".mmd/root-id": ("100644", blob(forge, b"0" * 16))},
         ".mmd/revision"),
        ({"sshkeys": ("120000", blob(forge, str(world["outside"]).encode()))}, "sshkeys"),
        ({"sshkeys/authorized_keys": ("100644", blob(forge, b"ssh-ed25519 AAAA the attacker\n"))},
         "sshkeys/authorized_keys"),  # the symlink of the commit before, replaced by a folder
        ({"memories/run.md": ("100755", evil)}, "memories/run.md"),
        ({"memories/big.md": ("100644", huge)}, "memories/big.md"),
    ]
    parent = git(forge, "rev-parse", "origin/main")
    for extra, path in cases:
        parent = push_crafted(forge, remote, parent, {**clean, **extra}, f"crafted: {path}",
                              "-c", "core.bigFileThreshold=1m")
        refused_sync(world, parent, path)
    code, _, err = cli(world["victim"], "sync")  # the same remote commit: refused again, the reason unchanged
    assert code == 1 and "memories/big.md" in err and "over its cap of 65536 bytes (not read)" in err
    git(forge, "checkout", "-q", "main")
    teammate_note(world, parent, "teammate", "A teammate's ordinary note.")  # on top of every crafted commit
    clean_sync_brings(world, "teammate", "A teammate's ordinary note.")


def test_a_teammate_swapping_a_symlink_for_a_folder_with_plain_git_writes_nothing_outside(
        world: dict[str, Any]) -> None:
    clone, outside = world["forge"], world["outside"]
    git(clone, "checkout", "-q", "main")
    (clone / "sshkeys").symlink_to(outside)
    (clone / ".mmd").mkdir()
    (clone / ".mmd" / "revision").write_text("1\n")
    git(clone, "add", "sshkeys")
    git(clone, "add", "-f", ".mmd/revision")
    git(clone, "commit", "-q", "-m", "a link to the victim's keys")
    git(clone, "push", "-q", "origin", "main")
    refused_sync(world, git(clone, "rev-parse", "HEAD"), ".mmd/revision")
    git(clone, "rm", "-q", "sshkeys")
    (clone / "sshkeys").mkdir()
    (clone / "sshkeys" / "authorized_keys").write_text("ssh-ed25519 AAAA the teammate\n")
    git(clone, "add", "sshkeys/authorized_keys")
    git(clone, "commit", "-q", "-m", "the link is a folder now")
    git(clone, "push", "-q", "origin", "main")
    refused_sync(world, git(clone, "rev-parse", "HEAD"), ".mmd/revision")
    assert (outside / "authorized_keys").read_text() == "ssh-ed25519 AAAA the victim's own key\n"
    git(clone, "rm", "-q", "-r", "sshkeys", ".mmd/revision")
    git(clone, "commit", "-q", "-m", "cleaned up")
    teammate_note(world, git(clone, "rev-parse", "HEAD"), "teammate", "Written after the clean-up.")
    clean_sync_brings(world, "teammate", "Written after the clean-up.")


def _entry(topic: str, file: str | None = None) -> IndexEntry:
    return IndexEntry(topic=topic, memory_id="local", summary=f"fact {topic} on host {topic}x", tags=(),
                      file=file or f"memories/{topic}.md", updated="2026-02-01T00:00:00.000Z", body_chars=0,
                      write_budget=0, entry_body="")


def push_index(world: dict[str, Any], added: list[IndexEntry], notes: dict[str, str], message: str,
               removed: tuple[str, ...] = ()) -> str:
    """A teammate's MEMORY.md with the ``added`` entries (and their ``notes``), without the ``removed`` topics,
    committed with plain git and pushed."""
    forge = world["forge"]
    git(forge, "checkout", "-q", "main")
    git(forge, "pull", "-q", "--ff-only", "origin", "main")
    kept = [e for e in parse_index((forge / "MEMORY.md").read_text(), strict_files=False).entries
            if e.topic not in removed]
    text = serialize_index([*kept, *added], memory_id="local", index_lines=200, index_bytes=25600)
    (forge / "MEMORY.md").write_text(text)
    for topic, body in notes.items():
        (forge / "memories" / f"{topic}.md").write_text(f"# {topic}\n\n{body}\n")
    git(forge, "add", "-A")
    git(forge, "commit", "-q", "-m", message)
    git(forge, "push", "-q", "origin", "main")
    return git(forge, "rev-parse", "HEAD")


def but_state(files: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in files.items() if not k.startswith("<root>/.mmd")}


def pending(victim: Any) -> int:
    return int(call(victim, "queue.list", {"status": "pending", "limit": 1})["pending"])


def test_a_remote_index_of_10000_entries_is_held_back_its_topics_queued_once(world: dict[str, Any]) -> None:
    victim = world["victim"]
    before = but_state(landscape(world["tmp"], victim.root, world["outside"]))
    commit = push_index(world, [_entry(f"t{i:05d}") for i in range(10_000)], {}, "10000 entries")
    code, out, err = cli(victim, "sync")
    assert code == 1 and f"refused origin/main at {commit[:12]}" in err and "10000 topic(s)" in err, err
    assert "t00000, t00001, t00002, t00003, t00004 and 9995 more" in err and "t00005" not in err
    assert max(len(line) for line in (out + err).splitlines()) < 1000  # a few names and a count, not 10,000
    assert but_state(landscape(world["tmp"], victim.root, world["outside"])) == before  # the queue is in .mmd/
    assert pending(victim) == 10_000  # each incoming topic, as a candidate to review
    assert write(victim, "after", "a local write still fits") > 0
    again = json.loads(cli(victim, "sync", "--json")[1])
    assert again["refused"]["commit"] == commit and again["queued"] == [] and pending(victim) == 10_000
    assert again["refused"]["count"] == 10_000 and len(again["refused"]["topics"]) == 5


def test_a_remote_entry_whose_file_is_unsafe_is_held_back_and_the_next_clean_commit_syncs(
        world: dict[str, Any]) -> None:
    victim = world["victim"]
    entries = [_entry("evil", "../../outside/evil.md"), _entry("friendly")]
    commit = push_index(world, entries, {"friendly": "A friendly note."}, "an entry outside the root")
    files = {p: p.read_bytes() for p in sorted(victim.root.rglob("*"))
             if not {".git", ".mmd"} & set(p.parts) and p.is_file()}
    code, _, err = cli(victim, "sync")
    assert code == 1 and f"at {commit[:12]}" in err and "evil names '../../outside/evil.md'" in err, err
    assert {p: p.read_bytes() for p in files} == files and not (victim.root / "memories" / "friendly.md").exists()
    assert sorted(c["topic"] for c in call(victim, "queue.list", {"status": "pending"})["candidates"]) == [
        "evil", "friendly"]
    assert write(victim, "local", "writes go on") > 0
    again = json.loads(cli(victim, "sync", "--json")[1])
    assert again["refused"]["kind"] == "hold" and again["queued"] == [] and pending(victim) == 2  # no loop
    push_index(world, [], {}, "the bad entry is gone", removed=("evil",))
    code, out, err = cli(victim, "sync")
    assert code == 0, (out, err)
    assert call(victim, "memory.read", {"topic": "friendly"})["body"] == "A friendly note."
    assert call(victim, "memory.read", {"topic": "local"})["body"] == "writes go on"


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds the hanging fetch through /proc")
def test_a_second_sync_during_a_running_one_returns_at_once_saying_what_the_first_waits_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Any) -> None:
    isolate_git(monkeypatch, tmp_path)
    daemon = start_daemon("--git", "--no-ingest", root=tmp_path / "root")
    hang = hang_fetches(daemon.root, "ssh://me:s3cret@example.invalid/memory.git")
    first_err, first_code = io.StringIO(), []
    syncing = threading.Thread(target=lambda: first_code.append(
        main(["sync", "--root", str(daemon.root)], env=daemon.env, stdout=io.StringIO(), stderr=first_err)))
    syncing.start()
    try:
        wait_until(lambda: "fetch: waiting for the fetch from origin" in first_err.getvalue(), timeout_s=30,
                   what="the first sync to say what it waits for")
        assert "(ssh://me@example.invalid/memory.git) …" in first_err.getvalue()  # the password left out
        code, out, err = cli(daemon, "sync")
        assert code == 1 and "a sync is already running" in err, (out, err)
        assert "waiting for the fetch from origin (ssh://me@example.invalid/memory.git)" in err and "s3cret" not in err
        assert syncing.is_alive() and (call(daemon, "daemon.status")["git"]["syncing"] or {}).get("stage") == "fetch"
    finally:
        daemon.signal(signal.SIGKILL)
        syncing.join(30)
        hang.end()
    assert not syncing.is_alive() and first_code == [1]


# --- the rules one by one, through mmd.daemon.git.sync (no daemon) -----------------------------------------


def test_the_table_of_memory_paths() -> None:
    from mmd.daemon.git.layout import memory_kind

    kinds = {path: memory_kind(path) for path in (
        "MEMORY.md", "memories/deploy-region.md", "memories/a.b_c-d.md", "projects/api-3f2a1b9c/MEMORY.md",
        "projects/api-3f2a1b9c/memories/x.md", ".gitattributes", ".gitignore",
        "memories/sub/x.md", "memories/.x.md", "memories/x.txt", "projects/API-3f2a1b9c/MEMORY.md",
        "projects/api-3f2a1b9/MEMORY.md", "projects/api-3f2a1b9c/.mmd/revision", "memory.md", "MEMORY.md/x",
        "memories/a\nb.md", f"memories/{'a' * 65}.md", ".git/config", "sub/.gitignore")}
    assert {p: k for p, k in kinds.items() if k} == {
        "MEMORY.md": "index", "memories/deploy-region.md": "note", "memories/a.b_c-d.md": "note",
        "projects/api-3f2a1b9c/MEMORY.md": "index", "projects/api-3f2a1b9c/memories/x.md": "note",
        ".gitattributes": "git-file", ".gitignore": "git-file"}


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Path, Path]:
    """A victim root synced once with a bare ``origin``, and a forge cloned from it."""
    from tests.test_git_helpers import GitRoot

    isolate_git(monkeypatch, tmp_path)
    remote = bare_remote(tmp_path / "remote.git")
    victim = GitRoot(tmp_path / "victim", remote)
    victim.write("mine", "the victim's own note")
    from mmd.daemon.git import sync

    assert sync(victim.path).ok
    forge = tmp_path / "forge"
    subprocess.run(["git", "clone", "-q", str(remote), str(forge)], check=True)
    return victim, remote, forge


@pytest.mark.parametrize(("extra", "why"), [
    ({"vendor/lib": ("160000", "1" * 40)}, "'vendor/lib' is a submodule"),
    ({".gitattributes": ("100644", b"* filter=evil\n")}, "'.gitattributes' differs from the one mmd writes"),
    ({".gitignore": None}, "'.gitignore' would be removed"),
    ({"MEMORY.md": ("120000", b"/etc/passwd")}, "'MEMORY.md' is a symbolic link"),
    ({".GIT/hooks/post-merge": ("100755", b"#!/bin/sh\n")}, "'.GIT/hooks/post-merge' is executable"),
    ({".GIT/config": ("100644", b"[core]\n")}, "'.GIT/config' is inside .git"),
    ({"memories": ("120000", b"/tmp")}, "'memories' is a symbolic link"),
    ({"projects/API/MEMORY.md": ("100644", b"# MEMORY.md\n")}, "'projects/API/MEMORY.md' is not a memory file"),
])
def test_a_remote_commit_with_one_forbidden_path_is_refused_naming_it(
        roots: tuple[Any, Path, Path], extra: dict[str, Any], why: str) -> None:
    from mmd.daemon.git import sync

    victim, remote, forge = roots
    files: dict[str, tuple[str, str]] = tree_files(forge, "origin/main")
    for path, entry in extra.items():
        files = {p: e for p, e in files.items() if not p.startswith(f"{path}/")}  # a file in a folder's place
        if entry is None:
            files.pop(path)
        elif entry[0] == "160000":
            files[path] = entry
        else:
            files[path] = (entry[0], blob(forge, entry[1]))
    before = victim.files()
    commit = push_crafted(forge, remote, git(forge, "rev-parse", "origin/main"), files, "one forbidden path")
    result = sync(victim.path)
    assert result.refused is not None and result.refused.kind == "contain" and result.refused.commit == commit
    assert why in result.refused.reason and not result.pushed, result.refused.reason
    assert victim.files() == before and git(victim.path, "rev-parse", "HEAD") != commit


def test_a_remote_may_bring_mmds_own_gitignore_and_the_home_s_project_roots(roots: tuple[Any, Path, Path]) -> None:
    from mmd.daemon.git import sync
    from mmd.daemon.git.repo import ACCEPTED_FILES

    victim, remote, forge = roots
    (victim.path / ".gitignore").write_text((victim.path / ".gitignore").read_text() + "notes-of-mine/\n")
    victim.commit("external edit", [])  # this root's own .gitignore, differing from mmd's: never a remote's problem
    assert sync(victim.path).ok
    git(forge, "fetch", "-q", "origin")  # the teammate builds on it, and puts mmd's own back
    files = tree_files(forge, "origin/main")
    note = "# x\n\n> mm-id: local\n> mm-version: 1\n> mm-kind: note\n> mm-topic: x\n> mm-file: memories/x.md\n\nhi\n"
    files.update({".gitignore": ("100644", blob(forge, ACCEPTED_FILES[".gitignore"][0])),
                  "projects/api-3f2a1b9c/memories/x.md": ("100644", blob(forge, note.encode())),
                  "projects/api-3f2a1b9c/MEMORY.md": ("100644", blob(forge, b"# MEMORY.md\n"))})
    push_crafted(forge, remote, git(forge, "rev-parse", "origin/main"), files, "mmd's own files")
    result = sync(victim.path)
    assert result.ok and result.refused is None, result.error
    assert (victim.path / ".gitignore").read_bytes() in ACCEPTED_FILES[".gitignore"]
    written = victim.path / "projects" / "api-3f2a1b9c" / "memories" / "x.md"
    assert written.read_text() == note and oct(written.stat().st_mode & 0o777) == "0o600"
    assert oct((victim.path / "projects").stat().st_mode & 0o777) == "0o700"


def test_a_symlinked_folder_on_this_machine_is_never_written_through(roots: tuple[Any, Path, Path],
                                                                      tmp_path: Path) -> None:
    from mmd.daemon.git import sync

    victim, remote, forge = roots
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (victim.path / "projects").symlink_to(elsewhere)  # made here by hand: a remote can never make one
    files = tree_files(forge, "origin/main")
    files["projects/api-3f2a1b9c/MEMORY.md"] = ("100644", blob(forge, b"# MEMORY.md\n"))
    push_crafted(forge, remote, git(forge, "rev-parse", "origin/main"), files, "a project root")
    result = sync(victim.path)
    assert not result.ok and "a folder on its way is a symlink or a file" in result.error["message"]
    assert list(elsewhere.iterdir()) == []
