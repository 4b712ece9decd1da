"""Helpers for the git engine tests: an isolated git configuration and memory roots that commit per write.

No test lives here; the test_git_* modules import these.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from mmd.core import Memory, MemoryOptions
from mmd.core.format import parse_index, parse_note, serialize_index, serialize_note
from mmd.daemon.git import GitHistory, ensure_repo


def isolate_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Point git at a private global config (identity, ``main`` as the first branch) and no system config."""
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Tester\n\temail = tester@example.com\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


def git(cwd: Path, *args: str) -> str:
    """``git <args>`` in ``cwd``; its stdout stripped (raises CalledProcessError on failure)."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def bare_remote(path: Path) -> Path:
    """A new bare repository at ``path``."""
    subprocess.run(["git", "init", "--quiet", "--bare", str(path)], check=True)
    return path


class GitRoot:
    """A memory root under git, written with ``mmd.core.Memory`` and committed after each write (a revision)."""

    def __init__(self, path: Path, remote: Path | str | None = None, **options: Any) -> None:
        self.path = path
        self.info = ensure_repo(path)
        self.memory = Memory.ensure(MemoryOptions.create(root=path, **options))
        self.history = GitHistory(path)
        self.revision = 0
        self.commit("init", [])
        if remote is not None:
            git(path, "remote", "add", "origin", str(remote))

    def commit(self, cause: str, topics: list[str]) -> str | None:
        self.revision += 1
        return self.history.commit(self.revision, cause, topics)

    def write(self, topic: str, body: str, *, updated: str | None = None, summary: str | None = None,
              tags: str | None = None) -> int:
        """Write and commit; returns the revision number."""
        outcome = self.memory.write(topic, body, updated=updated, summary=summary, tags=tags)
        assert outcome["ok"], outcome
        self.commit("write", [topic])
        return self.revision

    def delete(self, topic: str) -> int:
        self.memory.delete(topic)
        self.commit("delete", [topic])
        return self.revision

    def index_bytes(self) -> bytes:
        return (self.path / "MEMORY.md").read_bytes()

    def files(self) -> dict[str, bytes]:
        """MEMORY.md and every note, ``{relative path: bytes}``."""
        out = {"MEMORY.md": self.index_bytes()}
        out.update({f"memories/{p.name}": p.read_bytes() for p in sorted((self.path / "memories").glob("*.md"))})
        return out

    def assert_reads_clean(self) -> None:
        """The root reads under the reference's rules: MEMORY.md and every note re-serialize to their own
        bytes, no entry lacks its note, no note lacks its entry, and no conflict marker is anywhere."""
        text = self.index_bytes().decode()
        parsed = parse_index(text)
        o = self.memory.options
        assert serialize_index(parsed.entries, memory_id=o.memory_id, index_lines=o.index_lines,
                               index_bytes=o.index_bytes) == text
        for entry in parsed.entries:
            note = (self.path / entry.file).read_text(encoding="utf-8")
            assert serialize_note(topic=entry.topic, memory_id=o.memory_id, file=entry.file,
                                  body=parse_note(note).body) == note
        anomalies = Memory.open(o).budget()["anomalies"]
        assert anomalies["danglingEntries"] == 0 and anomalies["orphanFiles"] == [], anomalies
        assert not any(b"<<<<<<<" in data or b">>>>>>>" in data for data in self.files().values())

    def bodies(self) -> dict[str, str]:
        """``{topic: note body}`` as a fresh reader of the files sees them."""
        memory = Memory.open(MemoryOptions.create(root=self.path))
        return {note.topic: note.body for note in memory.list_notes()}


def tree_files(repo: Path, commit: str) -> dict[str, tuple[str, str]]:
    """``{path: (mode, blob id)}`` of ``commit``'s tree in ``repo``."""
    out = {}
    for record in git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).split("\0"):
        if record:
            meta, path = record.split("\t", 1)
            mode, _, oid = meta.split(" ")
            out[path] = (mode, oid)
    return out


def blob(repo: Path, data: bytes) -> str:
    """Store ``data`` as a blob of ``repo``; its id."""
    return subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data, capture_output=True,
                          check=True).stdout.decode().strip()


def crafted_tree(repo: Path, files: dict[str, tuple[str, str]]) -> str:
    """A tree of ``repo`` holding exactly ``files`` (``{path: (mode, blob id)}``), made with ``git mktree``, which
    takes any name (``..``, ``.git``) where ``git add`` would refuse it: what a hostile remote can push."""
    top: dict[str, tuple[str, str]] = {}
    below: dict[str, dict[str, tuple[str, str]]] = {}
    for path, entry in files.items():
        head, _, rest = path.partition("/")
        if rest:
            below.setdefault(head, {})[rest] = entry
        else:
            top[head] = entry
    for name, inner in below.items():
        top[name] = ("040000", crafted_tree(repo, inner))
    listing = "".join(f"{mode} {'tree' if mode == '040000' else 'commit' if mode == '160000' else 'blob'} {oid}\t{n}\n"
                      for n, (mode, oid) in sorted(top.items()))
    return subprocess.run(["git", "mktree"], cwd=repo, input=listing.encode(), capture_output=True,
                          check=True).stdout.decode().strip()


def push_crafted(repo: Path, remote: Path, parent: str, files: dict[str, tuple[str, str]], message: str,
                 *config: str) -> str:
    """Commit the tree of ``files`` on top of ``parent`` in ``repo`` and push it as ``main`` of ``remote``
    (``config``: ``-c`` options for the push); the new commit's id."""
    commit = subprocess.run(["git", "commit-tree", crafted_tree(repo, files), "-p", parent, "-m", message], cwd=repo,
                            capture_output=True, check=True).stdout.decode().strip()
    subprocess.run(["git", *config, "push", "-q", "-f", str(remote), f"{commit}:refs/heads/main"], cwd=repo, check=True)
    return commit


class Hang:
    """The hanging fetches of one test: ``origin``'s ssh command is ``sleep <seconds>``, its seconds (``600.<n>``)
    this test's alone, so its sleeps are told from every other process's. (A match of any ``sleep 600`` on the
    machine killed the process group of a hook sleeping 600 s in a test beside it: that test's git commit.)"""

    def __init__(self) -> None:
        self.seconds = f"600.{uuid.uuid4().int % 10**9:09d}"

    def sleeps(self) -> set[int]:
        """Pids of this test's hanging ssh commands (Linux: /proc)."""
        want, found = f"sleep\x00{self.seconds}\x00".encode(), set()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if (entry / "cmdline").read_bytes() == want:
                        found.add(int(entry.name))
                except OSError:
                    continue
        return found

    def end(self) -> None:
        """Kill the process groups of this test's hanging fetches (a SIGKILLed daemon leaves them)."""
        for pid in self.sleeps():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)


def hang_fetches(root: Path, url: str = "ssh://example.invalid/memory.git") -> Hang:
    """Give ``root`` the remote ``origin`` at ``url``, reached through an ssh command that never answers (a sleep
    of about 600 s); returns the :class:`Hang` that finds and ends its sleeps."""
    hang = Hang()
    git(root, "remote", "add", "origin", url)
    git(root, "config", "core.sshCommand", f"sleep {hang.seconds} #")
    return hang
