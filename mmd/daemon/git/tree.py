"""Git trees of a memory root: reading them, building new ones, and moving the root onto one.

Owns: listing a commit's files (``ls-tree``), reading blobs in one ``cat-file
--batch``, writing blobs and trees through a private temporary index (the
user's index is never used for it), creating commits with ``commit-tree``, the
author identity fallback, and :func:`checkout`, which moves the working files
and the branch onto a new commit the way mmd writes: each file replaced
atomically and durably (notes first, then MEMORY.md, then removals), so a
reader never sees a torn note or conflict markers. Never does: merge
decisions (:mod:`.merge`), or anything over the network.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mmd.core.durable import atomic_write, remove_durably
from mmd.core.paths import INDEX_NAME

from .runner import Git

__all__ = ["TreeEntry", "checkout", "commit_tree", "hash_blob", "identity_env", "read_blobs", "read_tree",
           "write_tree"]

_FILE_MODES = {"100644": 0o644, "100755": 0o755}


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One file of a git tree: its mode (``100644``, ``100755``, ``120000`` …) and blob id (hex)."""

    mode: str
    oid: str


def read_tree(git: Git, commit: str | None) -> dict[str, TreeEntry]:
    """Every file of ``commit``'s tree, ``{root-relative POSIX path: TreeEntry}``; ``{}`` for None.

    Raises:
        GitError: if ``commit`` is not a commit of the repository.
    """
    if commit is None:
        return {}
    out: dict[str, TreeEntry] = {}
    data = git.run("ls-tree", "-r", "-z", "--full-tree", commit).stdout
    for record in data.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid = meta.decode().split(" ")
        if kind == "blob":
            out[path.decode("utf-8", "surrogateescape")] = TreeEntry(mode, oid)
    return out


def read_blobs(git: Git, oids: Iterable[str]) -> dict[str, bytes]:
    """The contents of the blobs ``oids`` in one ``git cat-file --batch``: ``{oid: bytes}``.

    Raises:
        GitError: if git fails; a missing object is left out of the result.
    """
    wanted = sorted(set(oids))
    if not wanted:
        return {}
    data = git.run("cat-file", "--batch", input="".join(f"{o}\n" for o in wanted).encode()).stdout
    out: dict[str, bytes] = {}
    pos = 0
    for oid in wanted:
        end = data.index(b"\n", pos)
        header = data[pos:end].split(b" ")
        pos = end + 1
        if len(header) < 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        out[oid] = data[pos:pos + size]
        pos += size + 1
    return out


def hash_blob(git: Git, data: bytes) -> str:
    """Store ``data`` as a blob in the repository and return its id (hex). Raises GitError."""
    return git.run("hash-object", "-w", "--stdin", "--no-filters", input=data).stdout.decode().strip()


def write_tree(git: Git, files: Mapping[str, TreeEntry]) -> str:
    """Store a tree holding exactly ``files`` and return its id; uses a private temporary index.

    Raises:
        GitError: if git refuses an entry (a bad path or mode).
    """
    listing = "".join(f"{e.mode} {e.oid}\t{path}\0" for path, e in sorted(files.items()))
    with tempfile.TemporaryDirectory(prefix="mmd-git-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        git.run("update-index", "-z", "--index-info", input=listing.encode("utf-8", "surrogateescape"), env=env)
        return git.out("write-tree", env=env)


def identity_env(git: Git) -> dict[str, str]:
    """Author/committer variables for commits when the user configured no ``user.name``/``user.email``.

    The user's identity always wins; only a missing one is filled in (``mmd`` / ``mmd@localhost``),
    so a commit never fails with git's "Please tell me who you are".
    """
    env: dict[str, str] = {}
    if not git.config_get("user.name"):
        env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = "mmd"
    if not git.config_get("user.email"):
        env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = "mmd@localhost"
    return env


def commit_tree(git: Git, tree: str, parents: Iterable[str], message: str,
                env: Mapping[str, str] | None = None) -> str:
    """Create a commit of ``tree`` with ``parents`` and ``message``; returns its id. Raises GitError."""
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return git.run(*args, input=message.encode(), env=env).stdout.decode().strip()


def _write_file(root: Path, rel: str, entry: TreeEntry, data: bytes) -> None:
    path = root.joinpath(*rel.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    if entry.mode == "120000":
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(data.decode("utf-8", "surrogateescape"), path)
        return
    atomic_write(path, data, _FILE_MODES.get(entry.mode, 0o644))


def checkout(git: Git, old: Mapping[str, TreeEntry], new: Mapping[str, TreeEntry], commit: str,
             ref: str, old_commit: str | None) -> list[str]:
    """Move the working files, the index and ``ref`` from the tree ``old`` to ``commit`` (tree ``new``).

    Files are replaced atomically and durably: changed notes and other files first, then
    MEMORY.md, then the removed files (as a delete does: the index no longer names them).
    The working files must hold ``old`` (the caller committed them first). ``ref`` moves only
    if it still points at ``old_commit`` (compare-and-swap), after the files are in place.

    Returns:
        The root-relative paths that changed, sorted.

    Raises:
        GitError: if git fails (the files may then already hold ``new``: the next commit records them).
        MMError(E_IO): if a file cannot be written.
    """
    changed = sorted(p for p in new if old.get(p) != new[p])
    removed = sorted(p for p in old if p not in new)
    blobs = read_blobs(git, (new[p].oid for p in changed if new[p].mode != "160000"))
    ordered = [p for p in changed if p != INDEX_NAME] + [p for p in changed if p == INDEX_NAME]
    for rel in ordered:
        if new[rel].mode != "160000":
            _write_file(git.root, rel, new[rel], blobs[new[rel].oid])
    for rel in removed:
        path = git.root.joinpath(*rel.split("/"))
        if os.path.lexists(path) and not path.is_dir():
            remove_durably(path)
    git.run("read-tree", commit)
    git.run("update-index", "-q", "--refresh", check=False)
    git.run("update-ref", "-m", "mmd sync", ref, commit, *([old_commit] if old_commit else []))
    return sorted([*changed, *removed])
