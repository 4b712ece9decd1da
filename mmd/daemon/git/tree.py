"""Git trees of a memory root: reading them, building new ones, and moving the root onto one.

Owns: listing a commit's files (``ls-tree``), reading blobs in one ``cat-file
--batch``, writing blobs and trees through a private temporary index (the
user's index is never used for it), creating commits with ``commit-tree``, the
author identity fallback, and :func:`checkout`, which moves the working files
and the branch onto a new commit the way mmd writes: each file replaced
atomically and durably (notes first, then MEMORY.md, then removals), so a
reader never sees a torn note or conflict markers. Checkout writes memory files
only (:func:`~.layout.memory_kind`), each opened by descriptor from folders
opened one by one without following a symlink (:mod:`mmd.core.rootfs`), as
regular files of mode 0600 (a replaced file keeps its mode) whatever mode the tree gives. Never does: merge
decisions (:mod:`.merge`), the checks of what a remote may write
(:mod:`.contain`), or anything over the network.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mmd.core.errors import ErrorCode, MMError
from mmd.core.rootfs import opened_folder, prepare_file, remove_in

from .layout import memory_kind
from .runner import Git

__all__ = ["TreeEntry", "blob_sizes", "checkout", "commit_tree", "hash_blob", "identity_env", "read_blobs",
           "read_tree", "write_tree"]


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One file of a git tree: its mode (``100644``, ``100755``, ``120000`` …) and blob id (hex)."""

    mode: str
    oid: str


def read_tree(git: Git, commit: str | None) -> dict[str, TreeEntry]:
    """Every file (and submodule) of ``commit``'s tree, ``{root-relative POSIX path: TreeEntry}``; ``{}`` for None.

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
        if kind in ("blob", "commit"):  # a file, a symlink, or a submodule (mode 160000, never written)
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


def blob_sizes(git: Git, oids: Iterable[str]) -> dict[str, int]:
    """The sizes of the blobs ``oids`` in bytes, without reading their contents (``cat-file --batch-check``):
    ``{oid: size}``, a missing object left out.

    Raises:
        GitError: if git fails.
    """
    wanted = sorted(set(oids))
    if not wanted:
        return {}
    data = git.run("cat-file", "--batch-check", input="".join(f"{o}\n" for o in wanted).encode()).stdout
    out: dict[str, int] = {}
    for line in data.decode().splitlines():
        oid, _, rest = line.partition(" ")
        kind, _, size = rest.partition(" ")
        if kind == "blob" and size.isdigit():
            out[oid] = int(size)
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


def _write_file(root: Path, rel: str, data: bytes) -> None:
    """Replace the memory file ``rel`` by ``data``, atomically and durably, through descriptors (no symlink
    below the root is followed; a missing folder is made 0700). Raises MMError(E_IO)."""
    parts = rel.split("/")
    try:
        with opened_folder(root, parts[:-1], create=True) as dfd:
            prepared = prepare_file(dfd, parts[-1], data)
            try:
                prepared.commit()
            finally:
                prepared.discard()
            os.fsync(dfd)
    except OSError as error:
        raise MMError(ErrorCode.E_IO, f"write {rel} failed: {_why(error)}", details=rel) from error


def _remove_file(root: Path, rel: str) -> None:
    """Remove the memory file ``rel`` (never a folder, never through a symlink). Raises MMError(E_IO)."""
    parts = rel.split("/")
    try:
        with opened_folder(root, parts[:-1]) as dfd:
            if remove_in(dfd, parts[-1]):
                os.fsync(dfd)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise MMError(ErrorCode.E_IO, f"delete {rel} failed: {_why(error)}", details=rel) from error


def _why(error: OSError) -> str:
    if error.errno in (errno.ELOOP, errno.ENOTDIR):
        return "a folder on its way is a symlink or a file (never followed)"
    return error.strerror or str(error)


def checkout(git: Git, old: Mapping[str, TreeEntry], new: Mapping[str, TreeEntry], commit: str,
             ref: str, old_commit: str | None) -> list[str]:
    """Move the working files, the index and ``ref`` from the tree ``old`` to ``commit`` (tree ``new``).

    Files are replaced atomically and durably: changed notes and other files first, then
    MEMORY.md, then the removed files (as a delete does: the index no longer names them).
    Every changed or removed path must be memory (:func:`~.layout.memory_kind`).
    The working files must hold ``old`` (the caller committed them first). ``ref`` moves only
    if it still points at ``old_commit`` (compare-and-swap), after the files are in place.

    Returns:
        The root-relative paths that changed, sorted.

    Raises:
        GitError: if git fails (the files may then already hold ``new``: the next commit records them).
        MMError(E_INVALID): if a path to change is not memory (nothing is written then).
        MMError(E_IO): if a file cannot be written, or its folder is reached through a symlink.
    """
    changed = sorted(p for p in new if old.get(p) != new[p])
    removed = sorted(p for p in old if p not in new)
    strays = [p for p in (*changed, *removed) if memory_kind(p) is None]
    if strays:  # :mod:`.contain` refused such a commit already: never write one, whatever the caller checked
        raise MMError(ErrorCode.E_INVALID, f"checkout of {commit[:12]} would change {strays[0]!r}, which is not "
                      "memory; nothing was written", details=strays[0])
    blobs = read_blobs(git, (new[p].oid for p in changed))
    ordered = sorted(changed, key=lambda p: memory_kind(p) == "index")  # notes (and the rest) first
    for rel in ordered:
        _write_file(git.root, rel, blobs[new[rel].oid])
    for rel in removed:
        _remove_file(git.root, rel)
    git.run("read-tree", commit)
    git.run("update-index", "-q", "--refresh", check=False)
    git.run("update-ref", "-m", "mmd sync", ref, commit, *([old_commit] if old_commit else []))
    return sorted([*changed, *removed])
